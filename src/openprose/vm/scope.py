"""Variable scopes.

Two kinds nest: a *frame* (the program, or one block call) holds the flat names — `let`,
`const`, `input`, `output`, named parallel branches — which stay visible after the `if`, loop
or `try` body that declared them; a *body* scope holds one iteration's loop, pipeline or
`catch as` variables, which end with the body (docs/decisions.md, OpenProse: checker, "Visibility")."""

from __future__ import annotations

from openprose.vm.values import Value

_MISSING = object()


class Scope:
    __slots__ = ("consts", "frame", "outputs", "parent", "vars")

    def __init__(self, parent: Scope | None = None, *, frame: bool = True) -> None:
        self.parent = parent
        self.frame = frame
        self.vars: dict[str, Value] = {}
        self.consts: set[str] = set()
        # names this frame bound with `output` (a reassignment then updates the output)
        self.outputs: set[str] | None = None

    def child(self) -> Scope:
        """A body scope for loop, pipeline or catch variables."""
        return Scope(self, frame=False)

    def declare(self, name: str, value: Value, *, const: bool = False) -> None:
        """Bind a flat name in the enclosing frame."""
        scope = self
        while not scope.frame and scope.parent is not None:
            scope = scope.parent
        scope.define(name, value, const=const)

    def declare_output(self, name: str, value: Value) -> None:
        """Bind an `output` name in the enclosing frame and remember that it is one."""
        scope = self
        while not scope.frame and scope.parent is not None:
            scope = scope.parent
        scope.define(name, value)
        if scope.outputs is None:
            scope.outputs = set()
        scope.outputs.add(name)

    def define(self, name: str, value: Value, *, const: bool = False) -> None:
        self.vars[name] = value
        if const:
            self.consts.add(name)
        else:
            self.consts.discard(name)

    def lookup(self, name: str) -> Value:
        scope: Scope | None = self
        while scope is not None:
            value = scope.vars.get(name, _MISSING)
            if value is not _MISSING:
                return value
            scope = scope.parent
        raise KeyError(name)

    def owner(self, name: str) -> Scope | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.vars:
                return scope
            scope = scope.parent
        return None

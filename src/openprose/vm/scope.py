"""Variable scopes. The language's namespace is flat, but loop, pipeline and block variables
live only in their body (the reference's scoping rules), so scopes still nest."""

from __future__ import annotations

from openprose.vm.values import Value

_MISSING = object()


class Scope:
    __slots__ = ("consts", "parent", "vars")

    def __init__(self, parent: Scope | None = None) -> None:
        self.parent = parent
        self.vars: dict[str, Value] = {}
        self.consts: set[str] = set()

    def child(self) -> Scope:
        return Scope(self)

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

"""Names: the flat variable namespace, the short-lived scoped names, and what each name is.

The reference wants every variable name unique in a program (E019, "flat namespace") yet lets
loop variables, pipeline variables, error variables and block parameters shadow outer ones with
only a warning. We resolve that by kind (docs/decisions.md, OpenProse: checker):

* *flat* names — ``let``, ``const``, ``input``, ``output``, parallel branch names and destructured
  names — are unique program-wide; they stay visible after the construct that declared them
  (except block-local ones, which end with their block).
* *scoped* names — loop/for/repeat index and item variables, ``item`` and reduce variables in
  pipelines, ``catch as err``, block parameters — live only in their body, are implicitly const
  and may shadow (warning).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from openprose.contracts import ProgramContract
from openprose.source import Span

FlatKind = Literal["let", "const", "input", "output", "branch"]
ScopedKind = Literal["loop", "pipeline", "error", "param"]
Kind = FlatKind | ScopedKind

_MUTABLE: frozenset[str] = frozenset({"let", "input", "output", "branch"})


@dataclass(frozen=True, eq=False, slots=True)
class Guard:
    """A body that may not run (an `if` branch, a loop body, a `try` body...): a name first
    bound inside it may be unbound once it has ended."""

    what: str
    line: int


@dataclass(slots=True)
class Var:
    name: str
    kind: Kind
    span: Span
    # Set when the value came from invoking an imported program: its contract (when known) lets
    # `result.field` and `{ a } = program(...)` be checked (E028).
    program: str | None = None
    contract: ProgramContract | None = None
    # The bodies that may not run around the declaration (outermost first).
    guards: tuple[Guard, ...] = ()

    @property
    def is_const(self) -> bool:
        return self.kind not in _MUTABLE


class Scope:
    """What is visible now, plus every flat name declared anywhere so far.

    Scoped bindings and block-local flat bindings are undone through logs of (name, previous
    binding) pairs, so entering and leaving a body costs only what it declared.
    """

    __slots__ = ("_block_undo", "_undo", "flat", "visible")

    def __init__(self) -> None:
        self.visible: dict[str, Var] = {}
        self.flat: dict[str, Var] = {}
        self._undo: list[list[tuple[str, Var | None]]] = []
        self._block_undo: list[list[tuple[str, Var | None]]] = []

    def lookup(self, name: str) -> Var | None:
        return self.visible.get(name)

    def declare_flat(self, var: Var) -> None:
        self.flat.setdefault(var.name, var)
        if self._block_undo:
            self._block_undo[-1].append((var.name, self.visible.get(var.name)))
        self.visible[var.name] = var

    def open(self) -> None:
        """Start a body whose scoped names (loop variables, parameters...) end with it."""
        self._undo.append([])

    def bind_scoped(self, var: Var) -> None:
        self._undo[-1].append((var.name, self.visible.get(var.name)))
        self.visible[var.name] = var

    def close(self) -> None:
        self._restore(self._undo.pop())

    def open_block(self) -> None:
        """Start a block definition: its parameters and its own flat names end with it."""
        self.open()
        self._block_undo.append([])

    def close_block(self) -> None:
        self._restore(self._block_undo.pop())
        self.close()

    def declared_in_this_block(self, name: str) -> bool:
        """Was ``name`` declared by the block definition being walked (not outside it)?"""
        return bool(self._block_undo) and any(n == name for n, _ in self._block_undo[-1])

    @property
    def in_block(self) -> bool:
        return bool(self._block_undo)

    def _restore(self, log: list[tuple[str, Var | None]]) -> None:
        visible = self.visible
        for name, previous in reversed(log):
            if previous is None:
                visible.pop(name, None)
            else:
                visible[name] = previous

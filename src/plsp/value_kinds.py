"""The kinds of value (string, number, reference) the instruction's *text* allows in each
place of the next block, for the guided grammar (`plsp.guided`).

A 135M model given a free value writes the nearest number where a string is due
(`$j: 79` for `@set:$j="disk full"`, `> $w, $d` for `@sig:>"ok",$w`: docs/decisions.md,
plsp34c). The runtime knows each slot's kind from what is written, without evaluating
anything: a literal's kind, a reference (and what the referenced name may hold), an old
value's kind when nothing writes the name. The kinds are always a superset of what the
reference engine's answer holds, so a right reply is never excluded; every value inside a
kind stays the model's, so wrong ones are admitted too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from plsp.instr import Delete, Directive, Fetch, If, Instruction, Opaque, Set, Update
from plsp.syntax import Ref, StateBlock, Str, Value

__all__ = ["ANY_KIND", "Kinds", "ValueKinds"]

Kind: TypeAlias = Literal["string", "number", "variable"]
Kinds: TypeAlias = frozenset[Kind]
ANY_KIND: Kinds = frozenset({"string", "number", "variable"})
_REFERENCE: Kinds = frozenset({"variable"})


@dataclass(frozen=True)
class _Write:
    """One directive's effect on a name: a value, a fetch (`value` None) or a deletion."""

    value: Value | None
    deletes: bool
    certain: bool  # outside an `@if` branch


def _writes(directives: tuple[Directive, ...], certain: bool) -> list[tuple[str, _Write]]:
    found: list[tuple[str, _Write]] = []
    for directive in directives:
        if isinstance(directive, Set | Update):
            found.append((directive.name, _Write(directive.value, False, certain)))
        elif isinstance(directive, Fetch):
            found.append((directive.dest, _Write(None, False, certain)))
        elif isinstance(directive, Delete):
            found.append((directive.name, _Write(None, True, certain)))
        elif isinstance(directive, If):
            found += _writes(directive.then + directive.otherwise, certain=False)
    return found


class ValueKinds:
    """Kinds per variable and per written value for one cycle."""

    def __init__(self, instruction: Instruction, previous: StateBlock) -> None:
        self._previous = previous
        # an unknown directive may have changed any value to anything
        self._open = any(isinstance(d, Opaque) for d in instruction.directives)
        self._writes: dict[str, list[_Write]] = {}
        for name, write in _writes(instruction.directives, certain=True):
            self._writes.setdefault(name, []).append(write)

    def of_name(self, name: str) -> Kinds:
        """What `$name` may hold in the next block: the kinds of its last certain write
        and of every write after it (an `@if` branch may or may not run)."""
        if self._open:
            return ANY_KIND
        kinds = self._old(name)
        for write in self._writes.get(name, []):
            if write.deletes:
                kinds = frozenset() if write.certain else kinds
            elif write.certain:
                kinds = self._of_write(write)
            else:
                kinds |= self._of_write(write)
        return kinds or ANY_KIND  # deleted: the grammar makes it optional anyway

    def of_value(self, value: Value) -> Kinds:
        """A value written in the instruction: its literal kind, or for a reference the
        reference itself or anything the referenced name may hold."""
        if self._open:
            return ANY_KIND
        return self._of_value(value, frozenset())

    def _of_write(self, write: _Write) -> Kinds:
        return ANY_KIND if write.value is None else self._of_value(write.value, frozenset())

    def _of_value(self, value: Value, seen: frozenset[str]) -> Kinds:
        if not isinstance(value, Ref):
            return frozenset({"string" if isinstance(value, Str) else "number"})
        return _REFERENCE | self._anywhere(value.name, seen)

    def _anywhere(self, name: str, seen: frozenset[str]) -> Kinds:
        """Every kind `$name` holds at any point of the cycle (a reference may be read
        before or after a write)."""
        if name in seen:  # a reference back to a name being read adds no kind of its own
            return frozenset()
        if name not in self._previous.variables and name not in self._writes:
            return ANY_KIND
        kinds = self._old(name)
        for write in self._writes.get(name, []):
            if write.value is None and not write.deletes:
                return ANY_KIND
            if write.value is not None:
                kinds |= self._of_value(write.value, seen | {name})
        return kinds

    def _old(self, name: str) -> Kinds:
        """The kind of the previous block's value (a reference resolved there)."""
        value = self._previous.variables.get(name)
        if value is None:
            return frozenset()
        if not isinstance(value, Ref):
            return self._of_value(value, frozenset())
        try:
            resolved = self._previous.resolve(value)
        except KeyError:
            return ANY_KIND
        return _REFERENCE | self._of_value(resolved, frozenset())

"""The deterministic reference engine: what the next state must look like.

It applies the directives it can decide without a model (`@set`, `@upd`, `@del`,
`@sig`, and `@if` on comparisons of known values) to the previous state, in order.
What it cannot decide (`@fetch`, undecidable `@if`, unknown directives) it leaves open,
so verification only checks what is certain.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from plsp.instr import (
    Condition,
    Delete,
    Directive,
    Fetch,
    If,
    Instruction,
    Opaque,
    Set,
    Signal,
    Update,
)
from plsp.syntax import Action, Assign, LiteralValue, Log, Num, Ref, StateBlock, Value

__all__ = ["ANY", "Expectation", "compare", "expect"]


class _Any:
    """Marks a variable whose next value the engine cannot know."""

    def __repr__(self) -> str:
        return "ANY"


ANY: Final = _Any()
Known = LiteralValue | _Any


@dataclass
class Expectation:
    """The expected next state, as far as it is determined."""

    variables: dict[str, Known] = field(default_factory=dict)
    required: list[Action | Log] = field(default_factory=list)
    allowed: list[Action | Log] = field(default_factory=list)
    maybe_removed: set[str] = field(default_factory=set)
    removed: set[str] = field(default_factory=set)
    open: bool = False
    """An unknown directive was present: it may have changed any value."""
    notes: list[str] = field(default_factory=list)
    """What the engine could not decide or found odd in the instruction itself."""
    causes: dict[str, str] = field(default_factory=dict)
    """The directive that last determined each variable, for violation messages."""

    def value_of(self, value: Value) -> Known:
        """A value as known in the expected state (refs followed)."""
        seen: set[str] = set()
        while isinstance(value, Ref):
            if value.name in seen or value.name not in self.variables:
                return ANY
            seen.add(value.name)
            known = self.variables[value.name]
            if isinstance(known, _Any):
                return ANY
            value = known
        return value

    def block(self) -> StateBlock | None:
        """The exact expected block when everything is determined, else None."""
        if self.open or self.allowed or self.maybe_removed:
            return None
        statements: list[Assign | Action | Log] = []
        for name, known in self.variables.items():
            if isinstance(known, _Any):
                return None
            statements.append(Assign(name, known))
        for command in self.required:
            params = command.params if isinstance(command, Action) else command.values
            if any(isinstance(self.value_of(p), _Any) for p in params):
                return None
            statements.append(command)
        return StateBlock(tuple(statements))


def compare(condition: Condition, left: Known, right: Known) -> bool | None:
    """Evaluate a comparison; None when it cannot be decided."""
    if isinstance(left, _Any) or isinstance(right, _Any):
        return None
    if condition.op in ("==", "!="):
        return (left == right) == (condition.op == "==")
    if not (isinstance(left, Num) and isinstance(right, Num)):
        return None  # strings and mixed types are only compared for equality
    a, b = left.value, right.value
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[condition.op]


def _assign(expectation: Expectation, name: str, value: Known, cause: str, certain: bool) -> None:
    """Record that `name` now holds `value`; in an undecided branch it may hold it, or
    keep what it had, or still be absent."""
    if certain:
        expectation.removed.discard(name)
        expectation.maybe_removed.discard(name)
    else:
        if name not in expectation.variables:
            expectation.maybe_removed.add(name)
        expectation.removed.discard(name)
        value = ANY
    expectation.variables[name] = value
    expectation.causes[name] = cause


def _apply(expectation: Expectation, directive: Directive, certain: bool) -> None:
    variables = expectation.variables
    if isinstance(directive, Set | Update):
        if isinstance(directive, Update) and directive.name not in variables:
            expectation.notes.append(f"@upd of ${directive.name}, which does not exist yet")
        _assign(
            expectation,
            directive.name,
            expectation.value_of(directive.value),
            directive.dumps(),
            certain,
        )
    elif isinstance(directive, Delete):
        if certain:
            variables.pop(directive.name, None)
            expectation.removed.add(directive.name)
        else:
            expectation.maybe_removed.add(directive.name)
    elif isinstance(directive, Fetch):
        _assign(expectation, directive.dest, ANY, directive.dumps(), certain)
    elif isinstance(directive, Signal):
        (expectation.required if certain else expectation.allowed).append(directive.command)
    elif isinstance(directive, If):
        outcome = (
            compare(
                directive.condition,
                expectation.value_of(directive.condition.left),
                expectation.value_of(directive.condition.right),
            )
            if certain
            else None
        )
        if outcome is None:
            expectation.notes.append(
                f"cannot decide {directive.condition.dumps()}"
                + _why_undecided(expectation, directive.condition)
            )
            for branch_directive in directive.then + directive.otherwise:
                _apply(expectation, branch_directive, certain=False)
        else:
            for branch_directive in directive.then if outcome else directive.otherwise:
                _apply(expectation, branch_directive, certain=True)
    elif isinstance(directive, Opaque):
        expectation.open = True  # it may have changed any value, but removes nothing
        for name in variables:
            variables[name] = ANY


def _why_undecided(expectation: Expectation, condition: Condition) -> str:
    for side in (condition.left, condition.right):
        if isinstance(side, Ref) and isinstance(expectation.value_of(side), _Any):
            if side.name not in expectation.variables:
                return f" (${side.name} is not in the state)"
            return f" (${side.name} is not known before the reply)"
    return f" ({condition.op} compares numbers only)"


def expect(previous: StateBlock, instruction: Instruction) -> Expectation:
    """Apply `instruction` to `previous` and return the expected next state."""
    expectation = Expectation()
    for name, value in previous.variables.items():
        try:
            expectation.variables[name] = previous.resolve(value)
        except KeyError:
            expectation.variables[name] = ANY
    for directive in instruction.directives:
        _apply(expectation, directive, certain=True)
    return expectation


def matches(expected: Known, actual: Known) -> bool:
    return isinstance(expected, _Any) or expected == actual


def describe(value: Known) -> str:
    return "anything" if isinstance(value, _Any) else value.dumps()

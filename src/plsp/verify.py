"""Verification of a model reply against the previous state and the instruction."""

from __future__ import annotations

from dataclasses import dataclass

from plsp.diagnostics import ParseError, Violation, line_and_column
from plsp.engine import ANY, Expectation, Known, describe, expect, matches
from plsp.instr import Instruction, Opaque
from plsp.syntax import Action, Log, StateBlock, extract, parse

__all__ = ["Verdict", "verify"]


@dataclass(frozen=True)
class Verdict:
    """The parsed next block (None when unreadable) and everything wrong with the reply."""

    block: StateBlock | None
    violations: tuple[Violation, ...]

    @property
    def blocking(self) -> tuple[Violation, ...]:
        return tuple(v for v in self.violations if v.blocking)

    @property
    def acceptable(self) -> bool:
        return self.block is not None and not self.blocking


def _shift(reply: str, start: int, line: int, column: int) -> tuple[int, int]:
    """Move a (line, column) inside the extracted block into reply coordinates."""
    start_line, start_column = line_and_column(reply, start)
    return start_line + line - 1, column + start_column - 1 if line == 1 else column


def _read(reply: str, strict: bool) -> tuple[StateBlock | None, list[Violation]]:
    extraction = extract(reply, strict=strict)
    if extraction is None:
        opened = reply.find("S{")
        if opened < 0:
            return None, [Violation("no_block", "the reply contains no S{...}S block", True)]
        line, column = line_and_column(reply, opened)
        return None, [
            Violation(
                "no_block",
                "the block opened here is never closed with }S (was the reply cut off?)",
                True,
                line,
                column,
            )
        ]
    violations = list(extraction.violations)
    try:
        block = parse(extraction.text)
    except ParseError as error:
        line, column = line_and_column(reply, extraction.start + error.offset)
        violations.append(Violation("malformed", error.message, True, line, column))
        return None, violations
    for warning in block.warnings:
        line, column = _shift(reply, extraction.start, warning.line, warning.column)
        violations.append(Violation("extended_identifier", warning.message, False, line, column))
    return block, violations


def _command_matches(
    expected: Action | Log, actual: Action | Log, expectation: Expectation, block: StateBlock
) -> bool:
    if type(expected) is not type(actual):
        return False
    if isinstance(expected, Action) and isinstance(actual, Action) and expected.name != actual.name:
        return False
    want = expected.params if isinstance(expected, Action) else expected.values
    got = actual.params if isinstance(actual, Action) else actual.values
    if len(want) != len(got):
        return False
    for expected_value, actual_value in zip(want, got, strict=True):
        try:
            resolved: Known = block.resolve(actual_value)
        except KeyError:
            resolved = ANY
        if not matches(expectation.value_of(expected_value), resolved):
            return False
    return True


def _check_commands(expectation: Expectation, block: StateBlock) -> list[Violation]:
    violations: list[Violation] = []
    unmatched: list[Action | Log] = list(block.actions) + list(block.logs)
    for wanted in expectation.required:
        found = next(
            (c for c in unmatched if _command_matches(wanted, c, expectation, block)), None
        )
        if found is None:
            violations.append(
                Violation(
                    "missing_signal", f"{wanted.dumps()} was signalled (@sig) but is missing", True
                )
            )
        else:
            unmatched.remove(found)
    for command in unmatched:
        if isinstance(command, Log) or expectation.open:
            continue  # logs are free data; unknown directives may ask for anything
        if any(
            _command_matches(allowed, command, expectation, block)
            for allowed in expectation.allowed
        ):
            continue
        violations.append(
            Violation(
                "unrequested_action",
                f"{command.dumps()} was not signalled by the instruction",
                True,
            )
        )
    return violations


def _check_variables(
    previous: StateBlock, expectation: Expectation, block: StateBlock
) -> list[Violation]:
    violations: list[Violation] = []
    actual = block.variables
    for name, value in actual.items():
        try:
            block.resolve(value)
        except KeyError as error:
            violations.append(Violation("undefined_reference", f"${name}: {error.args[0]}", True))
    for command in block.actions + block.logs:
        for param in command.params if isinstance(command, Action) else command.values:
            try:
                block.resolve(param)
            except KeyError as error:
                violations.append(
                    Violation("undefined_reference", f"{command.dumps()}: {error.args[0]}", True)
                )
    for name, expected in expectation.variables.items():
        if name not in actual:
            if name in expectation.maybe_removed:
                continue
            kind = "dropped_variable" if name in previous.variables else "missing_variable"
            violations.append(
                Violation(kind, f"${name} is missing (expected {describe(expected)})", True)
            )
            continue
        try:
            got: Known = block.resolve(actual[name])
        except KeyError:
            continue  # already reported as undefined_reference
        if not matches(expected, got):
            cause = expectation.causes.get(name)
            why = f"from {cause}" if cause else "changed without an instruction"
            violations.append(
                Violation(
                    "wrong_value",
                    f"${name} is {describe(got)}, expected {describe(expected)} ({why})",
                    True,
                )
            )
    for name in expectation.removed:
        if name in actual:
            violations.append(Violation("not_removed", f"${name} was removed by @del", True))
    if not expectation.open:
        for name in sorted(actual.keys() - expectation.variables.keys() - expectation.removed):
            violations.append(
                Violation("unexpected_variable", f"${name} is not set by any instruction", False)
            )
    return violations


def verify(
    previous: StateBlock, instruction: Instruction, reply: str, *, strict: bool = True
) -> Verdict:
    """Read the next block from `reply` and check it against the reference engine."""
    block, violations = _read(reply, strict)
    violations += [
        Violation("unknown_directive", f"{d.dumps()} was passed through unchecked", False)
        for d in instruction.directives
        if isinstance(d, Opaque)
    ]
    if block is None:
        return Verdict(None, tuple(violations))
    expectation = expect(previous, instruction)
    violations += [Violation("instruction_note", note, False) for note in expectation.notes]
    violations += _check_variables(previous, expectation, block)
    violations += _check_commands(expectation, block)
    return Verdict(block, tuple(violations))

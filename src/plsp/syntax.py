"""The `S{...}S` state block: values, statements, the exact parser and canonical form.

Grammar: docs/plsp-grammar.md. `parse` is strict (nothing but whitespace may surround
the block); `extract` is the separate, lenient step for model replies with chatter.
"""

from __future__ import annotations

import math
import re
import sys
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property

from plsp.diagnostics import ParseError, ParseWarning, Violation, line_and_column

__all__ = [
    "Action",
    "Assign",
    "Extraction",
    "Log",
    "Num",
    "Ref",
    "StateBlock",
    "Statement",
    "Str",
    "Value",
    "block_spans",
    "extract",
    "literal",
    "parse",
]

WHITESPACE = " \t\r\n"
_NUMBER = re.compile(r"[0-9]+(\.[0-9]+)?")
_IDENTIFIER = re.compile(r"[A-Za-z0-9]+")
_PREFERRED_IDENTIFIER = re.compile(r"[A-Za-z]")
_ACTION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A Markdown code fence line (```, ```plsp, ~~~): framing around a block, never content.
_FENCE_LINE = re.compile(r"^[ \t]*(?:`{3,}|~{3,})[\w.+-]*[ \t]*\r?$", re.MULTILINE)
_EXPONENT = re.compile(r"[eE][-+]?[0-9]+")
_WORDS = {"true": '"true" or 1', "false": '"false" or 0', "null": '""', "none": '""'}


@dataclass(frozen=True)
class Str:
    """A string literal: any characters but `"` (the format has no escapes)."""

    text: str

    def __post_init__(self) -> None:
        if '"' in self.text:
            raise ValueError('a PLSP string cannot contain a double quote (")')

    def python(self) -> str:
        return self.text

    def dumps(self) -> str:
        return f'"{self.text}"'


@dataclass(frozen=True)
class Num:
    """An unsigned number `digits[.digits]`, kept in canonical text (`007.50` -> `7.5`)."""

    text: str

    def __post_init__(self) -> None:
        if not _NUMBER.fullmatch(self.text):
            raise ValueError(f"not a PLSP number (digits[.digits]): {self.text!r}")
        whole, _, fraction = self.text.partition(".")
        whole = whole.lstrip("0") or "0"
        fraction = fraction.rstrip("0")
        object.__setattr__(self, "text", f"{whole}.{fraction}" if fraction else whole)

    @property
    def value(self) -> Decimal:
        return Decimal(self.text)

    @property
    def is_integer(self) -> bool:
        return "." not in self.text

    def python(self) -> int | float | str:
        """An int or float for logs, traces and action results; a number no JSON reader
        takes as such (beyond Python's int digit limit, or a float overflow) stays text."""
        if self.is_integer:
            limit = sys.get_int_max_str_digits()
            return int(self.text) if limit == 0 or len(self.text) <= limit else self.text
        number = float(self.text)
        return number if math.isfinite(number) else self.text

    def dumps(self) -> str:
        return self.text


def _plain(written: str) -> str:
    """How to write a number given with an exponent (`9e-1`), when that is short."""
    number = Decimal(written)
    if abs(number.adjusted()) > 30:
        return f"write {written} in plain digits"
    return f"write {written} as {Num(format(number, 'f')).text}"


@dataclass(frozen=True)
class Ref:
    """A reference to another variable of the same block: `$id`."""

    name: str

    def __post_init__(self) -> None:
        if not _IDENTIFIER.fullmatch(self.name):
            raise ValueError(f"not a PLSP identifier: {self.name!r}")

    def dumps(self) -> str:
        return f"${self.name}"


Value = Str | Num | Ref
LiteralValue = Str | Num


def literal(value: object) -> Value:
    """Convert a Python value (str, non-negative int/float/Decimal) or a Value to a Value."""
    if isinstance(value, Str | Num | Ref):
        return value
    if isinstance(value, bool):
        raise TypeError("PLSP has no booleans; use a number or a string")
    if isinstance(value, str):
        return Str(value)
    if isinstance(value, int | float | Decimal):
        text = format(Decimal(str(value)), "f")
        if text.startswith("-"):
            raise ValueError(f"PLSP numbers are unsigned: {value}; use a string")
        return Num(text)
    raise TypeError(f"cannot express {type(value).__name__} as a PLSP value")


@dataclass(frozen=True)
class Assign:
    """`$id:value` — stores a variable of the state."""

    name: str
    value: Value

    def __post_init__(self) -> None:
        Ref(self.name)  # validates the identifier

    def dumps(self) -> str:
        return f"${self.name}:{self.value.dumps()}"


@dataclass(frozen=True)
class Log:
    """`>v1,v2,...` — data for the middleware's log sink."""

    values: tuple[Value, ...]

    def __post_init__(self) -> None:
        if not self.values:
            raise ValueError("a log command needs at least one value")

    def dumps(self) -> str:
        return ">" + ",".join(value.dumps() for value in self.values)


@dataclass(frozen=True)
class Action:
    """`!name,p1,p2,...` — an action request for the middleware."""

    name: str
    params: tuple[Value, ...] = ()

    def __post_init__(self) -> None:
        if not _ACTION_NAME.fullmatch(self.name):
            raise ValueError(f"not an action name: {self.name!r}")

    def dumps(self) -> str:
        return "!" + self.name + "".join("," + param.dumps() for param in self.params)


Statement = Assign | Log | Action


@dataclass(frozen=True)
class StateBlock:
    """One `S{...}S` block: an ordered sequence of statements, each variable assigned once."""

    statements: tuple[Statement, ...] = ()
    warnings: tuple[ParseWarning, ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for statement in self.statements:
            if isinstance(statement, Assign):
                if statement.name in seen:
                    raise ValueError(f"${statement.name} is assigned twice")
                seen.add(statement.name)

    @cached_property
    def _variables(self) -> dict[str, Value]:
        return {s.name: s.value for s in self.statements if isinstance(s, Assign)}

    @property
    def variables(self) -> dict[str, Value]:
        """Assignments in block order, as written (references unresolved)."""
        return dict(self._variables)

    @property
    def logs(self) -> tuple[Log, ...]:
        return tuple(s for s in self.statements if isinstance(s, Log))

    @property
    def actions(self) -> tuple[Action, ...]:
        return tuple(s for s in self.statements if isinstance(s, Action))

    @cached_property
    def _resolved(self) -> dict[str, LiteralValue | str]:
        """Every variable's literal value, or why it has none; each chain is walked once,
        so resolving a whole block stays linear however references are chained."""
        variables = self._variables
        resolved: dict[str, LiteralValue | str] = {}
        for name in variables:
            path: list[str] = []
            on_path: set[str] = set()  # `path` as a set: membership stays O(1) on long chains
            value: Value = Ref(name)
            outcome: LiteralValue | str
            while True:
                if not isinstance(value, Ref):
                    outcome = value
                    break
                if value.name in resolved:
                    outcome = resolved[value.name]
                    break
                if value.name in on_path:
                    cycle = path[path.index(value.name) :] + [value.name]
                    outcome = f"circular reference {' -> '.join('$' + n for n in cycle)}"
                    break
                if value.name not in variables:
                    outcome = f"${value.name} is not defined"
                    break
                path.append(value.name)
                on_path.add(value.name)
                value = variables[value.name]
            for step in path:
                resolved[step] = outcome
        return resolved

    def resolve(self, value: Value) -> LiteralValue:
        """Follow `$ref` chains inside this block; KeyError says which variable is missing
        or which references go round in a circle."""
        if not isinstance(value, Ref):
            return value
        outcome = self._resolved.get(value.name, f"${value.name} is not defined")
        if isinstance(outcome, str):
            raise KeyError(outcome)
        return outcome

    def dumps(self) -> str:
        """The minimal canonical text: no whitespace, every statement ended by `;`."""
        return "S{" + "".join(s.dumps() + ";" for s in self.statements) + "}S"


class Scanner:
    """Character cursor with positioned errors, shared by the block and `INSTR:` parsers."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.warnings: list[ParseWarning] = []
        self._line_starts: list[int] | None = None

    def position(self, offset: int) -> tuple[int, int]:
        """1-based line and column of `offset`; the line index is built once, so many
        warnings in a long one-line block stay linear, not quadratic."""
        if self._line_starts is None:
            self._line_starts = [0] + [i + 1 for i, c in enumerate(self.text) if c == "\n"]
        line = bisect_right(self._line_starts, offset)
        return line, offset - self._line_starts[line - 1] + 1

    def at_end(self) -> bool:
        return self.pos >= len(self.text)

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def startswith(self, token: str) -> bool:
        return self.text.startswith(token, self.pos)

    def skip_whitespace(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in WHITESPACE:
            self.pos += 1

    def skip_framing(self) -> None:
        """Whitespace, a byte order mark and Markdown code fence lines (```plsp): what
        editors and chat tools put around a block or an instruction."""
        while True:
            self.skip_whitespace()
            if self.peek() == "\ufeff":
                self.pos += 1
                continue
            fence = _FENCE_LINE.match(self.text, self.pos)
            if fence is None or fence.start() != self.pos or fence.end() == self.pos:
                return
            self.pos = fence.end()

    def error(self, message: str, offset: int | None = None) -> ParseError:
        return ParseError(message, self.text, self.pos if offset is None else offset)

    def unexpected(self, expected: str) -> ParseError:
        found = self.peek()
        if found == "#":
            return self.error("comments (#) are not allowed")
        if found == "":
            return self.error(f"expected {expected}, found end of input")
        return self.error(f"expected {expected}, found {found!r}")

    def expect(self, token: str, expected: str | None = None) -> None:
        if not self.startswith(token):
            raise self.unexpected(expected or repr(token))
        self.pos += len(token)

    def warn(self, message: str, offset: int) -> None:
        line, column = self.position(offset)
        self.warnings.append(ParseWarning(message, line, column))

    def read_identifier(self) -> str:
        """`$` followed by [A-Za-z0-9]+; warns when it is not a single letter."""
        start = self.pos
        self.expect("$", "a variable ($name)")
        match = _IDENTIFIER.match(self.text, self.pos)
        if match is None:
            raise self.unexpected("a variable name after '$' (letters and digits)")
        self.pos = match.end()
        name = match.group()
        if not _PREFERRED_IDENTIFIER.fullmatch(name):
            self.warn(f"${name} is an extended identifier; prefer a single letter $a..$Z", start)
        return name

    def read_name(self, what: str) -> str:
        match = _ACTION_NAME.match(self.text, self.pos)
        if match is None:
            raise self.unexpected(what)
        self.pos = match.end()
        return match.group()

    def read_value(self) -> Value:
        char = self.peek()
        if char == '"':
            end = self.text.find('"', self.pos + 1)
            if end < 0:
                raise self.error("unterminated string (strings cannot contain '\"')")
            text = self.text[self.pos + 1 : end]
            self.pos = end + 1
            return Str(text)
        if char.isascii() and char.isdigit():
            start = self.pos
            while self.peek().isascii() and self.peek().isdigit():
                self.pos += 1
            if self.peek() == ".":
                self.pos += 1
                if not (self.peek().isascii() and self.peek().isdigit()):
                    raise self.unexpected("digits after the decimal point")
                while self.peek().isascii() and self.peek().isdigit():
                    self.pos += 1
            exponent = _EXPONENT.match(self.text, self.pos)
            if exponent is not None:
                written = self.text[start : exponent.end()]
                raise self.error(
                    f"numbers are digits[.digits], without an exponent: {_plain(written)}",
                    start,
                )
            return Num(self.text[start : self.pos])
        if char == "$":
            return Ref(self.read_identifier())
        if char == "-":
            raise self.error("numbers are unsigned; write a negative value as a string")
        word = _ACTION_NAME.match(self.text, self.pos)
        if word is not None and word.group().lower() in _WORDS:
            raise self.error(
                f"{word.group()} is not a PLSP value (values are strings, numbers and "
                f"$variables): write {_WORDS[word.group().lower()]}"
            )
        raise self.unexpected('a value ("string", number or $variable)')

    def read_values(self) -> tuple[Value, ...]:
        """`value {"," value}`, whitespace allowed around the commas."""
        values = [self.read_value()]
        while True:
            save = self.pos
            self.skip_whitespace()
            if self.peek() != ",":
                self.pos = save
                return tuple(values)
            self.pos += 1
            self.skip_whitespace()
            values.append(self.read_value())

    def read_statement(self) -> Statement:
        char = self.peek()
        if char == "$":
            name = self.read_identifier()
            self.skip_whitespace()
            self.expect(":", "':' after the variable")
            self.skip_whitespace()
            return Assign(name, self.read_value())
        if char == ">":
            self.pos += 1
            self.skip_whitespace()
            return Log(self.read_values())
        if char == "!":
            self.pos += 1
            self.skip_whitespace()
            name = self.read_name("an action name after '!'")
            save = self.pos
            self.skip_whitespace()
            if self.peek() != ",":
                self.pos = save
                return Action(name)
            self.pos += 1
            self.skip_whitespace()
            return Action(name, self.read_values())
        if char == ";":
            raise self.error("empty statement")
        raise self.unexpected("a statement ($var:value, >log or !action)")

    def read_block(self) -> StateBlock:
        self.expect("S{", "'S{'")
        statements: list[Statement] = []
        assigned: set[str] = set()
        while True:
            self.skip_whitespace()
            if self.startswith("}S"):
                break
            start = self.pos
            statement = self.read_statement()
            if isinstance(statement, Assign):
                if statement.name in assigned:
                    raise self.error(f"${statement.name} is assigned twice in one block", start)
                assigned.add(statement.name)
            statements.append(statement)
            self.skip_whitespace()
            if self.peek() == ";":
                self.pos += 1
            elif not self.startswith("}S"):
                raise self.unexpected("';' or '}S'")
        self.pos += 2
        return StateBlock(tuple(statements), tuple(self.warnings))


def parse(text: str) -> StateBlock:
    """Parse exactly one `S{...}S` block; only whitespace (and a Markdown code fence, or a
    byte order mark) may surround it."""
    scanner = Scanner(text)
    scanner.skip_framing()
    if not scanner.startswith("S{"):
        _refuse_text_before(scanner, text)
    block = scanner.read_block()
    scanner.skip_framing()
    if not scanner.at_end():
        raise scanner.unexpected("end of input after '}S'")
    return block


def _refuse_text_before(scanner: Scanner, text: str) -> None:
    """A block or an instruction after other text (a chat's `Assistant:`, a model's
    "Here is the state:") says where it starts, so the fix is plain."""
    for token, what in (("S{", "the block"), ("INSTR:", "an INSTR: line")):
        later = text.find(token, scanner.pos)
        if later > 0:
            line, column = scanner.position(later)
            found = scanner.unexpected("'S{'")
            raise scanner.error(
                f"{found.message}: text before {what}, which starts at line {line},"
                f" column {column}; pass it alone"
            )


@dataclass(frozen=True)
class Extraction:
    """Where the block sits in a reply, and what surrounded it."""

    text: str
    start: int
    end: int
    violations: tuple[Violation, ...]


def block_spans(reply: str) -> list[tuple[int, int]]:
    """Spans of `S{ ... }S` candidates, skipping `}S` that sit inside string literals.

    A `}S` at `q` closes the block opened at `s` when an even number of quotes lies
    between them; the `}S` positions are indexed by quote parity once, so each block is
    found by bisection and the whole search stays near-linear on any reply.
    """
    quotes = [i for i, char in enumerate(reply) if char == '"']
    ends: tuple[list[int], list[int]] = ([], [])
    every_end: list[int] = []
    for match in re.finditer(r"\}S", reply):
        ends[bisect_left(quotes, match.start()) % 2].append(match.start())
        every_end.append(match.start())
    spans: list[tuple[int, int]] = []
    search_from = 0
    while (start := reply.find("S{", search_from)) >= 0:
        parity = bisect_left(quotes, start + 2) % 2
        candidates = ends[parity]
        index = bisect_left(candidates, start + 2)
        if index == len(candidates):  # an unterminated string: cut at the first '}S'
            candidates = every_end  # so that parse can say so
            index = bisect_left(candidates, start + 2)
            if index == len(candidates):
                break
        end = candidates[index] + 2
        spans.append((start, end))
        search_from = end
    return spans


def _parses(text: str) -> bool:
    try:
        parse(text)
    except ParseError:
        return False
    return True


def extract(reply: str, *, strict: bool = True) -> Extraction | None:
    """Find the state block in a model reply (lenient); None when there is none.

    Text around the block becomes a `stray_text` violation (blocking when strict).
    With several blocks the answer is the last one that parses (models tend to echo the
    previous state before writing the next, or quote the format after it), else the last.
    """
    spans = block_spans(reply)
    if not spans:
        return None
    start, end = spans[-1]
    if len(spans) > 1:  # a lone block is parsed once, by the caller
        start, end = next(
            (span for span in reversed(spans) if _parses(reply[span[0] : span[1]])), spans[-1]
        )
    violations: list[Violation] = []
    if len(spans) > 1:
        line, column = line_and_column(reply, start)
        violations.append(
            Violation(
                "multiple_blocks",
                f"{len(spans)} blocks in the reply; using the one here",
                strict,
                line,
                column,
            )
        )
    for text, offset in ((reply[:start], 0), (reply[end:], end)):
        # A code fence around the block is framing: blanked, so offsets stay right.
        stray = _FENCE_LINE.sub(lambda fence: " " * len(fence.group()), text)
        if stray.strip():
            skipped = len(stray) - len(stray.lstrip())
            line, column = line_and_column(reply, offset + skipped)
            shown = stray.strip()
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            violations.append(
                Violation("stray_text", f"text outside the block: {shown!r}", strict, line, column)
            )
    return Extraction(reply[start:end], start, end, tuple(violations))

"""The Instruction Micro-Format (IMF): `INSTR:` directives, their builder and parser.

Known directives: `@set:$v=value`, `@upd:$v=value`, `@del:$v`, `@fetch:source,$dest`,
`@if:cond?then:else`, `@sig:!action,params` / `@sig:>values`. Any other `@name:body;` is
kept verbatim and passed through, with a warning. Grammar: docs/plsp-grammar.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from plsp.diagnostics import ParseError, ParseWarning
from plsp.syntax import Action, Log, Ref, Scanner, Str, Value, literal

__all__ = [
    "COMPARISONS",
    "Condition",
    "Delete",
    "Directive",
    "Fetch",
    "If",
    "Instruction",
    "Opaque",
    "Set",
    "Signal",
    "Update",
    "parse_condition",
    "parse_instr",
    "read_instr",
]

PREFIX = "INSTR:"
COMPARISONS = ("==", "!=", "<=", ">=", "<", ">")
_BARE_SOURCE = re.compile(r'[^\s,;"]+')


@dataclass(frozen=True)
class Set:
    """`@set:$name=value` — create or overwrite a variable."""

    name: str
    value: Value

    def __post_init__(self) -> None:
        Ref(self.name)

    def dumps(self) -> str:
        return f"@set:${self.name}={self.value.dumps()}"


@dataclass(frozen=True)
class Update:
    """`@upd:$name=value` — overwrite a variable that must already exist."""

    name: str
    value: Value

    def __post_init__(self) -> None:
        Ref(self.name)

    def dumps(self) -> str:
        return f"@upd:${self.name}={self.value.dumps()}"


@dataclass(frozen=True)
class Delete:
    """`@del:$name` — remove a variable from the state (our extension)."""

    name: str

    def __post_init__(self) -> None:
        Ref(self.name)

    def dumps(self) -> str:
        return f"@del:${self.name}"


@dataclass(frozen=True)
class Fetch:
    """`@fetch:source,$dest` — the model fetches `source` itself and stores it in `$dest`."""

    source: str
    dest: str

    def __post_init__(self) -> None:
        Ref(self.dest)
        if not self.source or '"' in self.source:
            raise ValueError("a fetch source must be non-empty and contain no '\"'")

    def dumps(self) -> str:
        source = self.source if _BARE_SOURCE.fullmatch(self.source) else f'"{self.source}"'
        return f"@fetch:{source},${self.dest}"


@dataclass(frozen=True)
class Signal:
    """`@sig:!action,...` or `@sig:>values` — the reply must contain this command."""

    command: Action | Log

    def dumps(self) -> str:
        return f"@sig:{self.command.dumps()}"


@dataclass(frozen=True)
class Condition:
    """`left op right` with op one of == != < <= > >=."""

    left: Value
    op: str
    right: Value

    def __post_init__(self) -> None:
        if self.op not in COMPARISONS:
            raise ValueError(f"unknown comparison {self.op!r}")

    def dumps(self) -> str:
        return f"{self.left.dumps()}{self.op}{self.right.dumps()}"


@dataclass(frozen=True)
class If:
    """`@if:cond?d1&d2:d3&d4` — branches are `&`-joined directives (no nested `@if`)."""

    condition: Condition
    then: tuple[Directive, ...]
    otherwise: tuple[Directive, ...] = ()

    def __post_init__(self) -> None:
        if not self.then:
            raise ValueError("@if needs at least one directive in its then-branch")
        for directive in self.then + self.otherwise:
            if isinstance(directive, If | Opaque):
                raise TypeError("@if branches hold only @set/@upd/@del/@fetch/@sig")

    def dumps(self) -> str:
        text = f"@if:{self.condition.dumps()}?" + "&".join(d.dumps() for d in self.then)
        if self.otherwise:
            text += ":" + "&".join(d.dumps() for d in self.otherwise)
        return text


@dataclass(frozen=True)
class Opaque:
    """A directive this middleware does not know: kept verbatim for the model."""

    name: str
    body: str | None = None

    def __post_init__(self) -> None:
        Action(self.name)  # same naming rule as actions
        if self.body is not None:
            scanner = Scanner(self.body)
            if _read_opaque_body(scanner) != self.body or not scanner.at_end():
                raise ValueError(
                    "an opaque directive body must be trimmed and hold no ';' outside a string"
                )

    def dumps(self) -> str:
        return f"@{self.name}" if self.body is None else f"@{self.name}:{self.body}"


Directive = Set | Update | Delete | Fetch | Signal | If | Opaque
KNOWN = ("set", "upd", "del", "fetch", "sig", "if")


@dataclass(frozen=True)
class Instruction:
    """An `INSTR:` line; the methods build a new instruction with one more directive."""

    directives: tuple[Directive, ...] = ()
    warnings: tuple[ParseWarning, ...] = field(default=(), compare=False, repr=False)

    def dumps(self) -> str:
        """Canonical text: `INSTR:` then every directive ended by `;`, no whitespace."""
        return PREFIX + "".join(d.dumps() + ";" for d in self.directives)

    def then(self, directive: Directive) -> Instruction:
        return Instruction(self.directives + (directive,))

    def set(self, name: str, value: object) -> Instruction:
        return self.then(Set(name, literal(value)))

    def upd(self, name: str, value: object) -> Instruction:
        return self.then(Update(name, literal(value)))

    def delete(self, name: str) -> Instruction:
        return self.then(Delete(name))

    def fetch(self, source: str, dest: str) -> Instruction:
        return self.then(Fetch(source, dest))

    def sig(self, action: str, *params: object) -> Instruction:
        return self.then(Signal(Action(action, tuple(literal(p) for p in params))))

    def log(self, *values: object) -> Instruction:
        return self.then(Signal(Log(tuple(literal(v) for v in values))))

    def when(
        self, condition: str | Condition, then: Instruction, otherwise: Instruction | None = None
    ) -> Instruction:
        if isinstance(condition, str):
            condition = parse_condition(condition)
        rest = otherwise.directives if otherwise else ()
        return self.then(If(condition, then.directives, rest))


def _read_condition(scanner: Scanner) -> Condition:
    left = scanner.read_value()
    scanner.skip_whitespace()
    op = next((op for op in COMPARISONS if scanner.startswith(op)), None)
    if op is None:
        raise scanner.unexpected("a comparison (== != < <= > >=)")
    scanner.pos += len(op)
    scanner.skip_whitespace()
    return Condition(left, op, scanner.read_value())


def _read_assignment(scanner: Scanner) -> tuple[str, Value]:
    name = scanner.read_identifier()
    scanner.skip_whitespace()
    scanner.expect("=", "'=' after the variable")
    scanner.skip_whitespace()
    return name, scanner.read_value()


def _read_source(scanner: Scanner) -> str:
    start = scanner.pos
    if scanner.peek() == '"':
        value = scanner.read_value()
        assert isinstance(value, Str)  # a '"' always starts a string
        source = value.text
    else:
        match = _BARE_SOURCE.match(scanner.text, scanner.pos)
        if match is None:
            raise scanner.unexpected("a fetch source")
        scanner.pos = match.end()
        source = match.group()
    if not source:
        raise scanner.error("empty fetch source", start)
    return source


def _read_opaque_body(scanner: Scanner) -> str:
    """Raw text up to the next `;` outside a string literal."""
    start = scanner.pos
    while not scanner.at_end() and scanner.peek() != ";":
        if scanner.peek() == '"':
            scanner.read_value()
        else:
            scanner.pos += 1
    return scanner.text[start : scanner.pos].strip()


def _read_branch(scanner: Scanner) -> tuple[Directive, ...]:
    directives = [_read_directive(scanner, in_branch=True)]
    while True:
        save = scanner.pos
        scanner.skip_whitespace()
        if scanner.peek() != "&":
            scanner.pos = save
            return tuple(directives)
        scanner.pos += 1
        scanner.skip_whitespace()
        directives.append(_read_directive(scanner, in_branch=True))


def _read_directive(scanner: Scanner, *, in_branch: bool = False) -> Directive:
    start = scanner.pos
    scanner.expect("@", "a directive (@name:...)")
    name = scanner.read_name("a directive name after '@'")
    if name not in KNOWN or (in_branch and name == "if"):
        if in_branch:
            raise scanner.error(f"@{name} cannot appear inside an @if branch", start)
        scanner.warn(f"unknown directive @{name} is passed through unchecked", start)
        scanner.skip_whitespace()
        if scanner.peek() != ":":
            return Opaque(name)
        scanner.pos += 1
        return Opaque(name, _read_opaque_body(scanner))
    scanner.skip_whitespace()
    scanner.expect(":", f"':' after @{name}")
    scanner.skip_whitespace()
    if name == "set":
        return Set(*_read_assignment(scanner))
    if name == "upd":
        return Update(*_read_assignment(scanner))
    if name == "del":
        return Delete(scanner.read_identifier())
    if name == "fetch":
        source = _read_source(scanner)
        scanner.skip_whitespace()
        scanner.expect(",", "',' after the fetch source")
        scanner.skip_whitespace()
        return Fetch(source, scanner.read_identifier())
    if name == "sig":
        if scanner.peek() not in ("!", ">"):
            raise scanner.unexpected("'!action' or '>values' after @sig:")
        command = scanner.read_statement()
        assert isinstance(command, Action | Log)
        return Signal(command)
    condition = _read_condition(scanner)
    scanner.skip_whitespace()
    scanner.expect("?", "'?' after the @if condition")
    scanner.skip_whitespace()
    then = _read_branch(scanner)
    save = scanner.pos
    scanner.skip_whitespace()
    if scanner.peek() != ":":
        scanner.pos = save
        return If(condition, then)
    scanner.pos += 1
    scanner.skip_whitespace()
    return If(condition, then, _read_branch(scanner))


def read_instr(
    scanner: Scanner, *, passthrough: bool = False, require_prefix: bool = True
) -> Instruction:
    """Read `INSTR:` and its directives, stopping before anything that is not a directive
    (so a prompt's instruction and state block can be read one after the other). Without
    ``require_prefix``, directives alone (`@set:$a=1;`, as the seed lists them) are read
    too."""
    scanner.skip_framing()
    if require_prefix or scanner.peek() != "@":
        written = scanner.text[scanner.pos : scanner.pos + len(PREFIX)]
        if written.upper() == PREFIX and written != PREFIX:
            raise scanner.error(f"the prefix is written '{PREFIX}' (uppercase)")
        scanner.expect(PREFIX, f"'{PREFIX}'")
    directives: list[Directive] = []
    while True:
        scanner.skip_whitespace()
        if scanner.peek() != "@":
            break
        directive = _passed_through(scanner) if passthrough else _read_directive(scanner)
        scanner.skip_whitespace()
        scanner.expect(";", "';' after the directive")
        directives.append(directive)
    return Instruction(tuple(directives), tuple(scanner.warnings))


def _passed_through(scanner: Scanner) -> Directive:
    """A directive, or — when a known name's body is not this middleware's form (the seed's
    illustrative `@upd:$t=val;`, `@if:cond? then:else;`) — the directive kept verbatim as an
    opaque one with a positioned warning: the seed leaves the IMF to each middleware."""
    start, warned = scanner.pos, len(scanner.warnings)
    try:
        return _read_directive(scanner)
    except ParseError as error:
        del scanner.warnings[warned:]  # the failed reading's own warnings do not apply
        scanner.pos = start + 1
        name = scanner.read_name("a directive name after '@'")
        scanner.skip_whitespace()
        if scanner.peek() != ":":
            raise
        scanner.pos += 1
        body = _read_opaque_body(scanner)
        scanner.warn(
            f"@{name} is not in this middleware's form ({error.message}): passed through "
            "verbatim, not applied",
            start,
        )
        return Opaque(name, body)


def parse_instr(
    text: str, *, passthrough: bool = False, require_prefix: bool = True
) -> Instruction:
    """Parse an `INSTR:` line: the prefix, then directives each ended by `;`. With
    ``passthrough`` a known directive that does not parse is kept verbatim with a warning
    (the seed's IMF is "not rigidly defined"); otherwise it is a positioned error. Without
    ``require_prefix`` the prefix may be left out. A code fence around it is framing."""
    scanner = Scanner(text)
    instruction = read_instr(scanner, passthrough=passthrough, require_prefix=require_prefix)
    scanner.skip_framing()
    if not scanner.at_end():
        raise scanner.unexpected("a directive (@name:...)")
    return instruction


def parse_condition(text: str) -> Condition:
    """Parse a bare condition such as `$t>80` (used by loop files)."""
    scanner = Scanner(text)
    scanner.skip_whitespace()
    condition = _read_condition(scanner)
    scanner.skip_whitespace()
    if not scanner.at_end():
        raise scanner.unexpected("end of the condition")
    return condition

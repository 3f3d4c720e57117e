"""Line-1 command grammar: `!<tag> [--modifier ...]`.

Only the first line of a user message is a command; later lines are content,
even when they contain bang tags.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from vpp.versions import ASSISTANT_TAGS, COUNT_DIGITS, USER_TAGS, Version, small_count

# 1.4: whitespace must separate the tag from what follows (`!<g>--minor` is not a
# command). 1.5 reads the tag and then tokens, so `!<g>--minor` is one and `!<q>x` has an
# invalid modifier.
_COMMAND = re.compile(r"^!<([a-z_]+)>(\s.*)?$")
_COMMAND_1_5 = re.compile(r"^!<([a-z_]+)>(.*)$")
_FLAG = re.compile(r"^--(correct|incorrect|minor|major)$")
_DESTINATION = re.compile(r"^--<([a-z_]+)>$")
_ASSUMPTIONS = re.compile(r"^--assumptions=(.*)$")
_BARE_DESTINATION = re.compile(r"^--(g|q|o|c|o_f|e|e_o)$")
_LINE_BREAK = re.compile(r"\r?\n")


@dataclass(frozen=True)
class Problem:
    """One precise finding: a stable code, a readable message and where it is."""

    code: str
    message: str
    column: int = 1
    example: str = "!<g>"


@dataclass(frozen=True)
class Command:
    """The parsed first line of a user message."""

    first_line: str
    version: Version
    tag: str | None
    modifiers: tuple[str, ...] = ()
    destination: str | None = None
    assumptions: int | None = None
    errors: tuple[Problem, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return self.tag is not None and not self.errors

    def has(self, modifier: str) -> bool:
        return modifier in self.modifiers

    @property
    def starts_pipeline(self) -> bool:
        """`!<o> --correct --<tag>` opens a new pipeline at `<tag>`."""
        return self.ok and self.tag == "o" and self.has("correct") and self.destination is not None

    @property
    def reply_tags(self) -> tuple[str, ...]:
        """Assistant tags allowed in reply, the preferred one first (the mirror rule)."""
        if not self.ok:
            return ("c",)
        if self.tag == "e":
            assert self.destination is not None
            return (self.destination,)
        if self.tag == "e_o":
            return ("o",)
        if self.starts_pipeline:
            assert self.destination is not None
            return (self.destination,)
        if self.tag == "o" and self.has("incorrect"):
            # 1.4 §III lets the assistant diagnose first or correct at once; 1.5 fixes <c>.
            return ("c", "o") if self.version == "1.4" else ("c",)
        if self.tag == "o_f" and self.has("incorrect"):
            return ("c",)
        assert self.tag is not None
        return (self.tag,)

    @property
    def reply_tag(self) -> str:
        return self.reply_tags[0]


def first_line(message: str) -> str:
    return _LINE_BREAK.split(message, maxsplit=1)[0]


def parse_command(message: str, version: Version = "1.4") -> Command:
    """Parse line 1 of `message` as a VPP command; later lines are ignored."""
    line = first_line(message)
    match = (_COMMAND_1_5 if version == "1.5" else _COMMAND).match(line)
    if match is None:
        return Command(line, version, None, errors=(_not_a_command(line, version),))
    raw_tag, rest = match.group(1), match.group(2) or ""
    tag = raw_tag if raw_tag in USER_TAGS else None
    parser = _ModifierParser(version, tag, offset=match.end(1) + 1)
    if tag is None:
        parser.problems.append(Problem("unknown-tag", f"Unknown user tag <{raw_tag}>.", 2))
    parser.read(rest)
    parser.check_combinations()
    return Command(
        first_line=line,
        version=version,
        tag=tag,
        modifiers=tuple(parser.modifiers),
        destination=parser.destinations[0] if parser.destinations else None,
        assumptions=parser.assumptions,
        errors=tuple(parser.problems),
    )


def _not_a_command(line: str, version: Version) -> Problem:
    message = "Line 1 must begin with a valid VPP command."
    if version == "1.5":  # 1.5 recovery bodies quote this message verbatim
        return Problem("invalid-first-line", message)
    if not line.strip():
        detail = "line 1 is empty"
    elif line[0].isspace() and line.lstrip().startswith("!<"):
        detail = "the command must start at column 1"
    elif not line.startswith("!"):
        detail = "it does not start with `!<tag>`"
    elif re.match(r"!<[a-z_]+>\S", line):
        detail = "a space must separate the tag from what follows it"
    else:
        detail = "expected `!<tag>` with a lowercase tag name"
    return Problem("invalid-first-line", f"{message[:-1]} ({detail}).")


class _ModifierParser:
    """Reads the modifier tokens after `!<tag>` and records what is wrong with them."""

    def __init__(self, version: Version, tag: str | None, offset: int) -> None:
        self.version = version
        self.tag = tag
        self.offset = offset
        self.modifiers: list[str] = []
        self.destinations: list[str] = []
        self.assumptions: int | None = None
        self.problems: list[Problem] = []

    def _problem(self, code: str, message: str, column: int, example: str) -> None:
        self.problems.append(Problem(code, message, column, example))

    def _tag_example(self, suffix: str, fallback: str) -> str:
        if not self.tag:
            return fallback
        command = f"!<{self.tag}>"
        if self.tag == "e" and self.version == "1.4":
            command += " --<g>"  # 1.5 bodies quote the reference runtime, which omits it
        return f"{command} {suffix}".rstrip()

    def read(self, rest: str) -> None:
        for token_match in re.finditer(r"\S+", rest):
            token = token_match.group()
            column = self.offset + token_match.start() + 1
            if not self._read_token(token, column):
                return

    def _read_token(self, token: str, column: int) -> bool:
        """Handle one token; False stops reading (the rest of the line is text)."""
        if flag := _FLAG.match(token):
            self._add_modifier(flag.group(1), column)
        elif destination := _DESTINATION.match(token):
            self._add_destination(destination.group(1), column)
        elif self.version == "1.4" and (count := _ASSUMPTIONS.match(token)):
            self._add_assumptions(count.group(1), token, column)
        elif self.version == "1.4" and (bare := _BARE_DESTINATION.match(token)):
            name = bare.group(1)
            self._problem(
                "unbracketed-pipeline",
                f"Pipeline destinations must be angle-bracketed: use --<{name}>, not {token}.",
                column,
                "!<o> --correct --<q>",
            )
        elif self.version == "1.4" and not token.startswith("--"):
            self._problem(
                "text-after-command",
                f"Line 1 must contain only the command; found text {token!r}. "
                "Put content on line 2.",
                column,
                self._tag_example("", "!<g>"),
            )
            return False
        else:
            self._problem(
                "invalid-modifier",
                f"Invalid modifier token {token}.",
                column,
                self._tag_example("--minor", "!<g> --minor"),
            )
        return True

    def _add_modifier(self, name: str, column: int) -> None:
        if name in self.modifiers:
            self._problem(
                "duplicate-modifier",
                f"Modifier --{name} may appear only once.",
                column,
                self._tag_example(f"--{name}", "!<g> --minor"),
            )
        else:
            self.modifiers.append(name)

    def _add_destination(self, name: str, column: int) -> None:
        if name not in ASSISTANT_TAGS:
            self._problem(
                "invalid-pipeline-destination",
                f"Pipeline destination <{name}> is not an assistant tag.",
                column,
                "!<e> --<g>",
            )
        elif name in self.destinations:
            self._problem(
                "duplicate-modifier",
                f"Pipeline destination --<{name}> may appear only once.",
                column,
                "!<e> --<g>",
            )
        else:
            self.destinations.append(name)

    def _add_assumptions(self, value: str, token: str, column: int) -> None:
        if len(value) > 2 and value[0] == value[-1] == '"':
            value = value[1:-1]  # the seed's BNF: value ::= quoted | unquoted
        if small_count(value) is None:
            self._problem(
                "invalid-modifier",
                f"Invalid modifier token {token[:40]} (--assumptions takes a non-negative "
                f"integer of at most {COUNT_DIGITS} digits).",
                column,
                self._tag_example("--assumptions=1", "!<o> --assumptions=1"),
            )
        elif self.assumptions is not None:
            self._problem(
                "duplicate-modifier",
                "Modifier --assumptions may appear only once.",
                column,
                self._tag_example(f"--assumptions={self.assumptions}", "!<o> --assumptions=1"),
            )
        else:
            self.assumptions = int(value)
            self.modifiers.append(f"assumptions={value}")

    def check_combinations(self) -> None:
        column = self.offset + 1
        if "correct" in self.modifiers and "incorrect" in self.modifiers:
            self._problem(
                "conflicting-correctness",
                "--correct and --incorrect are mutually exclusive.",
                column,
                self._tag_example("--incorrect", "!<c> --incorrect"),
            )
        if "minor" in self.modifiers and "major" in self.modifiers:
            self._problem(
                "conflicting-severity",
                "--minor and --major are mutually exclusive.",
                column,
                self._tag_example("--minor", "!<c> --minor"),
            )
        if len(self.destinations) > 1:
            self._problem(
                "multiple-pipeline-destinations",
                "Only one pipeline destination is allowed.",
                column,
                "!<e> --<g>",
            )
        if self.tag is None:
            return
        if self.tag == "e" and not self.destinations:
            self._problem(
                "missing-pipeline-destination",
                "!<e> requires exactly one assistant-tag destination.",
                column,
                "!<e> --<g>",
            )
        if not self.destinations or self.tag == "e":
            return
        if self.tag == "e_o":
            self._problem(
                "pipeline-not-allowed",
                "!<e_o> already targets <o> and cannot take a pipeline destination.",
                column,
                "!<e_o>",
            )
        elif not (self.tag == "o" and "correct" in self.modifiers):
            self._problem(
                "pipeline-not-allowed",
                "A pipeline destination is valid only with !<e> or !<o> --correct.",
                column,
                "!<o> --correct --<g>",
            )


def recovery_body(command: Command) -> str:
    """The one-line `<c>` reply to an invalid command: the error and a valid example."""
    problem = (
        command.errors[0]
        if command.errors
        else Problem("invalid-command", "The VPP command is invalid.")
    )
    return f"Invalid VPP command ({problem.code}): {problem.message} Example: {problem.example}"

"""GBNF grammars of the state block, for decoders that constrain a model's output to one.

Two grammars, both generated from the package's own definitions so they cannot drift:

* `state_block_grammar()` — any canonical block: numbers, identifiers and action names are
  translated from the scanner's regular expressions (`plsp.syntax`).
* `cycle_grammar(previous, instruction)` — the blocks the verifier accepts for one cycle:
  the reference engine's expectation (`plsp.engine.expect`, the same one `verify` checks
  against) written as a grammar. Every variable the state must hold, in order, with its
  value where the engine knows it and any literal where it cannot (`@fetch`, an undecided
  `@if`, an unknown directive); the commands `@sig` asks for; what an undecided branch may
  add as optional parts.

Both are the canonical form (`StateBlock.dumps()`: no whitespace outside strings, `;` after
every statement), a subset of the parser's language, with bounds that keep a small model
from running past its token budget inside a string, a number or a list of statements.
They have no recursion, so tests can turn them into regular expressions.
"""

from __future__ import annotations

import json
import re

from plsp import syntax
from plsp.engine import ANY, Expectation, Known, expect
from plsp.instr import Instruction
from plsp.syntax import Action, Log, Ref, StateBlock, Value

__all__ = ["cycle_grammar", "gbnf_literal", "regex_to_gbnf", "state_block_grammar"]

MAX_STATEMENTS = 24
MAX_VALUES = 8
MAX_STRING_CHARS = 80
MAX_DIGITS = 12
MAX_NAME_CHARS = 12
MAX_EXTRA_STATEMENTS = 8
_ID_CHARS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

_ATOM = re.compile(r"\\(.)|(\[[^\]]*\])|([()?*+])|(.)")


def regex_to_gbnf(pattern: str, *, max_repeat: int | None = None) -> str:
    """Translate the small regex subset the scanner's patterns use: literal characters,
    escapes, character classes, groups and the `?`, `*`, `+` quantifiers. With
    `max_repeat`, `+` and `*` become bounded repetitions of at most that many."""
    out: list[str] = []
    for escaped, char_class, operator, literal in _ATOM.findall(pattern):
        if char_class:
            out.append(char_class)
        elif operator == "(":
            out.append("(")
        elif operator == ")":
            out.append(")")
        elif operator and max_repeat is not None and operator in "+*":
            out[-1] += f"{{{1 if operator == '+' else 0},{max_repeat}}}"
        elif operator:
            out[-1] += operator
        else:
            out.append(json.dumps(escaped or literal))
    return " ".join(out)


def gbnf_literal(text: str) -> str:
    """`text` as a GBNF string literal: llama.cpp's escapes for the quote, the backslash,
    control characters and line separators; every other character as it is."""
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif char in "\n\r\t":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t"}[char])
        elif (
            ord(char) < 0x20
            or 0x7F <= ord(char) <= 0x9F
            or 0xD800 <= ord(char) <= 0xDFFF  # a lone surrogate: not encodable as UTF-8
            or char in "\u2028\u2029"
        ):
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def state_block_grammar(
    *,
    max_statements: int = MAX_STATEMENTS,
    max_values: int = MAX_VALUES,
    max_string_chars: int = MAX_STRING_CHARS,
) -> str:
    """GBNF for one canonical `S{...}S` block."""
    identifier = regex_to_gbnf(syntax._IDENTIFIER.pattern)
    number = regex_to_gbnf(syntax._NUMBER.pattern)
    name = regex_to_gbnf(syntax._ACTION_NAME.pattern)
    more_values = f'("," value){{0,{max_values - 1}}}'
    return "\n".join(
        [
            f'root ::= "S{{" (statement ";"){{0,{max_statements}}} "}}S"',
            "statement ::= assignment | log | action",
            'assignment ::= variable ":" value',
            f'log ::= ">" value {more_values}',
            f'action ::= "!" name {more_values}',
            "value ::= string | number | variable",
            f'variable ::= "$" {identifier}',
            f"name ::= {name}",
            f"number ::= {number}",
            f'string ::= "\\"" [^"]{{0,{max_string_chars}}} "\\""',
        ]
    )


def cycle_grammar(
    previous: StateBlock,
    instruction: Instruction,
    *,
    max_string_chars: int = MAX_STRING_CHARS,
    max_digits: int = MAX_DIGITS,
    max_extra: int = MAX_EXTRA_STATEMENTS,
) -> str:
    """GBNF for the next blocks `verify(previous, instruction, ...)` accepts: the
    reference engine's expectation, with the model free only where the engine cannot
    know the answer. Free values are literals (a reference could dangle)."""
    expectation = expect(previous, instruction)
    number = regex_to_gbnf(syntax._NUMBER.pattern, max_repeat=max_digits)
    rules = [
        f'root ::= "S{{" {_expected_statements(expectation, max_extra)} "}}S"',
        "value ::= string | number",
        f"number ::= {number}",
        f'string ::= "\\"" [^"]{{0,{max_string_chars}}} "\\""',
    ]
    if expectation.open:  # an unknown directive may have added variables or commands
        taken = set(expectation.variables) | expectation.removed
        name = regex_to_gbnf(syntax._ACTION_NAME.pattern, max_repeat=MAX_NAME_CHARS)
        more_values = f'("," value){{0,{MAX_VALUES - 1}}}'
        rules += [
            f'fresh ::= "$" {_identifier_outside(taken)} ":" value ";"',
            f'extra ::= (">" value {more_values} | "!" {name} {more_values}) ";"',
        ]
    return "\n".join(rules)


def _expected_statements(expectation: Expectation, max_extra: int) -> str:
    certain = {n for n in expectation.variables if n not in expectation.maybe_removed}
    parts: list[str] = []
    for name, known in expectation.variables.items():
        part = f'{gbnf_literal(f"${name}:")} {_known(known)} ";"'
        parts.append(f"({part})?" if name in expectation.maybe_removed else part)
    for command in expectation.required:
        parts.append(f'{_command(command, expectation, certain)} ";"')
    for command in expectation.allowed:  # an undecided branch: the model says if it ran
        parts.append(f'({_command(command, expectation, certain)} ";")?')
    if expectation.open:  # one new variable: a grammar without context cannot keep two apart
        parts.append(f"fresh? extra{{0,{max_extra}}}")
    return " ".join(parts) or '""'


def _known(known: Known) -> str:
    return "value" if known is ANY else gbnf_literal(known.dumps())  # type: ignore[union-attr]


def _command(command: Action | Log, expectation: Expectation, certain: set[str]) -> str:
    head, params = (
        (f"!{command.name}", command.params)
        if isinstance(command, Action)
        else (">", command.values)
    )
    parts = [gbnf_literal(head)]
    for index, param in enumerate(params):
        if index or isinstance(command, Action):
            parts.append('","')
        parts.append(_param(param, expectation, certain))
    return " ".join(parts)


def _param(param: Value, expectation: Expectation, certain: set[str]) -> str:
    """A reference to a variable the block surely holds stays a reference (it resolves to
    what the instruction meant); otherwise the value the engine knows, or any literal."""
    if isinstance(param, Ref) and param.name in certain:
        return gbnf_literal(param.dumps())
    return _known(expectation.value_of(param))


def _identifier_outside(taken: set[str]) -> str:
    """An identifier that is none of `taken`: a trie of the taken names, where each step
    may leave it (a character no taken name continues with) or end where no name ends."""

    def node(prefix: str) -> str:
        following = sorted({t[len(prefix)] for t in taken if t.startswith(prefix) and t != prefix})
        leave = [c for c in _ID_CHARS if c not in following]
        options = [f'"{c}" {node(prefix + c)}' for c in following]
        if leave:
            options.append(f"{_char_class(leave)} {_char_class(_ID_CHARS)}{{0,{MAX_NAME_CHARS}}}")
        if not options:
            return '""'
        body = "(" + " | ".join(options) + ")"
        return body + "?" if prefix and prefix not in taken else body

    return node("")


def _char_class(chars: str | list[str]) -> str:
    """A character class of ASCII letters and digits, written with ranges."""
    codes = sorted(ord(c) for c in chars)
    runs: list[list[int]] = []
    for code in codes:
        if runs and code == runs[-1][1] + 1:
            runs[-1][1] = code
        else:
            runs.append([code, code])
    return (
        "["
        + "".join(
            chr(a) if a == b else f"{chr(a)}{chr(b)}" if b == a + 1 else f"{chr(a)}-{chr(b)}"
            for a, b in runs
        )
        + "]"
    )

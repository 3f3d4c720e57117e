"""A GBNF grammar of the state block, for decoders that constrain a model's output to one.

Generated from the parser's own token patterns (`plsp.syntax`): numbers, identifiers and
action names are translated from the same regular expressions the scanner uses, so the
grammar cannot drift from what `parse` accepts. The block is the canonical form
(`StateBlock.dumps()`: no whitespace outside strings, `;` after every statement), a subset
of the parser's language, with bounds that keep a small model from running past its token
budget inside a string or a list of statements.
"""

from __future__ import annotations

import json
import re

from plsp import syntax

__all__ = ["regex_to_gbnf", "state_block_grammar"]

MAX_STATEMENTS = 24
MAX_VALUES = 8
MAX_STRING_CHARS = 80

_ATOM = re.compile(r"\\(.)|(\[[^\]]*\])|([()?*+])|(.)")


def regex_to_gbnf(pattern: str) -> str:
    """Translate the small regex subset the scanner's patterns use: literal characters,
    escapes, character classes, groups and the `?`, `*`, `+` quantifiers."""
    out: list[str] = []
    for escaped, char_class, operator, literal in _ATOM.findall(pattern):
        if char_class:
            out.append(char_class)
        elif operator == "(":
            out.append("(")
        elif operator == ")":
            out.append(")")
        elif operator:
            out[-1] += operator
        else:
            out.append(json.dumps(escaped or literal))
    return " ".join(out)


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

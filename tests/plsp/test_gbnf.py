"""The GBNF grammar of the state block agrees with the parser, both ways.

The grammar has no recursion, so the test turns it into a Python regular expression and
checks that (1) every text the grammar admits parses, and (2) every canonical block within
the grammar's bounds is admitted."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openprose.providers import ModelRequest, local_model_installed
from plsp.diagnostics import ParseError
from plsp.gbnf import regex_to_gbnf, state_block_grammar
from plsp.syntax import parse
from tests.plsp.strategies import blocks

_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|\[[^\]]*\]|\{\d+,\d+\}|[()|?*+]|[a-z_]+|\s+')


def gbnf_to_regex(grammar: str) -> str:
    rules = dict(line.split(" ::= ", 1) for line in grammar.splitlines())

    def expand(body: str) -> str:
        out = []
        for token in _TOKEN.findall(body):
            if token.isspace():
                continue
            if token.startswith('"'):
                out.append(re.escape(json.loads(token)))
            elif token in rules:
                out.append(f"(?:{expand(rules[token])})")
            elif token == "(":
                out.append("(?:")
            else:
                out.append(token)
        return "".join(out)

    return expand(rules["root"])


GRAMMAR = state_block_grammar()
LANGUAGE = re.compile(gbnf_to_regex(GRAMMAR), re.DOTALL)


def test_the_scanners_patterns_translate_exactly() -> None:
    assert regex_to_gbnf(r"[0-9]+(\.[0-9]+)?") == '[0-9]+ ( "." [0-9]+ )?'
    assert regex_to_gbnf(r"[A-Za-z_][A-Za-z0-9_]*") == "[A-Za-z_] [A-Za-z0-9_]*"
    assert 'variable ::= "$" [A-Za-z0-9]+' in GRAMMAR


@settings(max_examples=300, deadline=None)
@given(st.from_regex(LANGUAGE, fullmatch=True))
def test_everything_the_grammar_admits_parses(text: str) -> None:
    try:
        parse(text)
    except ParseError as error:  # a repeated variable is the one rule a grammar cannot state
        assert "assigned twice" in error.message, (text, error)


@settings(max_examples=300, deadline=None)
@given(blocks())
def test_every_canonical_block_is_admitted(block: object) -> None:
    text = block.dumps()  # type: ignore[attr-defined]
    if any(len(s) > 82 for s in re.findall(r'"[^"]*"', text)):
        return  # beyond the grammar's string bound
    assert LANGUAGE.fullmatch(text), text


def test_requests_carry_the_grammar_but_replay_keys_ignore_it() -> None:
    plain = ModelRequest(model="m", messages=())
    constrained = ModelRequest(model="m", messages=(), grammar=GRAMMAR)
    assert ModelRequest.from_dict(constrained.to_dict()) == constrained
    assert "grammar" not in plain.to_dict() and plain.key() == constrained.key()


@pytest.mark.skipif(not local_model_installed(), reason="needs the [local] extra")
async def test_the_embedded_model_always_answers_a_block_that_parses() -> None:
    from openprose.providers.base import Message
    from openprose.providers.local import LocalProvider
    from plsp.middleware import SYSTEM_PROMPT

    provider = LocalProvider()
    for prompt in ("INSTR:@set:$a=1;\nS{}S", 'INSTR:@sig:!wait,200;\nS{$u:"op";}S'):
        request = ModelRequest(
            model="local",
            messages=(Message("user", prompt),),
            system=SYSTEM_PROMPT,
            max_tokens=200,
            temperature=0.0,
            grammar=GRAMMAR,
        )
        parse((await provider.complete(request)).text)

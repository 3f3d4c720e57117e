"""The GBNF grammars agree with the parser and the verifier.

The grammars have no recursion, so the tests turn them into Python regular expressions and
check that (1) every text the block grammar admits parses, and every canonical block within
its bounds is admitted; (2) every text a cycle's grammar admits is a reply the verifier
accepts for that cycle, and the reference engine's exact answer is admitted. Where the
`[local]` extra is installed, llama.cpp's own parser reads every grammar too."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from openprose.providers import ModelRequest, local_model_installed
from plsp.diagnostics import ParseError
from plsp.engine import expect
from plsp.gbnf import cycle_grammar, gbnf_literal, regex_to_gbnf, state_block_grammar
from plsp.instr import Instruction, parse_instr
from plsp.syntax import StateBlock, parse
from plsp.verify import verify
from tests.plsp.strategies import blocks, instructions

_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|\[[^\]]*\]|\{\d+,\d+\}|[()|?*+]|[a-z_][a-z0-9_-]*|\s+')


def gbnf_to_regex(grammar: str) -> str:
    rules = dict(line.split(" ::= ", 1) for line in grammar.split("\n"))

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


# -- the grammar of one cycle ------------------------------------------------------------

SEED_CYCLE = (
    'INSTR:@upd:$l=$t;@set:$t=82;@if:$t>80?@sig:!page,$u,"hot":@sig:!wait,1000;',
    'S{$u:"op";$t:75;$l:70;}S',
)


def cycle_language(previous: StateBlock, instruction: Instruction) -> re.Pattern[str]:
    return re.compile(gbnf_to_regex(cycle_grammar(previous, instruction)), re.DOTALL)


def structure(grammar: str) -> dict[str, set[str]]:
    """Each rule and the rules it names; fails on a token GBNF does not have."""
    rules: dict[str, set[str]] = {}
    for line in grammar.split("\n"):
        assert line.splitlines() == [line], f"a line break inside a rule: {line!r}"
        name, body = line.split(" ::= ", 1)
        assert re.fullmatch(r"[a-z][a-z0-9-]*", name) and name not in rules, line
        rest = _TOKEN.sub("", body)
        assert not rest.strip(), f"not GBNF: {rest!r} in {line}"
        rules[name] = {t for t in _TOKEN.findall(body) if re.fullmatch(r"[a-z_][a-z0-9_-]*", t)}
    return rules


def test_the_seed_cycle_admits_exactly_its_answer() -> None:
    instruction, previous = parse_instr(SEED_CYCLE[0]), parse(SEED_CYCLE[1])
    language = cycle_language(previous, instruction)
    assert language.fullmatch('S{$u:"op";$t:82;$l:75;!page,$u,"hot";}S')
    for wrong in (
        'S{$u:"op";$t:75;$l:75;!page,$u,"hot";}S',  # ignored @set
        'S{$u:"op";$t:82;!page,$u,"hot";}S',  # dropped $l
        'S{$u:"op";$t:82;$l:75;}S',  # missing signal
        'S{$u:"op";$t:82;$l:75;!page,$u,"hot";!wait,1000;}S',  # the other branch too
        'S{$u:"op";$t:82;$l:75;!page,$u,"hot";}S and done',  # chatter
    ):
        assert not language.fullmatch(wrong), wrong
        assert not verify(previous, instruction, wrong).acceptable, wrong
    # Accepted by the verifier, but not the canonical form the grammar writes.
    assert not language.fullmatch('S{ $u:"op";$t:82;$l:75;!page,$u,"hot"}S')


def test_what_the_engine_cannot_know_is_left_to_the_model() -> None:
    instruction = parse_instr("INSTR:@fetch:sensor,$d;@if:$d>3?@sig:!go&@del:$u:@set:$q=1;")
    previous = parse('S{$u:"a\nb\\";}S')
    language = cycle_language(previous, instruction)
    for reply in (
        'S{$u:"a\nb\\";$d:7;!go;}S',  # then-branch
        "S{$d:1;$q:1;}S",  # else-branch, $u removed
        'S{$d:"text";}S',
        'S{$u:"a\nb\\";$d:2.5;$q:"x";}S',
    ):
        assert language.fullmatch(reply), reply
        assert verify(previous, instruction, reply).acceptable, reply
    assert not language.fullmatch('S{$u:"changed";$d:7;}S')  # $u is known
    assert not language.fullmatch("S{$u:$d;$d:7;}S")  # free values are literals
    assert not language.fullmatch("S{$d:" + "9" * 13 + ";}S")  # numbers are bounded


def test_an_unknown_directive_lets_the_model_add_but_never_repeat_a_name() -> None:
    instruction, previous = parse_instr("INSTR:@calc:$c=$a*2;"), parse("S{$a:1;$ab:2;}S")
    language = cycle_language(previous, instruction)
    for reply in ("S{$a:1;$ab:2;$c:2;}S", "S{$a:1;$ab:2;$abc:2;!beep;>1,2;}S", "S{$a:5;$ab:2;}S"):
        assert language.fullmatch(reply), reply
        assert verify(previous, instruction, reply).acceptable, reply
    for repeated in ("S{$a:1;$ab:2;$a:2;}S", "S{$a:1;$ab:2;$ab:2;}S", "S{$a:1;$ab:2;$c:1;$c:2;}S"):
        assert not language.fullmatch(repeated), repeated
    assert language.fullmatch("S{$a:1;$ab:2;" + "!go;" * 8 + "}S")
    assert not language.fullmatch("S{$a:1;$ab:2;" + "!go;" * 9 + "}S")  # bounded


def test_literals_escape_what_gbnf_needs() -> None:
    assert gbnf_literal('$m:"a\\b\n\t\x01é"') == '"$m:\\"a\\\\b\\n\\t\\u0001é\\""'
    assert json.loads(gbnf_literal('x"\x7f')) == 'x"\x7f'


@settings(max_examples=200, deadline=None)
@given(blocks(), instructions)
def test_every_cycle_grammar_is_well_formed_and_free_of_recursion(
    previous: StateBlock, instruction: Instruction
) -> None:
    rules = structure(cycle_grammar(previous, instruction))
    assert "root" in rules
    for name, used in rules.items():
        assert used <= rules.keys(), (name, used - rules.keys())
    seen: set[str] = set()

    def walk(name: str, path: tuple[str, ...]) -> None:
        assert name not in path, f"recursion through {path + (name,)}"
        seen.add(name)
        for used in rules[name]:
            walk(used, path + (name,))

    walk("root", ())


@settings(max_examples=300, deadline=None)
@given(blocks(), instructions, st.data())
def test_everything_a_cycle_grammar_admits_is_accepted(
    previous: StateBlock, instruction: Instruction, data: st.DataObject
) -> None:
    language = cycle_language(previous, instruction)
    assume(not re.search("[\ud800-\udfff]", language.pattern))  # no reply can hold one
    reply = data.draw(st.from_regex(language, fullmatch=True), label="reply")
    verdict = verify(previous, instruction, reply)
    assert verdict.acceptable, [str(v) for v in verdict.blocking]


@settings(max_examples=300, deadline=None)
@given(blocks(), instructions)
def test_the_engines_exact_answer_is_admitted(
    previous: StateBlock, instruction: Instruction
) -> None:
    exact = expect(previous, instruction).block()
    if exact is None:
        return  # something is left to the model; covered above
    assert cycle_language(previous, instruction).fullmatch(exact.dumps()), exact.dumps()


@pytest.mark.skipif(not local_model_installed(), reason="needs the [local] extra (llama.cpp)")
@settings(max_examples=60, deadline=None)
@given(blocks(), instructions)
def test_llama_cpp_parses_every_cycle_grammar(
    previous: StateBlock, instruction: Instruction
) -> None:
    from openprose.providers.local import grammar_parses

    assert grammar_parses(cycle_grammar(previous, instruction))
    assert grammar_parses(GRAMMAR)

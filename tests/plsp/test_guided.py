"""The guided request: its grammar fixes what the instruction's text names and leaves every
value to the model, so a right answer and wrong ones are both admitted; its prompt lays
the cycle out for copying; the provider sends both, a re-ask's violations included."""

from __future__ import annotations

import re

import pytest
from hypothesis import assume, example, given, settings

from openprose.providers import Message, ModelRequest, ModelResponse, local_model_installed
from plsp.engine import compare, expect
from plsp.guided import (
    GUIDED_SYSTEM,
    decisions,
    effective,
    guided_grammar,
    guided_prompt,
    without_decisions,
)
from plsp.instr import If, Instruction, parse_instr
from plsp.middleware import build_prompt
from plsp.providers import _guided, provider_model
from plsp.syntax import Action, Assign, Log, Num, StateBlock, Value, parse
from plsp.verify import verify
from tests.plsp.strategies import blocks, instructions
from tests.plsp.test_gbnf import gbnf_to_regex, structure

CYCLE = (
    'INSTR:@if:$e>51?@sig:!page,$e,"idle":@sig:!wait,300;@del:$e;@upd:$u=80;@set:$k=$t;',
    'S{$u:"run";$t:"west";$e:59;}S',
)
TRUE = "if $e>51 ($e is 59; 59>51 is true)\n"  # the reply's decision line, the right outcome
FALSE = "if $e>51 ($e is 59; 59>51 is false)\n"


def language(instruction: Instruction, previous: StateBlock) -> re.Pattern[str]:
    return re.compile(gbnf_to_regex(guided_grammar(instruction, previous)), re.DOTALL)


def test_the_prompt_shows_untouched_variables_then_one_line_per_directive() -> None:
    instruction, previous = parse_instr(CYCLE[0]), parse(CYCLE[1])
    assert guided_prompt(instruction, previous).split("\n") == [
        'S{$t: "west";}S',
        'if $e>51 ($e is 59; 59>51 is true) then sig !page, $e, "idle" else sig !wait,300',
        "del $e",
        "set $u:80",
        'set $k: $t ($t is "west")',
    ]


def test_names_and_command_heads_are_fixed_values_and_choices_are_the_models() -> None:
    instruction, previous = parse_instr(CYCLE[0]), parse(CYCLE[1])
    admitted = language(instruction, previous)
    right = 'S{$t: "west";$u:80;$k: "west";!page,59, "idle";}S'
    assert admitted.fullmatch(TRUE + right) and verify(previous, instruction, right).acceptable
    for wrong in (
        TRUE + 'S{$t: "west";$e:59;$u:80;$k: "west";!page,59, "idle";}S',  # kept the deleted $e
        TRUE + 'S{$t: "west";$u:8;$k: $t;!page, $e, "idle";}S',  # a wrong number, a dangling ref
        FALSE + 'S{$t: "west";$u:80;$k: "west";!wait,300;}S',  # the wrong outcome and its branch
    ):
        assert admitted.fullmatch(wrong), wrong
        block = without_decisions(wrong, instruction, previous)
        assert not verify(previous, instruction, block).acceptable, wrong
    for outside in (
        right,  # no decision line
        FALSE + right,  # a branch the outcome written does not select
        TRUE + 'S{$u:80;$k: "west";!page,59, "idle";}S',  # an untouched variable dropped
        TRUE + 'S{$t: "west";$u:80;$k: "west";$z:1;!page,59, "idle";}S',  # a name nobody set
        TRUE + 'S{$t: "west";$u:80;$k: "west";}S',  # neither branch
        TRUE + 'S{$t: "west";$u:80;$k: "west";!page,59, "idle";!wait,300;}S',  # both branches
        TRUE + 'S{$t: "west";$u:80;$k: "west";!alarm,59, "idle";}S',  # a command not signalled
        TRUE + 'S{$t: "west";$u:80;$k: "we;st";!page,59, "idle";}S',  # no string shown has ";"
        TRUE + 'S{$t: "west";$u: $zz;$k: "west";!page,59, "idle";}S',  # a name it cannot hold
        TRUE + 'S{$t: "west";$u: "run";$k: "west";!page,59, "idle";}S',  # the text sets 80
        TRUE + 'S{$t:59;$u:80;$k: "west";!page,59, "idle";}S',  # $t was and stays a string
        TRUE + 'S{$t: "west";$u:80;$k: "west";!page,59,80;}S',  # the text signals a string
        TRUE + 'S{$t: "west";$u: 80;$k: "west";!page,59, "idle";}S',  # a space before a number
    ):
        assert not admitted.fullmatch(outside), outside


def test_a_string_may_hold_what_a_string_it_was_shown_holds() -> None:
    instruction, previous = parse_instr('INSTR:@set:$a="x;y";'), parse("S{}S")
    assert language(instruction, previous).fullmatch('S{$a: "x;y";}S')


def test_a_variables_value_never_refers_to_itself() -> None:
    instruction, previous = parse_instr("INSTR:@upd:$r=$x;"), parse('S{$r:"hot";$x:1;}S')
    admitted = language(instruction, previous)
    assert admitted.fullmatch("S{$x:1;$r: $x;}S")
    assert admitted.fullmatch("S{$x:1;$r:7;}S")  # a wrong value is the model's to write
    assert not admitted.fullmatch("S{$x:1;$r: $r;}S")  # always circular


def test_the_decision_lines_come_off_the_reply_and_a_reply_without_them_stays() -> None:
    instruction, previous = parse_instr(CYCLE[0]), parse(CYCLE[1])
    block = 'S{$t: "west";$u:80;$k: "west";!page,59, "idle";}S'
    assert without_decisions(TRUE + block, instruction, previous) == block
    assert without_decisions(FALSE + block, instruction, previous) == block
    assert without_decisions(block, instruction, previous) == block
    assert without_decisions("if x\n" + block, instruction, previous) == "if x\n" + block


def test_an_undecidable_comparison_is_decided_by_the_models_word() -> None:
    instruction = parse_instr('INSTR:@fetch:"f",$a;@if:$a>5?@sig:!page,$a:@sig:!wait,1;')
    admitted = language(instruction, parse("S{}S"))
    assert admitted.fullmatch("if $a>5 is true\nS{$a:7;!page, $a;}S")
    assert admitted.fullmatch("if $a>5 is false\nS{$a:7;!wait,1;}S")
    assert not admitted.fullmatch("if $a>5 is false\nS{$a:7;!page, $a;}S")


def _in_guided_order(block: StateBlock, instruction: Instruction, previous: StateBlock) -> str:
    """The engine's answer with its variables in the guided grammar's order."""
    grammar = guided_grammar(instruction, previous)  # one block per outcome: names repeat
    named = dict.fromkeys(re.findall(r'"\$([A-Za-z0-9]+):"', grammar))
    variables = {s.name: s for s in block.statements if isinstance(s, Assign)}
    others = [s for s in block.statements if not isinstance(s, Assign)]
    ordered = [variables[n] for n in named if n in variables]
    lines = ""
    shown = effective(instruction, previous)  # the decisions' places are its
    for index, head, tail in decisions(instruction, previous):
        directive = shown.directives[index]
        assert isinstance(directive, If)
        known = expect(previous, Instruction(shown.directives[:index]))
        sides = known.value_of(directive.condition.left), known.value_of(directive.condition.right)
        outcome = compare(directive.condition, *sides)
        lines += f"{head}{str(outcome).lower()}{tail}\n"
    return lines + "S{" + "".join(_spaced(s) + ";" for s in (*ordered, *others)) + "}S"


def _spaced(statement: Assign | Action | Log) -> str:
    if isinstance(statement, Assign):
        return f"${statement.name}:{_value(statement.value)}"
    if isinstance(statement, Action):
        return f"!{statement.name}" + "".join(f",{_value(p)}" for p in statement.params)
    return ">" + ",".join(_value(v) for v in statement.values)


def _value(value: Value) -> str:
    return value.dumps() if isinstance(value, Num) else f" {value.dumps()}"


@settings(max_examples=300, deadline=None)
@given(blocks(), instructions)
@example(parse("S{}S"), parse_instr('INSTR:@if:""==""?@sig:!Q&@upd:$A="A";'))  # names repeat
def test_the_engines_answer_is_always_one_the_model_can_write(
    previous: StateBlock, instruction: Instruction
) -> None:
    exact = expect(previous, instruction).block()
    assume(exact is not None)
    assert exact is not None
    text = _in_guided_order(exact, instruction, previous)
    assume(all(len(s) <= 40 for s in re.findall(r'"([^"]*)"', text)))
    assert language(instruction, previous).fullmatch(text), (
        guided_grammar(instruction, previous),
        text,
    )


@settings(max_examples=200, deadline=None)
@given(blocks(), instructions)
def test_every_guided_grammar_is_well_formed(
    previous: StateBlock, instruction: Instruction
) -> None:
    rules = structure(guided_grammar(instruction, previous))
    for name, used in rules.items():
        assert used <= rules.keys(), (name, used - rules.keys())


def test_a_request_carries_its_repeat_penalty_but_replay_keys_ignore_it() -> None:
    plain = ModelRequest(model="m", messages=())
    copying = ModelRequest(model="m", messages=(), repeat_penalty=1.0)
    assert ModelRequest.from_dict(copying.to_dict()) == copying
    assert "repeat_penalty" not in plain.to_dict() and plain.key() == copying.key()


def test_the_provider_sends_the_layout_and_keeps_a_reasks_violations() -> None:
    reask = f"{CYCLE[0]}\n{CYCLE[1]}\nYour last answer was rejected:\n- wrong_value: $u"
    system, prompt = _guided(reask)
    assert system == GUIDED_SYSTEM
    layout = guided_prompt(parse_instr(CYCLE[0]), parse(CYCLE[1]))
    assert prompt == layout + "\nYour last answer was rejected:\n- wrong_value: $u"


@pytest.mark.skipif(not local_model_installed(), reason="needs the [local] extra (llama.cpp)")
@settings(max_examples=40, deadline=None)
@given(blocks(), instructions)
def test_llama_cpp_parses_every_guided_grammar(
    previous: StateBlock, instruction: Instruction
) -> None:
    from openprose.providers.local import grammar_parses

    assert grammar_parses(guided_grammar(instruction, previous))


class _Recorder:
    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        return ModelResponse(text="S{}S", model="m", provider="recording")

    async def aclose(self) -> None:
        return None


async def test_guided_requests_carry_layout_grammar_and_no_repeat_penalty(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from openprose import providers

    recorder = _Recorder()
    monkeypatch.setattr(providers, "open_provider", lambda settings, name=None: recorder)
    instruction, previous = parse_instr(CYCLE[0]), parse(CYCLE[1])
    for choice, penalty in (("guided", 1.0), ("block", None)):
        model, close = provider_model("local", None, grammar=choice)  # type: ignore[arg-type]
        await model("the middleware's system prompt", build_prompt(instruction, previous))
        await close()
        assert recorder.requests[-1].repeat_penalty == penalty
    guided = recorder.requests[0]
    assert guided.system == GUIDED_SYSTEM
    assert guided.messages[0].content == guided_prompt(instruction, previous)
    assert guided.grammar == guided_grammar(instruction, previous)


@pytest.mark.skipif(not local_model_installed(), reason="needs the [local] extra (llama.cpp)")
async def test_the_embedded_model_gets_a_guided_cycle_right() -> None:
    from openprose.providers.local import LocalProvider
    from plsp.middleware import Loop

    provider = LocalProvider()
    instruction = parse_instr('INSTR:@upd:$u="run";@set:$j=43;@sig:!wait,300;')
    previous = parse('S{$a:"ok";$u:"idle";}S')

    async def model(system: str, prompt: str) -> str:
        system, prompt = _guided(prompt)
        request = ModelRequest(
            model="local",
            messages=(Message("user", prompt),),
            system=system,
            max_tokens=200,
            temperature=0.0,
            grammar=guided_grammar(instruction, previous),
            repeat_penalty=1.0,
        )
        return (await provider.complete(request)).text

    record = await Loop(model, lambda context: None, retries=0).cycle(1, instruction, previous)
    assert record.accepted, record.attempts


def test_a_decidable_comparison_is_stated_with_the_values_at_that_point() -> None:
    instruction = parse_instr("INSTR:@upd:$a=3;@if:$a>5?@sig:!page,$a:@sig:!wait,1;")
    line = guided_prompt(instruction, parse("S{$a:9;}S")).split("\n")[2]
    assert line == "if $a>5 ($a is 3; 3>5 is false) then sig !page, $a else sig !wait,1"


def test_an_undecidable_comparison_gets_no_outcome() -> None:
    instruction = parse_instr('INSTR:@fetch:"f",$a;@if:$a>5?@sig:!page,$a;')
    assert guided_prompt(instruction, parse("S{}S")).split("\n")[2] == "if $a>5 then sig !page, $a"


def test_a_string_slot_admits_only_strings() -> None:
    instruction, previous = (
        parse_instr('INSTR:@set:$j="disk full";@sig:>"ok",$e;'),
        parse("S{$e:79;}S"),
    )
    admitted = language(instruction, previous)
    assert admitted.fullmatch('S{$e:79;$j: "disk full";> "ok", $e;}S')
    assert admitted.fullmatch('S{$e:79;$j: "hot";> "no",79;}S')  # wrong values, right kinds
    assert not admitted.fullmatch('S{$e:79;$j:79;> "ok", $e;}S')
    assert not admitted.fullmatch('S{$e:79;$j: "disk full";> $e, $e;}S')


def test_a_set_overwritten_before_anything_reads_it_is_left_out() -> None:
    instruction = parse_instr("INSTR:@set:$f=65.6;@upd:$z=40;@set:$f=7;@upd:$y=$y;@upd:$y=1;")
    previous = parse('S{$z:"west";$y:2;}S')
    assert guided_prompt(instruction, previous).split("\n")[1:] == [
        "set $z:40",
        "set $f:7",
        "set $y:1",
    ]  # the names in the order the lines show them
    assert re.findall(r'"\$(\w):"', guided_grammar(instruction, previous)) == ["z", "f", "y"]


def test_a_variable_set_to_itself_stays_with_the_untouched_ones() -> None:
    instruction = parse_instr('INSTR:@upd:$c=$c;@fetch:"f",$d;@upd:$d=$d;')
    previous = parse('S{$c:"ok";}S')
    assert guided_prompt(instruction, previous).split("\n") == [
        'S{$c: "ok";}S',
        "fetch f into $d",
        "set $d: $d",  # $d is not in the previous block: the line stays (and verify judges)
    ]
    admitted = language(instruction, previous)
    assert admitted.fullmatch('S{$c: "ok";$d: "x";}S')
    assert admitted.fullmatch('S{$c: "no";$d:1;}S')  # a wrong kept value is the model's
    assert not admitted.fullmatch("S{$c: $d;$d:1;}S")  # an untouched string stays a string


def test_a_set_that_a_later_line_replaces_after_a_read_says_so() -> None:
    instruction = parse_instr("INSTR:@set:$f=65.6;@sig:>$f;@set:$f=7;")
    assert guided_prompt(instruction, parse("S{}S")).split("\n")[1:] == [
        "set $f:65.6 (replaced below)",
        "sig > $f",
        "set $f:7",
    ]

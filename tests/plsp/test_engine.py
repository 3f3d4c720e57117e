from __future__ import annotations

from hypothesis import given, settings

from plsp.engine import ANY, Expectation, compare, expect
from plsp.instr import Condition, Instruction, parse_instr
from plsp.syntax import Action, Assign, Num, Ref, StateBlock, Str, parse
from plsp.verify import verify
from tests.plsp.strategies import blocks, instructions

PREVIOUS = parse('S{$u:"op";$t:75;$l:70;$r:$u;}S')


def expected(instr: str, previous: str | None = None) -> Expectation:
    return expect(parse(previous) if previous else PREVIOUS, parse_instr(instr))


def test_untouched_variables_carry_forward_with_references_resolved() -> None:
    result = expect(PREVIOUS, parse_instr("INSTR:"))
    assert result.variables == {"u": Str("op"), "t": Num("75"), "l": Num("70"), "r": Str("op")}
    assert result.required == [] and not result.open


def test_directives_apply_in_order() -> None:
    result = expect(PREVIOUS, parse_instr("INSTR:@upd:$l=$t;@set:$t=82;@set:$n=$t;@del:$r;"))
    assert result.variables == {"u": Str("op"), "t": Num("82"), "l": Num("75"), "n": Num("82")}
    assert result.removed == {"r"}
    block = result.block()
    assert block is not None and block.dumps() == 'S{$u:"op";$t:82;$l:75;$n:82;}S'


def test_if_takes_the_branch_its_condition_selects() -> None:
    instr = '@if:$t>80?@sig:!page,$u,"hot"&@set:$p="hot":@sig:!wait,1000&@set:$p="ok";'
    hot = expect(PREVIOUS, parse_instr("INSTR:@set:$t=81;" + instr))
    assert hot.required == [Action("page", (Ref("u"), Str("hot")))]
    assert hot.variables["p"] == Str("hot")
    cold = expect(PREVIOUS, parse_instr("INSTR:" + instr))
    assert cold.required == [Action("wait", (Num("1000"),))]
    assert cold.variables["p"] == Str("ok")


def test_undecidable_if_leaves_its_effects_open() -> None:
    result = expect(PREVIOUS, parse_instr("INSTR:@if:$x>1?@set:$t=1&@del:$l&@sig:!wait,1;"))
    assert result.variables["t"] is ANY
    assert result.maybe_removed == {"l"}
    assert result.required == [] and result.allowed == [Action("wait", (Num("1"),))]
    assert result.block() is None
    assert result.notes == ["cannot decide $x>1 ($x is not in the state)"]


def test_notes_say_why_a_condition_is_undecided() -> None:
    assert expected("INSTR:@fetch:s,$d;@if:$d>1?@del:$u;").notes == [
        "cannot decide $d>1 ($d is not known before the reply)"
    ]
    assert expected('INSTR:@if:$u<"p"?@del:$t;').notes == [
        'cannot decide $u<"p" (< compares numbers only)'
    ]
    assert expected("INSTR:@calc:$t=1;").notes == []  # reported as unknown_directive


def test_fetch_and_unknown_directives_are_not_decided() -> None:
    result = expect(PREVIOUS, parse_instr("INSTR:@fetch:x.txt,$d;@calc:$t=$t*2;"))
    assert result.variables["d"] is ANY
    assert result.open
    assert result.block() is None


def test_upd_of_a_missing_variable_is_noted() -> None:
    result = expect(PREVIOUS, parse_instr("INSTR:@upd:$q=1;"))
    assert result.variables["q"] == Num("1")
    assert any("$q" in note for note in result.notes)


def test_compare() -> None:
    gt = Condition(Ref("a"), ">", Ref("b"))
    assert compare(gt, Num("10"), Num("9.5")) is True
    assert compare(gt, Num("9"), Num("9.5")) is False
    assert compare(gt, Str("b"), Str("a")) is None
    assert compare(Condition(Ref("a"), "==", Ref("b")), Str("1"), Num("1")) is False
    assert compare(Condition(Ref("a"), "!=", Ref("b")), Num("1.0"), Num("1")) is False
    assert compare(gt, ANY, Num("1")) is None


@settings(max_examples=200)
@given(blocks(), instructions)
def test_the_engines_exact_answer_always_verifies(
    previous: StateBlock, instruction: Instruction
) -> None:
    expected_block = expect(previous, instruction).block()
    if expected_block is None:
        return
    verdict = verify(previous, instruction, expected_block.dumps())
    assert all(v.kind in ("extended_identifier", "instruction_note") for v in verdict.violations)
    assert verdict.acceptable


@settings(max_examples=150)
@given(blocks(), instructions)
def test_dropping_any_variable_from_the_exact_answer_is_caught(
    previous: StateBlock, instruction: Instruction
) -> None:
    expected_block = expect(previous, instruction).block()
    if expected_block is None or not expected_block.variables:
        return
    dropped = next(iter(expected_block.variables))
    reply = StateBlock(
        tuple(
            s
            for s in expected_block.statements
            if not (isinstance(s, Assign) and s.name == dropped)
        )
    )
    verdict = verify(previous, instruction, reply.dumps())
    assert not verdict.acceptable
    assert any(
        v.kind in ("dropped_variable", "missing_variable") and f"${dropped} " in v.message
        for v in verdict.violations
    )


def test_undecided_branch_may_or_may_not_create_a_variable() -> None:
    # $t comes from a fetch, so the engine cannot tell whether $n is created.
    instr = parse_instr("INSTR:@fetch:x,$t;@if:$t>5?@set:$n=1&@fetch:y,$m;")
    previous = parse("S{$a:1}S")
    assert expect(previous, instr).maybe_removed == {"n", "m"}
    note = "instruction_note: cannot decide $t>5 ($t is not known before the reply)"
    assert [str(v) for v in verify(previous, instr, "S{$a:1;$t:3}S").violations] == [note]
    assert [str(v) for v in verify(previous, instr, "S{$a:1;$t:6;$n:1;$m:2}S").violations] == [note]
    # A variable that existed before must still be kept.
    assert [v.kind for v in verify(previous, instr, "S{$t:3}S").blocking] == ["dropped_variable"]


def test_fetch_after_del_brings_the_variable_back() -> None:
    instr = parse_instr("INSTR:@del:$a;@fetch:x,$a;")
    result = expect(parse("S{$a:1}S"), instr)
    assert result.removed == set() and result.variables == {"a": ANY}
    assert verify(parse("S{$a:1}S"), instr, "S{$a:3}S").violations == ()
    assert [v.kind for v in verify(parse("S{$a:1}S"), instr, "S{}S").violations] == [
        "dropped_variable"
    ]

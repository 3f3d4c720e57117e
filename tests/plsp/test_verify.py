from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from plsp.instr import parse_instr
from plsp.syntax import parse
from plsp.verify import verify

PREVIOUS = parse('S{$u:"op";$t:75;$l:70;}S')
INSTR = parse_instr('INSTR:@upd:$l=$t;@set:$t=82;@if:$t>80?@sig:!page,$u,"hot":@sig:!wait,9;')


def kinds(reply: str, *, strict: bool = True, instr: str | None = None) -> list[str]:
    verdict = verify(PREVIOUS, parse_instr(instr) if instr else INSTR, reply, strict=strict)
    return sorted(v.kind for v in verdict.violations)


def test_correct_reply_passes() -> None:
    verdict = verify(PREVIOUS, INSTR, 'S{$u:"op";$t:82;$l:75;!page,$u,"hot";}S')
    assert verdict.acceptable and verdict.violations == ()
    assert verdict.block is not None and verdict.block.variables["t"].dumps() == "82"


def test_signal_params_may_be_written_resolved_and_in_any_order() -> None:
    assert kinds('S{!page,"op","hot";$l:75;$t:82;$u:"op"}S') == []


def test_dropped_variable() -> None:
    verdict = verify(PREVIOUS, INSTR, 'S{$t:82;$l:75;!page,$u,"hot";}S')
    assert [str(v) for v in verdict.violations] == [
        'undefined_reference: !page,$u,"hot": $u is not defined',
        'dropped_variable: $u is missing (expected "op")',
        'missing_signal: !page,$u,"hot" was signalled (@sig) but is missing',
        'unrequested_action: !page,$u,"hot" was not signalled by the instruction',
    ]
    assert not verdict.acceptable


def test_ignored_set_is_a_wrong_value() -> None:
    verdict = verify(PREVIOUS, INSTR, 'S{$u:"op";$t:75;$l:75;!wait,9;}S')
    messages = [str(v) for v in verdict.violations]
    assert "wrong_value: $t is 75, expected 82 (from @set:$t=82)" in messages
    assert sorted(v.kind for v in verdict.violations) == [
        "missing_signal",
        "unrequested_action",
        "wrong_value",
    ]


def test_change_without_instruction_is_reported_as_such() -> None:
    verdict = verify(PREVIOUS, parse_instr("INSTR:"), 'S{$u:"boss";$t:75;$l:70;}S')
    assert [str(v) for v in verdict.violations] == [
        'wrong_value: $u is "boss", expected "op" (changed without an instruction)'
    ]


def test_removed_variable_must_go_and_others_may_not_appear_silently() -> None:
    instr = "INSTR:@del:$l;"
    assert kinds('S{$u:"op";$t:75;}S', instr=instr) == []
    assert kinds('S{$u:"op";$t:75;$l:70;}S', instr=instr) == ["not_removed"]
    verdict = verify(PREVIOUS, parse_instr(instr), 'S{$u:"op";$t:75;$x:1;}S')
    assert [(v.kind, v.blocking) for v in verdict.violations] == [("unexpected_variable", False)]


def test_missing_new_variable_and_undefined_reference() -> None:
    assert kinds('S{$u:"op";$t:75;$l:70;}S', instr="INSTR:@set:$n=1;") == ["missing_variable"]
    assert kinds('S{$u:"op";$t:75;$l:$q;}S', instr="INSTR:") == ["undefined_reference"]
    assert kinds('S{$u:"op";$t:75;$l:70;>$q;}S', instr="INSTR:@x;") == [
        "undefined_reference",
        "unknown_directive",
    ]


def test_chatter_is_stray_text_blocking_only_in_strict_mode() -> None:
    reply = 'Here you go: S{$u:"op";$t:82;$l:75;!page,$u,"hot";}S Hope it helps'
    strict = verify(PREVIOUS, INSTR, reply)
    assert [(v.kind, v.blocking) for v in strict.violations] == [
        ("stray_text", True),
        ("stray_text", True),
    ]
    assert not strict.acceptable
    assert verify(PREVIOUS, INSTR, reply, strict=False).acceptable


def test_malformed_reply_is_positioned_in_the_reply() -> None:
    verdict = verify(PREVIOUS, INSTR, 'ok\nS{$u:"op"; # keep\n$t:82}S')
    malformed = [v for v in verdict.violations if v.kind == "malformed"]
    assert verdict.block is None
    assert [(v.line, v.column, v.message) for v in malformed] == [
        (2, 12, "comments (#) are not allowed")
    ]


def test_no_block() -> None:
    assert kinds("I am just a language model") == ["no_block"]


def test_a_block_cut_off_before_its_end_is_located() -> None:
    verdict = verify(PREVIOUS, INSTR, 'Here:\n  S{$u:"op";$t:82;$l:')
    assert [(v.kind, v.line, v.column) for v in verdict.violations] == [("no_block", 2, 3)]
    assert "never closed with }S (was the reply cut off?)" in verdict.violations[0].message


def test_unexpected_variables_are_reported_in_name_order() -> None:
    verdict = verify(PREVIOUS, parse_instr("INSTR:"), 'S{$u:"op";$t:75;$l:70;$z:1;$b:2;$m:3}S')
    assert [v.message for v in verdict.violations] == [
        f"${name} is not set by any instruction" for name in "bmz"
    ]


def test_open_instruction_checks_only_what_is_certain() -> None:
    instr = "INSTR:@fetch:x,$d;@calc:$t=$t*2;@set:$p=1;"
    verdict = verify(
        PREVIOUS, parse_instr(instr), 'S{$u:"op";$t:150;$l:70;$d:"data";$p:1;$z:3;!beep;}S'
    )
    assert verdict.acceptable
    assert [str(v) for v in verdict.violations] == [
        "unknown_directive: @calc:$t=$t*2 was passed through unchecked"
    ]
    assert kinds('S{$u:"op";$t:150;$l:70;$d:"data";$p:2;}S', instr=instr) == [
        "unknown_directive",
        "wrong_value",
    ]
    assert kinds('S{$u:"op";$t:150;$l:70;$p:1;}S', instr=instr) == [
        "missing_variable",
        "unknown_directive",
    ]


def test_extended_identifier_warning_is_located_in_the_reply() -> None:
    verdict = verify(parse("S{}S"), parse_instr("INSTR:@set:$a1=1;"), "\n  S{$a1:1}S")
    assert [(v.kind, v.blocking, v.line, v.column) for v in verdict.violations] == [
        ("extended_identifier", False, 2, 5)
    ]


@settings(max_examples=150)
@given(st.text(alphabet='S{}$:;,>!"#.0123456789abtul \n', max_size=50))
def test_fuzz_any_reply_gives_a_verdict(reply: str) -> None:
    verdict = verify(PREVIOUS, INSTR, reply)
    assert verdict.acceptable == (verdict.block is not None and not verdict.blocking)
    assert all(v.message for v in verdict.violations)


def test_instruction_notes_are_reported_but_do_not_block() -> None:
    verdict = verify(
        PREVIOUS, parse_instr("INSTR:@upd:$q=1;@if:$z>1?@del:$t;"), 'S{$u:"op";$t:75;$l:70;$q:1}S'
    )
    assert verdict.acceptable
    assert [str(v) for v in verdict.violations] == [
        "instruction_note: @upd of $q, which does not exist yet",
        "instruction_note: cannot decide $z>1 ($z is not in the state)",
    ]

"""Value kinds come from the instruction's text and the previous block, never from
evaluating it: a literal's kind, a reference and what it may hold, an old value's kind."""

from __future__ import annotations

from plsp.instr import parse_instr
from plsp.syntax import Ref, parse
from plsp.value_kinds import ANY_KIND, ValueKinds


def kinds(instr: str, previous: str = 'S{$a:1;$s:"x";}S') -> ValueKinds:
    return ValueKinds(parse_instr(instr), parse(previous))


def test_an_untouched_variable_keeps_its_old_kind() -> None:
    found = kinds("INSTR:@sig:!wait,1;")
    assert found.of_name("a") == {"number"} and found.of_name("s") == {"string"}


def test_a_certain_write_gives_its_literals_kind_the_last_one_wins() -> None:
    assert kinds('INSTR:@upd:$a="hot";').of_name("a") == {"string"}
    assert kinds('INSTR:@set:$n="hot";@set:$n=7;').of_name("n") == {"number"}


def test_a_branch_may_or_may_not_run_so_the_old_kind_stays_possible() -> None:
    found = kinds('INSTR:@if:$a>0?@upd:$a="hot":@sig:!wait,1;')
    assert found.of_name("a") == {"number", "string"}


def test_a_reference_is_itself_or_anything_its_name_may_hold() -> None:
    found = kinds("INSTR:@set:$n=$s;@upd:$s=5;")
    assert found.of_name("n") == {"variable", "string", "number"}
    assert found.of_value(Ref("a")) == {"variable", "number"}


def test_fetched_unknown_and_opaque_values_may_be_anything() -> None:
    assert kinds('INSTR:@fetch:"f.txt",$n;').of_name("n") == ANY_KIND
    assert kinds("INSTR:@set:$n=$zz;").of_name("n") == ANY_KIND
    assert kinds("INSTR:@custom:x;").of_name("a") == ANY_KIND


def test_an_old_reference_is_followed_in_the_previous_block() -> None:
    assert kinds("INSTR:@sig:!wait,1;", 'S{$a:"x";$b:$a;}S').of_name("b") == {"variable", "string"}


def test_a_self_reference_adds_nothing_to_what_the_name_holds() -> None:
    assert kinds("INSTR:@upd:$s=$s;").of_name("s") == {"variable", "string"}

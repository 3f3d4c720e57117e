from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plsp.diagnostics import ParseError
from plsp.instr import (
    Condition,
    Delete,
    Fetch,
    If,
    Instruction,
    Opaque,
    Set,
    Signal,
    Update,
    parse_condition,
    parse_instr,
)
from plsp.syntax import Action, Log, Num, Ref, Str
from tests.plsp.strategies import instructions


def test_seed_directives_parse() -> None:
    instr = parse_instr(
        'INSTR: @set:$p="run"; @upd:$t=$v; @fetch:sensor.txt,$d; '
        '@if:$t>80?@sig:!page,$u,"hot":@sig:!wait,5000; @sig:!act;'
    )
    assert instr.directives == (
        Set("p", Str("run")),
        Update("t", Ref("v")),
        Fetch("sensor.txt", "d"),
        If(
            Condition(Ref("t"), ">", Num("80")),
            (Signal(Action("page", (Ref("u"), Str("hot")))),),
            (Signal(Action("wait", (Num("5000"),))),),
        ),
        Signal(Action("act")),
    )
    assert instr.warnings == ()


def test_canonical_form_has_no_whitespace() -> None:
    text = 'INSTR: @set : $p = "a b" ;\n @if: $t >= 1 ? @del:$x & @sig: >"x",$t : @upd:$t=0 ;'
    assert (
        parse_instr(text).dumps() == 'INSTR:@set:$p="a b";@if:$t>=1?@del:$x&@sig:>"x",$t:@upd:$t=0;'
    )


def test_empty_instruction() -> None:
    assert parse_instr("INSTR:") == Instruction()
    assert Instruction().dumps() == "INSTR:"


def test_fetch_source_forms() -> None:
    assert parse_instr("INSTR:@fetch:http://h/x?a=1&b=2,$d;").directives == (
        Fetch("http://h/x?a=1&b=2", "d"),
    )
    quoted = parse_instr('INSTR:@fetch:"my file.txt",$d;')
    assert quoted.directives == (Fetch("my file.txt", "d"),)
    assert quoted.dumps() == 'INSTR:@fetch:"my file.txt",$d;'


def test_unknown_directives_pass_through_with_a_warning() -> None:
    instr = parse_instr('INSTR:@calc:$c=$a*2 "x;y" ;@noop;@set:$a=1;')
    assert instr.directives[:2] == (Opaque("calc", '$c=$a*2 "x;y"'), Opaque("noop"))
    assert instr.dumps() == 'INSTR:@calc:$c=$a*2 "x;y";@noop;@set:$a=1;'
    assert [w.column for w in instr.warnings] == [7, 28]
    assert "@calc" in instr.warnings[0].message


def test_builder_reads_like_the_format() -> None:
    instr = (
        Instruction()
        .set("p", "run")
        .upd("t", Ref("v"))
        .delete("x")
        .fetch("sensor.txt", "d")
        .sig("page", Ref("u"), "CPU High")
        .log("T", Ref("t"))
        .when("$t>80", Instruction().sig("wait", 1000), Instruction().set("s", 1.5))
    )
    assert instr.dumps() == (
        'INSTR:@set:$p="run";@upd:$t=$v;@del:$x;@fetch:sensor.txt,$d;'
        '@sig:!page,$u,"CPU High";@sig:>"T",$t;'
        "@if:$t>80?@sig:!wait,1000:@set:$s=1.5;"
    )
    assert parse_instr(instr.dumps()) == instr


@pytest.mark.parametrize(
    ("text", "column", "message"),
    [
        ("@set:$a=1;", 1, "expected 'INSTR:'"),
        ("INSTR:@set:$a=1", 16, "expected ';' after the directive"),
        ("INSTR:set:$a=1;", 7, "expected a directive"),
        ("INSTR:@set:a=1;", 12, "expected a variable"),
        ("INSTR:@set:$a:1;", 14, "expected '=' after the variable"),
        ("INSTR:@upd:$a=;", 15, "expected a value"),
        ("INSTR:@del:1;", 12, "expected a variable"),
        ("INSTR:@fetch:src;", 17, "expected ',' after the fetch source"),
        ('INSTR:@fetch:"",$d;', 14, "empty fetch source"),
        ("INSTR:@sig:wait;", 12, "'!action' or '>values'"),
        ("INSTR:@if:$a=1?@set:$b=1;", 13, "expected a comparison"),
        ("INSTR:@if:$a==1 @set:$b=1;", 17, "expected '?'"),
        ("INSTR:@if:$a==1?;", 17, "expected a directive"),
        ("INSTR:@if:$a==1?@if:$b==1?@del:$c;", 17, "@if cannot appear inside an @if branch"),
        ("INSTR:@if:$a==1?@zz:1;", 17, "@zz cannot appear inside an @if branch"),
        ("INSTR:@set:$a=1;#note", 17, "comments (#) are not allowed"),
        ('INSTR:@zz:"open;', 11, "unterminated string"),
        ('INSTR:@fetch:a"b,$d;', 15, "expected ',' after the fetch source"),
        ("INSTR:@if:$a>1?@set:$b=1:;", 26, "expected a directive"),
        ("INSTR:@if:$a>1?@set:$b=1&;", 26, "expected a directive"),
        ("INSTR:@sig:!w&@set:$a=1;", 14, "expected ';' after the directive"),
        ("INSTR:@del:$a=1;", 14, "expected ';' after the directive"),
        ("INSTR: ; ", 8, "expected a directive"),
        ("INSTR:@sig:!wait,;", 18, "expected a value"),
    ],
)
def test_errors_are_positioned(text: str, column: int, message: str) -> None:
    with pytest.raises(ParseError) as caught:
        parse_instr(text)
    assert caught.value.column == column
    assert message in caught.value.message


def test_parse_condition() -> None:
    assert parse_condition(' $p == "hot" ') == Condition(Ref("p"), "==", Str("hot"))
    with pytest.raises(ParseError, match="end of the condition"):
        parse_condition("$a<1 x")


def test_directive_constructors_validate() -> None:
    with pytest.raises(TypeError):
        If(
            Condition(Ref("a"), "==", Num("1")),
            (If(Condition(Ref("a"), "<", Num("1")), (Delete("a"),)),),
        )
    with pytest.raises(ValueError):
        If(Condition(Ref("a"), "==", Num("1")), ())
    with pytest.raises(ValueError):
        Condition(Ref("a"), "=", Num("1"))
    with pytest.raises(ValueError):
        Opaque("x", "a;b")
    with pytest.raises(ValueError):
        Fetch('a"b', "d")
    assert Signal(Log((Num("1"),))).dumps() == "@sig:>1"


@settings(max_examples=200)
@given(instructions)
def test_round_trip(instr: Instruction) -> None:
    assert parse_instr(instr.dumps()) == instr


@settings(max_examples=200)
@given(st.text(alphabet='INSTR:@setupdifgchl$=?&!>;,"#0123456789ab. \n', max_size=50))
def test_fuzz_never_crashes(text: str) -> None:
    try:
        instr = parse_instr(text)
    except ParseError as error:
        assert error.line >= 1 and error.column >= 1
        return
    assert parse_instr(instr.dumps()) == instr


@settings(max_examples=100)
@given(st.text(max_size=40))
def test_fuzz_after_prefix_never_crashes(text: str) -> None:
    try:
        parse_instr("INSTR:" + text)
    except ParseError:
        pass


SEED_EXAMPLE = 'INSTR: @set:$p="run"; @upd:$t=val; @if:cond? then:else; @sig:!act;'


def test_the_seeds_illustrative_instruction_passes_through_with_warnings() -> None:
    # seed §2/§3: "Examples: INSTR: @set:$p="run"; @upd:$t=val; ..." — the IMF "is flexible
    # and defined by the Middleware implementation", so what ours cannot read is kept verbatim
    instr = parse_instr(SEED_EXAMPLE, passthrough=True)
    assert instr.directives[0] == Set("p", Str("run"))
    assert instr.directives[1:3] == (Opaque("upd", "$t=val"), Opaque("if", "cond? then:else"))
    assert instr.directives[3].dumps() == "@sig:!act"
    assert [(w.column, w.message.split(" (")[0]) for w in instr.warnings] == [
        (23, "@upd is not in this middleware's form"),
        (36, "@if is not in this middleware's form"),
    ]
    assert parse_instr(instr.dumps(), passthrough=True) == instr
    with pytest.raises(ParseError) as caught:
        parse_instr(SEED_EXAMPLE)  # strict by default: loop files and policies keep errors
    assert caught.value.column == 31


@pytest.mark.parametrize(
    "text",
    [
        "INSTR: @set:$var=value;",
        "INSTR: @upd:$var=value;",
        "INSTR: @fetch:source,$destVar;",
        "INSTR: @if:condition? true_directives : false_directives;",
        "INSTR: @sig:!action,param;",
    ],
)
def test_every_illustrative_structure_of_the_seed_reads(text: str) -> None:
    parse_instr(text, passthrough=True)


def test_passthrough_keeps_real_errors_outside_a_directive_body() -> None:
    with pytest.raises(ParseError, match="';' after the directive"):
        parse_instr("INSTR: @set:$a=1 @set:$b=2;", passthrough=True)
    with pytest.raises(ParseError, match="unterminated string"):
        parse_instr('INSTR: @upd:"open;', passthrough=True)

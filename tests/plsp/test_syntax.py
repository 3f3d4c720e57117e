from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plsp.diagnostics import ParseError
from plsp.syntax import Action, Assign, Log, Num, Ref, StateBlock, Str, extract, literal, parse
from tests.plsp.strategies import blocks

# --- valid productions ----------------------------------------------------------------


def test_empty_block() -> None:
    assert parse("S{}S") == StateBlock()
    assert parse("  S{ \n }S \n").dumps() == "S{}S"


def test_seed_example_parses_to_statements() -> None:
    block = parse('S{$p:"run";$t:75;$l:70;!wait,5000;}S')
    assert block.statements == (
        Assign("p", Str("run")),
        Assign("t", Num("75")),
        Assign("l", Num("70")),
        Action("wait", (Num("5000"),)),
    )
    assert block.variables == {"p": Str("run"), "t": Num("75"), "l": Num("70")}


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('"OK"', Str("OK")),
        ('"T:$t"', Str("T:$t")),
        ('""', Str("")),
        ('"a;b}S#x"', Str("a;b}S#x")),
        ("100", Num("100")),
        ("3.14", Num("3.14")),
        ("$i", Ref("i")),
    ],
)
def test_values(text: str, value: object) -> None:
    assert parse(f"S{{$v:{text};}}S").variables["v"] == value


def test_number_canonical_form_is_minimal() -> None:
    assert parse("S{$a:007.500;$b:0.0;$c:10}S").dumps() == "S{$a:7.5;$b:0;$c:10;}S"
    assert Num("75.0") == Num("75")


def test_log_and_action_with_params() -> None:
    block = parse('S{$t:75; >"Temp OK",$t; !page , $u , "CPU High" ; !ping}S')
    assert block.logs == (Log((Str("Temp OK"), Ref("t"))),)
    assert block.actions == (Action("page", (Ref("u"), Str("CPU High"))), Action("ping"))
    assert block.dumps() == 'S{$t:75;>"Temp OK",$t;!page,$u,"CPU High";!ping;}S'


def test_last_semicolon_is_optional() -> None:
    assert parse("S{$a:1}S") == parse("S{$a:1;}S")


def test_whitespace_is_ignored_outside_strings_only() -> None:
    assert parse('S{ $a : " x " ;\n\t>$a , 1 ; }S') == parse('S{$a:" x ";>$a,1;}S')
    assert parse('S{$a:" x "}S').variables["a"] == Str(" x ")


def test_many_warnings_on_one_long_line_are_located() -> None:
    # Each warning used to recount the text from its start (60k warnings: over ten
    # seconds). No wall-clock assertion: the machine is shared (see the guide).
    text = "S{" + ";".join(f"$a{i}:1" for i in range(60_000)) + ";\n $bc:2;}S"
    block = parse(text)
    assert len(block.warnings) == 60_001
    assert (block.warnings[1].line, block.warnings[1].column) == (1, 9)
    assert (block.warnings[-1].line, block.warnings[-1].column) == (2, 2)


def test_extended_identifier_is_allowed_with_a_warning() -> None:
    block = parse("S{$a1:1;$b:$a1;}S")
    assert [w.column for w in block.warnings] == [3, 12]
    assert "extended identifier" in block.warnings[0].message


def test_resolve_follows_references() -> None:
    block = parse('S{$i:"x";$r:$i;$s:$r;$z:$q;$c:$d;$d:$c}S')
    assert block.resolve(Ref("s")) == Str("x")
    with pytest.raises(KeyError, match=r"\$q is not defined"):
        block.resolve(Ref("z"))
    with pytest.raises(KeyError, match="circular"):
        block.resolve(Ref("c"))


# --- invalid productions, with positions -------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "column", "message"),
    [
        ("", 1, 1, "expected 'S{', found end of input"),
        ("S{", 1, 3, "expected a statement"),
        ("S{$a:1", 1, 7, "expected ';' or '}S', found end of input"),
        ("S{$a:1;#c\n}S", 1, 8, "comments (#) are not allowed"),
        ("S{$a:1 # c}S", 1, 8, "comments (#) are not allowed"),
        ("S{$a:1;;}S", 1, 8, "empty statement"),
        ("S{$:1}S", 1, 4, "expected a variable name"),
        ("S{$a 1}S", 1, 6, "expected ':' after the variable"),
        ("S{$a:}S", 1, 6, "expected a value"),
        ('S{$a:"open}S', 1, 6, "unterminated string"),
        ('S{$a:"say "hi""}S', 1, 12, "expected ';' or '}S', found 'h'"),
        ("S{$a:1.}S", 1, 8, "digits after the decimal point"),
        ("S{$a:-3}S", 1, 6, "numbers are unsigned"),
        ("S{$a:abc}S", 1, 6, "expected a value"),
        ("S{>}S", 1, 4, "expected a value"),
        ("S{>1,}S", 1, 6, "expected a value"),
        ("S{!}S", 1, 4, "expected an action name"),
        ("S{!9x}S", 1, 4, "expected an action name"),
        ("S{!fetch,src}S", 1, 10, "expected a value"),
        ("S{$a:1;$a:2}S", 1, 8, "$a is assigned twice"),
        ("S{x}S", 1, 3, "expected a statement"),
        ("S{$a:1}S trailing", 1, 10, "expected end of input after '}S'"),
        ("chatter S{}S", 1, 1, "expected 'S{'"),
        ("S {}S", 1, 1, "expected 'S{'"),
        ("S{$a:1;\n  $b:2 $c:3}S", 2, 8, "expected ';' or '}S'"),
        ("S{$a:1}", 1, 7, "expected ';' or '}S'"),
        # identifiers and whitespace are ASCII only; no space after '$'
        ("S{$\u00e9:1}S", 1, 4, "expected a variable name"),
        ("S{$ a:1}S", 1, 4, "expected a variable name"),
        ("S{$a:$}S", 1, 7, "expected a variable name"),
        ("S{$a:1;\u00a0}S", 1, 8, "expected a statement"),
        ("S{!wait,}S", 1, 9, "expected a value"),
        ("S{>$a $b}S", 1, 7, "expected ';' or '}S', found '$'"),
        ("S{$a:1.5.2}S", 1, 9, "expected ';' or '}S', found '.'"),
        ('S{$a:"x""y"}S', 1, 9, "expected ';' or '}S', found '\"'"),
    ],
)
def test_errors_are_positioned(text: str, line: int, column: int, message: str) -> None:
    with pytest.raises(ParseError) as caught:
        parse(text)
    assert (caught.value.line, caught.value.column) == (line, column)
    assert message in caught.value.message
    assert str(caught.value).startswith(f"line {line}, column {column}: ")


def test_error_excerpt_points_at_the_column() -> None:
    with pytest.raises(ParseError) as caught:
        parse("S{$a:1;\n $b:#}S")
    assert caught.value.excerpt() == " $b:#}S\n    ^"


# --- model values -------------------------------------------------------------------------


def test_constructors_reject_what_the_grammar_cannot_express() -> None:
    with pytest.raises(ValueError, match="double quote"):
        Str('say "hi"')
    with pytest.raises(ValueError):
        Num("-1")
    with pytest.raises(ValueError):
        Ref("a_b")
    with pytest.raises(ValueError):
        Log(())
    with pytest.raises(ValueError, match="assigned twice"):
        StateBlock((Assign("a", Num("1")), Assign("a", Num("2"))))


def test_literal_converts_python_values() -> None:
    assert literal("x") == Str("x")
    assert literal(3) == Num("3")
    assert literal(2.50) == Num("2.5")
    with pytest.raises(ValueError, match="unsigned"):
        literal(-1)
    with pytest.raises(TypeError):
        literal(True)


# --- properties -----------------------------------------------------------------------------


@settings(max_examples=200)
@given(blocks())
def test_round_trip(block: StateBlock) -> None:
    assert parse(block.dumps()) == block
    assert parse(block.dumps()).dumps() == block.dumps()


@settings(max_examples=150)
@given(blocks(), st.randoms(use_true_random=False))
def test_whitespace_between_tokens_does_not_matter(block: StateBlock, rng: object) -> None:
    import random

    assert isinstance(rng, random.Random)
    # Split canonical text into tokens (strings kept whole) and rejoin with random blanks.
    tokens = re.findall(
        r'S\{|\}S|"[^"]*"|\$[A-Za-z0-9]+|[0-9.]+|[A-Za-z_][A-Za-z0-9_]*|.', block.dumps()
    )
    spaced = "".join(token + rng.choice(["", " ", "\n", "\t "]) for token in tokens)
    assert parse(spaced) == block


@settings(max_examples=200)
@given(st.text(max_size=60))
def test_fuzz_arbitrary_text_never_crashes(text: str) -> None:
    try:
        parse(text)
    except ParseError as error:
        assert 1 <= error.line and 1 <= error.column


@settings(max_examples=200)
@given(st.text(alphabet='S{}$:;,>!"#.-0123456789abAZ_ \n', max_size=40))
def test_fuzz_grammar_alphabet_never_crashes(text: str) -> None:
    try:
        block = parse(text)
    except ParseError:
        return
    assert parse(block.dumps()) == block


# --- extraction -------------------------------------------------------------------------------


def test_extract_clean_reply_has_no_violation() -> None:
    found = extract("  S{$a:1;}S\n")
    assert found is not None and found.text == "S{$a:1;}S" and found.violations == ()


def test_extract_records_stray_text_with_position() -> None:
    found = extract('Sure! Here it is:\n```\nS{$a:"x}S";}S\n```')
    assert found is not None
    assert found.text == 'S{$a:"x}S";}S'
    kinds = [(v.kind, v.line, v.column, v.blocking) for v in found.violations]
    # The chatter is stray; the code fence closing the block is framing (decisions.md,
    # "Conformance (protocol transcripts)").
    assert kinds == [("stray_text", 1, 1, True)]
    assert found.violations[0].message == "text outside the block: 'Sure! Here it is:'"


def test_extract_takes_the_last_block_and_lenient_mode_is_non_blocking() -> None:
    found = extract("prev S{$a:1}S next S{$a:2}S", strict=False)
    assert found is not None and found.text == "S{$a:2}S"
    assert {v.kind for v in found.violations} == {"multiple_blocks", "stray_text"}
    assert not any(v.blocking for v in found.violations)


def test_extract_prefers_the_last_block_that_parses() -> None:
    # A small model answered, then quoted the format from the system prompt.
    reply = "S{$a:2}S\nFormat: S{...}S"
    found = extract(reply)
    assert found is not None and found.text == "S{$a:2}S"
    assert [(v.kind, v.line, v.column) for v in found.violations] == [
        ("multiple_blocks", 1, 1),
        ("stray_text", 2, 1),
    ]
    assert "2 blocks in the reply; using the one here" in found.violations[0].message
    none_parse = extract("S{x}S then S{y}S")
    assert none_parse is not None and none_parse.text == "S{y}S"  # its error gets reported


def test_extract_without_block() -> None:
    assert extract("I cannot do that") is None
    assert extract("S{$a:1") is None


def test_extract_cuts_an_unterminated_string_at_the_first_end_marker() -> None:
    found = extract('S{$a:"open}S')
    assert found is not None and found.text == 'S{$a:"open}S'
    with pytest.raises(ParseError, match="unterminated string"):
        parse(found.text)


def _spans_by_scanning(reply: str) -> list[tuple[int, int]]:
    """The specification of block spans, character by character (quadratic)."""
    spans: list[tuple[int, int]] = []
    search_from = 0
    while (start := reply.find("S{", search_from)) >= 0:
        end, in_string = -1, False
        for pos in range(start + 2, len(reply)):
            if reply[pos] == '"':
                in_string = not in_string
            elif not in_string and reply.startswith("}S", pos):
                end = pos + 2
                break
        if end < 0:
            plain = reply.find("}S", start + 2)
            if plain < 0:
                break
            end = plain + 2
        spans.append((start, end))
        search_from = end
    return spans


@settings(max_examples=300)
@given(st.text(alphabet='S{}"x', max_size=40))
def test_block_spans_match_the_character_scan(reply: str) -> None:
    from plsp.syntax import block_spans

    assert block_spans(reply) == _spans_by_scanning(reply)


@pytest.mark.timeout(60)  # a hang guard, not a timing assertion: the old code took minutes
def test_extract_stays_fast_on_adversarial_replies() -> None:
    # Unclosed strings used to make every block rescan to the end: 120 kB took minutes.
    assert extract('S{"}S"' * 20_000) is not None


@pytest.mark.timeout(60)  # a hang guard, not a timing assertion: the old code took minutes
def test_resolving_long_reference_chains_stays_fast() -> None:
    # Every variable used to rebuild the mapping and re-walk its chain: a 5000-link
    # chain took minutes to verify.
    size = 20_000
    block = parse("S{" + ";".join(f"$a{i}:$a{i + 1}" for i in range(size)) + f";$a{size}:7}}S")
    assert all(block.resolve(Ref(f"a{i}")) == Num("7") for i in range(size + 1))


def test_circular_references_name_the_circle() -> None:
    block = parse("S{$z:$c;$c:$d;$d:$c}S")
    for name in "zcd":
        with pytest.raises(KeyError, match=r"circular reference \$c -> \$d -> \$c"):
            block.resolve(Ref(name))
    assert block.variables == {"z": Ref("c"), "c": Ref("d"), "d": Ref("c")}
    block.variables.clear()  # a copy: the block is unchanged
    assert len(block.variables) == 3


def test_python_values_of_numbers_beyond_json_stay_text() -> None:
    assert Num("42").python() == 42 and Num("2.5").python() == 2.5
    huge = "9" * 5000  # beyond Python's int digit limit: int() would raise
    assert Num(huge).python() == huge
    assert Num("1" * 400 + ".5").python() == "1" * 400 + ".5"  # float would be inf
    assert Str("x").python() == "x"

"""Issue 20 (front end) and issue 21 item 2: programs the grammar admits are accepted, and
every refusal names its rule, a help line and — where it is mechanical — a fix.

Each synthetic example below failed on the code before issue 20."""

from __future__ import annotations

from pathlib import Path

import pytest

from openprose.codes import CODES, GUIDANCE
from openprose.diagnostics import Severity

from .conftest import Check

ROOT = Path(__file__).resolve().parents[3]


def codes(found: list) -> list[tuple[str, int, int]]:
    return [(d.code, d.line, d.column) for d in found]


# --- the checker bugs of issue 20 -------------------------------------------------------------


def test_item1_inline_prompt_plus_prompt_property_is_admitted(checked: Check) -> None:
    source = 'session "Check X"\n  prompt: """\nLook at X carefully.\n"""\n'
    assert checked(source) == []


def test_item2_named_try_is_a_parallel_branch(checked: Check) -> None:
    source = (
        'parallel:\n  a = session "A"\n  b = try:\n    session "B"\n  catch:\n'
        '    session "fallback"\nsession "Join"\n  context: { a, b }\n'
    )
    assert checked(source) == []


def test_item2_named_if_and_choice_are_branches_too(checked: Check) -> None:
    source = (
        'parallel:\n  a = if **the input is long enough**:\n    session "A"\n'
        '  b = choice **the best approach here**:\n    option "X":\n      session "X"\n'
        'session "Join"\n  context: { a, b }\n'
    )
    assert checked(source) == []


def test_item2_a_named_try_outside_parallel_is_still_an_error(checked: Check) -> None:
    found = checked('let x = session "a"\nx = try:\n  session "b"\ncatch:\n  session "c"\n')
    assert found and found[0].code == "E004"


def test_item3_quoted_enum_values_warn_with_a_fix(checked: Check) -> None:
    (found,) = checked('session "Flaky"\n  retry: 3\n  backoff: "exponential"\n')
    assert (found.code, found.line, found.column) == ("W170", 3, 12)
    assert found.fix is not None and found.fix.edits[0].text == "exponential"


def test_item3_fmt_writes_quoted_enums_bare() -> None:
    from openprose.formatter import format_source
    from openprose.parser import parse_text

    text = 'agent a:\n  model: "opus"\n  permissions:\n    bash: "deny"\nsession: a\n'
    assert format_source(parse_text(text)) == (
        "agent a:\n  model: opus\n  permissions:\n    bash: deny\nsession: a\n"
    )


def test_item4_checking_does_not_read_memory_from_disk(
    checked: Check, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    source = "agent a:\n  persist: user\nresume: a\n"
    assert codes(checked(source)) == [("I001", 3, 9)]  # deferred, whatever the disk holds
    source = 'agent a:\n  persist: "/nonexistent/memory"\nresume: a\n'
    assert codes(checked(source)) == [("I001", 3, 9)]


def test_item4_the_run_gate_leaves_memory_to_the_resume(tmp_path: Path) -> None:
    # a first run: the program creates the memory before it resumes; nothing on disk yet
    from openprose.checker import diagnose
    from openprose.parser import parse_text

    source = 'agent a:\n  persist: project\nsession: a\n  prompt: "x"\nresume: a\n'
    assert [d for d in diagnose(parse_text(source), tmp_path) if d.is_error] == []
    source = 'agent a:\n  persist: project\nresume: a\n  prompt: "x"\n'
    assert [d for d in diagnose(parse_text(source), tmp_path) if d.is_error] == []


def test_item5_input_as_a_block_parameter(checked: Check) -> None:
    source = (
        'block review(input):\n  session "Review {input}"\n    context: input\ndo review("x")\n'
    )
    assert checked(source) == []


def test_item5_runs_of_quotes_inside_triple_quoted_text(checked: Check) -> None:
    from openprose.parser import parse_text

    source = 'session """\nHe said ""quoted"" and "done""""\nsession "next"\n'
    assert checked(source) == []
    first = parse_text(source).program.body[0]
    assert first.prompt.value == 'He said ""quoted"" and "done"'  # type: ignore[union-attr]


def test_item6_bare_session_with_prompt_property_is_E003_with_a_fix(checked: Check) -> None:
    (found,) = checked('session\n  prompt: "Do it"\n')
    assert (found.code, found.line, found.column) == ("E003", 1, 1)
    assert "session" in found.help and found.fix is not None


def test_item7_brace_groups_that_are_not_identifiers_are_literal(checked: Check) -> None:
    source = (
        'session """\nReturn { token, granted } or {"a": 1} or { "k": [1, 2] } or {}.\n"""\n'
        'session "{ x }, {x y}, {1}, {-x}"\n'
    )
    assert checked(source) == []


def test_item7_an_identifier_in_braces_is_an_interpolation(checked: Check) -> None:
    (found,) = checked('session "Return {token}"\n')
    assert found.code == "E141" and found.fix is not None
    assert found.fix.edits[0].text == "\\"  # escaped: \{token}


def test_E141_a_misspelt_name_gets_the_rename_as_its_unsafe_fix(checked: Check) -> None:
    (found,) = checked('let draft = session "a"\nsession "Use {drfat}"\n')
    assert "did you mean `draft`?" in found.message
    assert found.fix is not None and not found.fix.safe
    assert [e.text for e in found.fix.edits] == ["draft"]
    assert "`\\{drfat}` if the braces are meant as literal text" in found.help


def test_E141_a_placeholder_only_alike_a_name_gets_the_escape_as_its_unsafe_fix(
    checked: Check,
) -> None:
    source = 'let project_status = session "a"\nsession "Report on {project_title}"\n'
    (found,) = checked(source)
    assert "did you mean `project_status`?" in found.message
    assert found.fix is not None and not found.fix.safe
    assert [e.text for e in found.fix.edits] == ["\\"]  # \{project_title}: literal text
    assert found.help.startswith("write `project_status`, or `\\{project_title}`")


# --- messages that teach (issue 21 item 2) ------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "word", "guess"),
    [
        ('sesion "Hello"\n', "sesion", "session"),
        ('paralel:\n  session "a"\n  session "b"\n', "paralel", "parallel"),
        ('sesion: critic\n  prompt: "x"\n', "sesion", "session"),
        ('repaet 3:\n  session "a"\n', "repaet", "repeat"),
        ("thorw\n", "thorw", "throw"),
        ('iff **the thing holds**:\n  session "a"\n', "iff", "if"),
    ],
)
def test_unknown_statement_names_the_intended_keyword(
    checked: Check, source: str, word: str, guess: str
) -> None:
    found = checked(source)
    assert len(found) == 1, codes(found)  # one diagnostic, not a cascade from its block
    (d,) = found
    assert d.message == f"unknown statement `{word}` (did you mean `{guess}`?)"
    assert (d.line, d.column, d.end_column) == (1, 1, 1 + len(word))  # the caret on the typo
    assert d.fix is not None and not d.fix.safe and d.fix.edits[0].text == guess


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('session "a"\n  promt: "b"\n', "did you mean `prompt`?"),
        ("agent a:\n  modle: opus\n", "did you mean `model`?"),
        ("agent a:\n  model: sonet\n", "did you mean `sonnet`?"),
        ('session "a"\n  backoff: exponental\n', "did you mean `exponential`?"),
        ("agent a:\n  permissions:\n    netwrok: allow\n", "did you mean `network`?"),
        ('loop untill **the work is done**:\n  session "a"\n', "did you mean `until`?"),
        ('let draft = session "a"\nsession "b"\n  context: drfat\n', "did you mean `draft`?"),
    ],
)
def test_misspelled_words_name_the_likely_intended_word(
    checked: Check, source: str, expected: str
) -> None:
    assert any(expected in d.message for d in checked(source)), codes(checked(source))


def test_empty_block_body_points_at_the_unindented_line(checked: Check) -> None:
    (found,) = checked('repeat 3:\nsession "a"\n')
    assert (found.code, found.severity, found.line, found.column) == (
        "W100",
        Severity.WARNING,
        2,
        1,
    )
    assert "repeat" in found.message and "line 2" in found.message


def test_E008_says_how_to_map_an_alias_to_any_model(checked: Check) -> None:
    (found,) = checked("agent a:\n  model: gpt-4.1\n")
    assert found.code == "E008" and "`gpt-4.1`" in found.message
    assert "--model sonnet=gpt-4.1" in found.help and "prose.toml" in found.help
    (found,) = checked('session "a"\n  model: claude-sonnet-4-5\n')
    assert found.code == "E008" and "--model sonnet=claude-sonnet-4-5" in found.help


def test_model_id_with_a_dot_is_E008_not_an_unexpected_token(checked: Check) -> None:
    for model in ("gpt-4.1", "openai:gpt-4o", "claude-3.5-sonnet"):
        (found,) = checked(f"agent a:\n  model: {model}\n")
        assert (found.code, found.column, found.end_column) == ("E008", 10, 10 + len(model))


def test_legacy_import_is_E123_with_its_use_rewrite(checked: Check) -> None:
    (found, *rest) = checked('import "web-search" from "github:anthropic/skills"\n')
    assert found.code == "E123" and not [d for d in rest if d.is_error]
    assert found.fix is not None
    assert found.fix.edits[0].text == 'use "github:anthropic/skills/web-search"'


# --- every error names its rule and a fix -------------------------------------------------------


def test_every_error_and_warning_code_has_a_rule_and_a_help_line() -> None:
    for code, entry in CODES.items():
        if entry.severity is Severity.ERROR or code in GUIDANCE:
            guide = GUIDANCE[code]
            assert guide.rule and guide.help, code


def test_every_diagnostic_on_a_corpus_carries_rule_and_help(checked: Check) -> None:
    corpus = sorted((ROOT / "tests/openprose/conformance").rglob("*.prose"))
    seen = 0
    for path in corpus:
        for d in checked(path.read_text(encoding="utf-8"), str(path)):
            seen += 1
            assert d.rule and d.help, (path.name, d.code, d.message)
    assert seen > 20


def test_json_output_has_rule_help_and_fix_edits(checked: Check) -> None:
    (found,) = checked('session "x"\n  backoff: "linear"\n')
    data = found.to_dict()
    assert (
        data["rule"].startswith("Syntax Grammar") and data["help"] == "write linear without quotes"
    )
    (edit,) = data["fix"]["edits"]
    assert (edit["line"], edit["column"], edit["end_column"], edit["text"]) == (2, 12, 20, "linear")
    assert data["fix"]["safe"] is True


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("agent researcher:\n  model: opus\nsession: reseacher\n", "did you mean `researcher`?"),
        ('block review:\n  session "a"\ndo reveiw\n', "did you mean `review`?"),
        (
            'use "@a/research" as research\nlet r = reserch(topic: "x")\n',
            "did you mean `research`?",
        ),
    ],
)
def test_misspelled_definitions_name_the_intended_one(
    checked: Check, source: str, expected: str
) -> None:
    assert any(expected in d.message for d in checked(source)), codes(checked(source))


@pytest.mark.parametrize(
    ("source", "code", "replacement"),
    [
        ('agent a:\n  skills: "web-search"\n', "E013", '["web-search"]'),
        ('session: "Do it"\n', "E004", ""),
        ('session "a"\n  retry: "3"\n', "E164", "3"),
        ('repeat "2":\n  session "a"\n', "E157", "2"),
        ('loop (max: "4"):\n  session "a"\n', "E160", "4"),
        ('parallel (first):\n  session "a"\n', "E152", '"first"'),
        ('parallel (on-fail: ignore):\n  session "a"\n', "E153", '"ignore"'),
        ('session "Don\\\'t"\n', "E002", "'"),
    ],
)
def test_mechanical_mistakes_carry_a_safe_fix(
    checked: Check, source: str, code: str, replacement: str
) -> None:
    (found,) = [d for d in checked(source) if d.is_error]
    assert found.code == code and found.fix is not None and found.fix.safe
    assert found.fix.edits[0].text == replacement


def test_a_name_close_to_a_keyword_may_still_start_a_pipeline(checked: Check) -> None:
    source = 'let dos = ["a"]\ndos\n  | map:\n    session "x"\n      context: item\n'
    assert checked(source) == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('parallel (on_fail: "continue"):\n  session "a"\n', "did you mean `on-fail`?"),
        ('parallel ("any", cout: 1):\n  session "a"\n', "did you mean `count`?"),
        ('loop (mx: 3):\n  session "a"\n', "did you mean `max`?"),
        ('for x inn ["a"]:\n  session "a"\n', "did you mean `in`?"),
    ],
)
def test_misspelled_modifiers_and_keywords(checked: Check, source: str, expected: str) -> None:
    assert any(expected in d.message for d in checked(source)), codes(checked(source))


@pytest.mark.parametrize(
    ("source", "word", "guess", "column"),
    [
        ('let x = sesion "a"\n', "sesion", "session", 9),
        ('parallel:\n  b = sesion: critic\n    prompt: "x"\n', "sesion", "session", 7),
        ('let r = paralel:\n  session "q"\n', "paralel", "parallel", 9),
        ('output o = sesion "a"\n', "sesion", "session", 12),
    ],
)
def test_misspelled_keyword_on_the_right_of_equals(
    checked: Check, source: str, word: str, guess: str, column: int
) -> None:
    found = [d for d in checked(source) if d.is_error]
    assert [(d.code, d.column) for d in found] == [("E004", column)]
    assert found[0].message == f"unknown keyword `{word}` (did you mean `{guess}`?)"


def test_names_close_to_keywords_stay_names_in_headers(checked: Check) -> None:
    source = (
        'let loops = ["a"]\nfor l in loops:\n  session "x"\n'
        'let dos = ["b"]\nparallel for d in dos:\n  session "{d}"\n'
    )
    assert checked(source) == []


def test_program_call_arguments_as_the_grammar_writes_them(checked: Check) -> None:
    # programCall → IDENTIFIER "(" ( IDENTIFIER ":" expression )* ")": no separator required
    from openprose.parser import parse_text

    source = 'use "@a/research" as research\nlet r = research(topic: "a" depth: "b")\n'
    assert [d for d in checked(source) if d.is_error] == []
    call = parse_text(source).program.body[1].value  # type: ignore[union-attr]
    assert [a.name.id for a in call.args] == ["topic", "depth"]


def test_a_late_input_that_interpolates_earlier_results_is_not_moved(checked: Check) -> None:
    # published "user checkpoint" style: the question shows what ran before it, so moving the
    # input to the top would read names before they are bound: the move escapes them, which
    # changes the text asked (an unsafe fix, issue 36)
    source = 'let plan = session "Plan"\ninput ok: """\n  Approve {plan}?\n"""\n'
    (found,) = [d for d in checked(source) if d.code == "E022"]
    assert found.fix is not None and not found.fix.safe
    assert found.fix.edits[0].text == 'input ok: """\n  Approve \\{plan}?\n"""\n'
    plain = 'let plan = session "Plan"\ninput ok: "Approve the plan?"\n'
    (movable,) = [d for d in checked(plain) if d.code == "E022"]
    assert movable.fix is not None and movable.fix.safe


def test_a_moved_input_keeps_the_inputs_declared_before_it(checked: Check) -> None:
    # an input above the new place is asked before it: `{topic}` stays a reference; the
    # result `plan` and the input `late` (declared below the new place) are escaped
    source = (
        'input topic: "The topic"\nlet plan = session "Plan {topic}"\ninput late: "A"\n'
        'input ok: "Approve {plan} and {late} about {topic}?"\n'
    )
    moved = [d for d in checked(source) if d.code == "E022"][-1]
    assert moved.fix is not None
    assert moved.fix.edits[0].text == ('input ok: "Approve \\{plan} and \\{late} about {topic}?"\n')


def test_a_block_of_file_lines_under_context_is_one_error_with_the_names_fix(
    checked: Check,
) -> None:
    from openprose.fixes import fix_source
    from openprose.source import SourceFile

    source = (
        'const a = "a.md"\nconst b = "b.md"\nsession "Improve"\n  context:\n'
        "    file: a\n    file: b\n"
    )
    (found,) = checked(source)
    assert (found.code, found.line) == ("E143", 5) and "block" in found.message
    assert found.fix is not None and not found.fix.safe
    fixed = fix_source(SourceFile.from_text(source), unsafe=True).text
    assert fixed.endswith('session "Improve"\n  context: [a, b]\n')
    (literal,) = checked('session "x"\n  context:\n    file: "a.md"\n')
    assert literal.code == "E143" and literal.fix is None


def test_block_modifiers_take_max_depth_only(checked: Check) -> None:
    assert checked('block f(x) (max_depth: 50):\n  session "x"\ndo f("a")\n') == []
    found = checked('block f (max_depth: 0, depth: 2):\n  session "x"\ndo f\n')
    assert [d.code for d in found] == ["E168", "E168"]

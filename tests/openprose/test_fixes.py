"""`openprose.fixes`: edits as data, applied in passes — and the published-style corpora.

The fuzz tests build programs from statements that break a stated rule in a fixable way (and
clean ones, and comments) and check that fixing them leaves a program that parses and checks
with no error, keeps every comment, and is a fixed point."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from openprose.compiler import compile_program
from openprose.diagnostics import Edit, Fix
from openprose.fixes import apply_edits, fix_source, select
from openprose.formatter import format_source
from openprose.parser import parse_text
from openprose.scanner import KEYWORDS
from openprose.source import SourceFile

ROOT = Path(__file__).resolve().parents[2]


def _errors_in(path: Path) -> bool:
    from openprose.checker import check

    return any(d.is_error for d in check(parse_text(path.read_text(encoding="utf-8"))))


CONFORMANCE = ROOT / "tests" / "openprose" / "conformance"
FIXABLE = sorted((CONFORMANCE / "fixable").glob("*.prose"))
# Every example program in the repository, and the reference's blocks that are whole programs
# (the others are fragments that use names declared in another block, or schematics).
CLEAN = sorted(
    [
        *(ROOT / "examples").rglob("*.prose"),
        *(CONFORMANCE / "published_style").glob("*.prose"),
        *(
            path
            for path in (CONFORMANCE / "reference_examples").glob("*.prose")
            if not _errors_in(path)
        ),
    ]
)


def fix(text: str, path: str = "<string>", **options: object) -> str:
    return fix_source(SourceFile.from_text(text, path), **options).text  # type: ignore[arg-type]


def errors(text: str) -> list[str]:
    from openprose.checker import check

    return [d.code for d in check(parse_text(text)) if d.is_error]


# --- the engine --------------------------------------------------------------------------------


def _edit(text: str, start: int, end: int, new: str) -> Edit:
    return Edit(SourceFile.from_text(text).span(start, end), new)


def test_edits_apply_from_the_end_and_keep_everything_else() -> None:
    text = "abcdef"
    edits = [_edit(text, 0, 1, "X"), _edit(text, 3, 3, "--"), _edit(text, 5, 6, "")]
    assert apply_edits(text, edits) == "Xbc--de"


def test_overlapping_fixes_wait_for_the_next_pass() -> None:
    from openprose.codes import diagnostic

    text = "abcdef"
    span = SourceFile.from_text(text).span(0, 1)
    first = Fix("a", (_edit(text, 1, 3, "x"),))
    second = Fix("b", (_edit(text, 2, 4, "y"),))
    same_point = Fix("c", (_edit(text, 3, 3, "z"),))
    unsafe = Fix("d", (_edit(text, 5, 6, "w"),), safe=False)
    found = [diagnostic("E004", "m", span, "p", fix=f) for f in (first, second, same_point, unsafe)]
    assert select(found) == [first]
    assert select(found, unsafe=True) == [first, unsafe]


def test_unsafe_fixes_apply_only_when_asked() -> None:
    assert fix('sesion "Hello"\n') == 'sesion "Hello"\n'
    assert fix('sesion "Hello"\n', unsafe=True) == 'session "Hello"\n'


def test_fixes_that_need_a_second_pass_are_applied() -> None:
    # two names in the same branches: both declarations go before the `if`, one per pass
    text = (
        'if **the input is long**:\n  let a = session "x"\n  let b = session "y"\n'
        'else:\n  let a = session "z"\n  let b = session "w"\n'
    )
    fixed = fix(text)
    assert errors(fixed) == []
    assert fixed.startswith(('let a = ""\nlet b = ""\nif', 'let b = ""\nlet a = ""\nif'))


def test_const_in_branches_gets_help_but_no_fix() -> None:
    text = 'if **the input is long**:\n  const a = session "x"\nelse:\n  const a = session "y"\n'
    assert fix(text) == text
    assert errors(text) == ["E019"]


def test_a_declaration_cannot_be_moved_into_a_parallel_block() -> None:
    # an `if` that is a parallel branch: a `let` before it would be one more branch
    text = (
        'parallel:\n  if **the input is long**:\n    let a = session "x"\n  else:\n'
        '    let a = session "y"\n'
    )
    assert fix(text) == text


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_a_backslash_ending_a_line_of_a_prompt_is_kept_by_the_unsafe_fix(newline: str) -> None:
    # A shell command continued over lines inside a `"""` prompt: `\` + line break is no
    # escape of the grammar (E002, said in words), and doubling the backslash keeps the text.
    text = 'session """\nRun:\n  make test \\\n    --verbose\n"""\n'.replace("\n", newline)
    from openprose.checker import check

    (found,) = check(parse_text(text))
    assert found.code == "E002" and "a backslash ending a line" in found.message
    assert found.fix is not None and not found.fix.safe
    assert fix(text) == text
    fixed = fix(text, unsafe=True)
    assert errors(fixed) == []
    assert parse_text(fixed).program.body[0].prompt.value == "Run:\n  make test \\\n    --verbose\n"


def test_a_dash_list_keeps_every_comment_of_its_lines() -> None:
    text = 'agent a:\n  skills:  # house\n    - "x"  # one\n    - y  # two\n  prompt: "p"\n'
    assert errors(text) == ["E013"]
    fixed = 'agent a:\n  # house\n  # one\n  skills: ["x", "y"]  # two\n  prompt: "p"\n'
    assert fix(text) == fixed


def test_a_permission_rule_written_as_a_dash_list_reads_its_items_as_text() -> None:
    text = 'agent a:\n  permissions:\n    read:\n      - "*.md"\n      - docs/**\n'
    assert errors(text) == ["E004"]  # one, not one per `-` and one for the `**`
    assert fix(text) == 'agent a:\n  permissions:\n    read: ["*.md", "docs/**"]\n'


@pytest.mark.parametrize(
    "text",
    [
        'session "x"\n  prompt:\n    - Do this\n',  # a prompt is one text
        "agent a:\n  skills:\n    - name: web\n",  # a YAML mapping, not a list
    ],
)
def test_dash_lines_that_are_no_list_get_no_list_fix(text: str) -> None:
    assert fix(text) == text
    assert errors(text)


def test_folded_yaml_text_is_rewritten_only_as_an_unsafe_fix() -> None:
    # `>` folds lines into one; the rewrite keeps the line breaks, which the model then sees
    text = 'session "x"\n  prompt: >\n    Review the diff\n    carefully.\n  context: []\n'
    assert errors(text) == ["E004"]
    assert fix(text) == text
    fixed = 'session "x"\n  prompt: """\nReview the diff\ncarefully.\n"""\n  context: []\n'
    assert fix(text, unsafe=True) == fixed


def test_yaml_text_swallowing_a_triple_quote_is_left_to_the_other_errors() -> None:
    text = 'agent a:\n  prompt: |\n    say """hi\n  model: sonnet\n'
    assert "yaml" not in " ".join(d.lower() for d in _messages(text))


def _messages(text: str) -> list[str]:
    from openprose.checker import check

    return [d.message for d in check(parse_text(text))]


def test_a_property_block_that_is_no_dash_list_is_read_as_before() -> None:
    # a `- item` line among `key: value` lines: not a list; the lines keep their own errors
    text = 'agent a:\n  permissions:\n    read: ["*.md"]\n    - x\n'
    assert "E013" not in errors(text)


# --- the conformance corpora -------------------------------------------------------------------


@pytest.mark.parametrize("path", FIXABLE, ids=lambda p: p.name)
def test_fixable_programs_are_fixed_as_expected(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert errors(text) or {"W156", "W170"} & {d.code for d in _all(text)}
    fixed = fix(text, str(path))
    assert fixed == path.with_suffix(".expected").read_text(encoding="utf-8")
    assert errors(fixed) == []
    assert [d.code for d in _all(fixed) if d.fix is not None] == []
    assert fix(fixed, str(path)) == fixed  # idempotent
    assert _comments(fixed) == _comments(text)
    # round-trips through fmt and compile
    parsed = parse_text(fixed)
    formatted = format_source(parsed)
    assert parse_text(formatted).program == parsed.program
    assert errors(formatted) == []
    compile_program(parsed.program)


@pytest.mark.parametrize("path", CLEAN, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fix_is_a_no_op_on_every_example_in_the_repo(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert fix(text, str(path)) == text


@pytest.mark.parametrize(
    "path", sorted((CONFORMANCE / "published_style").glob("*.prose")), ids=lambda p: p.name
)
def test_published_style_programs_check_without_error(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert errors(text) == []
    assert errors(text.replace("\n", "\r\n")) == []
    formatted = format_source(parse_text(text))
    assert errors(formatted) == []


def _all(text: str) -> list:
    from openprose.checker import check

    return check(parse_text(text))


def _comments(text: str) -> list[str]:
    return [c.text for c in parse_text(text).program.comments]


# --- fuzz -------------------------------------------------------------------------------------

_words = st.from_regex(r"[a-z][a-z0-9]{0,5}", fullmatch=True).filter(lambda w: w not in KEYWORDS)
_texts = st.text(alphabet="abcXYZ .,!?-", min_size=1, max_size=16).map(str.strip).filter(bool)


def _fragment(index: int) -> st.SearchStrategy[str]:
    """One statement (several lines) — clean, or breaking a rule in a fixable way. Names
    carry ``index`` so fragments never collide with each other."""
    return st.one_of(
        _texts.map(lambda t: f'session "{t}"'),
        _texts.map(lambda t: f"# {t}"),
        _texts.map(lambda t: f'session """{t}\nmore {t}\n"""'),
        _words.map(lambda w: f'session """\nJSON: {{"k": {{zz{index}{w}}}}}\n"""'),
        _words.map(lambda w: f'import "{w}{index}" from "github:org/{w}"'),
        st.sampled_from(["linear", "none", "exponential"]).map(
            lambda b: f'session "go"\n  retry: 2\n  backoff: "{b}"'
        ),
        st.sampled_from(["sonnet", "opus", "haiku"]).map(
            lambda m: f'agent a{index}:\n  model: "{m}"'
        ),
        _texts.map(lambda t: f'session\n  prompt: "{t}"'),
        _texts.map(
            lambda t: (
                f'if **the case holds {t}**:\n  let v{index} = session "{t}"\n'
                f'else:\n  let v{index} = session "other"  # note'
            )
        ),
        _texts.map(
            lambda t: (
                f'for x{index} in ["{t}"]:\n  let u{index} = session "{t}"\nsession "{{u{index}}}"'
            )
        ),
        # habits from YAML and other languages (docs/decisions.md, "Conformance (programs,
        # session 13)")
        _words.map(
            lambda w: f'agent b{index}:\n  model: sonnet\n  skills:\n    - "{w}"  # c\n    - {w}-x'
        ),
        _texts.map(
            lambda t: f"agent y{index}:\n  prompt: |\n    {t}\n      more {t}\n  model: opus"
        ),
        _texts.map(lambda t: f'agent s{index}:\n  model: sonnet\nsession "{t}": s{index}'),
        st.sampled_from(["false", "true", "null"]).map(lambda v: f"let f{index} = {v}"),
        _texts.map(lambda t: f'repeat 2 times:\n  session "{t}"'),
        _texts.map(lambda t: f'for each e{index} in ["{t}"]:\n  session "{t}"'),
        _texts.map(lambda t: f'while **the case {t} holds**:\n  session "{t}"'),
        _texts.map(lambda t: f'if **a {t}**:\n  session "a"\nelse if **b {t}**:\n  session "b"'),
        _texts.map(lambda t: f'try:\n  session "{t}"\ncatch e{index}:\n  session "{t}"'),
        _texts.map(lambda t: f"session '{t}'  // {t}"),
        _texts.map(
            lambda t: (
                f'if **x {t}**:\n  output o{index} = session "a"\nelse:\n'
                f'  output o{index} = session "b"'
            )
        ),
        _texts.map(
            lambda t: (
                f'block bk{index}(p, q):\n  session "{{p}} {{q}}"\ndo bk{index}(q: "{t}", p: "x")'
            )
        ),
        _texts.map(
            lambda t: f'let c{index} = session "{t}"\nsession "x"\n  context: c{index}, c{index}'
        ),
    )


@st.composite
def _programs(draw: st.DrawFn) -> str:
    count = draw(st.integers(min_value=1, max_value=6))
    lines: list[str] = []
    for index in range(count):
        statement = draw(_fragment(index))
        if draw(st.booleans()) and not statement.startswith(("import", "agent", "block")):
            statement = "do:\n" + "\n".join(
                "  " + line if line else line for line in statement.split("\n")
            )
            # a multi-line string's own lines must not move: undo the indent inside it
            statement = _unindent_strings(statement)
        lines.append(statement)
    return "\n".join(lines) + "\n"


def _unindent_strings(text: str) -> str:
    out, inside = [], False
    for line in text.split("\n"):
        if inside and line.startswith("  "):
            line = line[2:]
        if line.count('"""') == 1:
            inside = not inside
        out.append(line)
    return "\n".join(out)


FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(_programs())
def test_fixing_fixable_errors_gives_a_valid_program(text: str) -> None:
    from openprose.checker import check

    found = check(parse_text(text))
    assume(all(d.fix is not None and d.fix.safe for d in found if d.is_error))
    result = fix_source(SourceFile.from_text(text))
    assert parse_text(result.text).ok, result.text
    assert [d.code for d in result.remaining if d.is_error] == [], result.text
    assert [d.code for d in result.remaining if d.fix is not None] == [], result.text
    assert _comments(result.text) == _comments(text)
    assert fix(result.text) == result.text
    formatted = format_source(parse_text(result.text))
    assert errors(formatted) == []


@FUZZ
@given(
    st.sampled_from(CLEAN),
    st.integers(min_value=0),
    st.sampled_from(
        [
            'session """x',
            "let = 1",
            'sesion "a"',
            "if **c**:",
            '  backoff: "linear"',
            "{",
            'import "a"',
        ]
    ),
)
def test_fixing_never_adds_syntax_errors(path: Path, at: int, line: str) -> None:
    lines = path.read_text(encoding="utf-8").split("\n")
    lines.insert(at % (len(lines) + 1), line)
    text = "\n".join(lines)
    before = [d for d in parse_text(text).diagnostics if d.is_error]
    result = fix_source(SourceFile.from_text(text), unsafe=True)
    after = [d for d in parse_text(result.text).diagnostics if d.is_error]
    assert len(after) <= len(before)

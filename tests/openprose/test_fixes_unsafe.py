"""The unsafe fixes for refusals with a mechanical answer (issue 36), on programs written as
people write them (`conformance/unsafe_fixable/`, several of each shape): an `input` asked
midway, `{ key: value }` data, a file path as context, a block's names used outside it, a
name bound twice. Each program is fixed as its `.expected` says, checks with no error, and
`prose compile` of each pass's result keeps every statement the pass did not edit."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openprose import nodes as n
from openprose.checker import check
from openprose.compiler import compile_program
from openprose.diagnostics import Diagnostic
from openprose.fixes import apply_edits, fix_source, select
from openprose.parser import parse_text
from openprose.source import SourceFile

HERE = Path(__file__).parent
CORPUS = sorted((HERE / "conformance" / "unsafe_fixable").glob("*.prose"))
# Every shape of the issue has programs here (the file names start with the shape).
SHAPES = ("input-", "data-", "files-", "block-", "twice-")


def _check(text: str) -> list[Diagnostic]:
    return check(parse_text(text))


def _statements(text: str) -> list[str]:
    """Each top-level statement of ``text`` as `prose compile` writes it."""
    program = parse_text(text).program
    found: list[str] = []
    for stmt in program.body:
        assert not isinstance(stmt, n.Invalid), stmt
        found.append(compile_program(n.Program(span=program.span, body=(stmt,))))
    return found


def _untouched(text: str, edits: list[tuple[int, int]]) -> list[str]:
    """The compiled statements of ``text`` that no edit range touches (a statement the
    parser rejected is always touched: a fix rewrites it)."""
    program = parse_text(text).program
    kept: list[str] = []
    for stmt in program.body:
        start, end = stmt.span.start, stmt.span.end
        if any(a <= end and start <= b for a, b in edits) or isinstance(stmt, n.Invalid):
            continue
        kept.append(compile_program(n.Program(span=program.span, body=(stmt,))))
    return kept


def _is_subsequence(part: list[str], whole: list[str]) -> bool:
    remaining = iter(whole)
    return all(any(item == other for other in remaining) for item in part)


def test_every_shape_has_several_programs() -> None:
    for shape in SHAPES:
        assert len([p for p in CORPUS if p.name.startswith(shape)]) >= 3, shape


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_the_unsafe_fix_gives_the_expected_clean_program(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    errors = [d for d in _check(text) if d.is_error]
    # every fix is unsafe (an error without one is answered by another's: a moved input)
    assert errors and all(d.fix is None or not d.fix.safe for d in errors)
    assert any(d.fix is not None for d in errors)
    assert fix_source(SourceFile.from_text(text)).text == text  # nothing safe to do
    fixed = fix_source(SourceFile.from_text(text), unsafe=True).text
    assert fixed == path.with_suffix(".expected").read_text(encoding="utf-8")
    assert [d.code for d in _check(fixed) if d.is_error] == []
    assert [d for d in _check(fixed) if d.fix is not None] == []
    assert fix_source(SourceFile.from_text(fixed), unsafe=True).text == fixed
    comments = [c.text for c in parse_text(text).program.comments]
    assert [c.text for c in parse_text(fixed).program.comments] == comments


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_each_pass_keeps_every_statement_it_does_not_edit(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    for _ in range(10):
        fixes = select(_check(text), unsafe=True)
        if not fixes:
            break
        edits = [e for f in fixes for e in f.edits]
        after = apply_edits(text, edits)
        kept = _untouched(text, [(e.span.start, e.span.end) for e in edits])
        assert _is_subsequence(kept, _statements(after)), after
        text = after
    assert compile_program(parse_text(text).program)


def test_a_renamed_binding_still_reads_the_earlier_value() -> None:
    text = (
        'output plan = session "Plan"\n'
        'let plan = session "Plan again"\n  context: plan\n'
        'session "Do {plan}"\n'
    )
    fixed = fix_source(SourceFile.from_text(text), unsafe=True).text
    assert fixed == (
        'output plan = session "Plan"\n'
        'let plan_2 = session "Plan again"\n  context: plan\n'
        'session "Do {plan_2}"\n'
    )


def test_a_rename_never_takes_a_name_in_use_and_skips_agent_references() -> None:
    text = (
        'agent plan:\n  model: sonnet\nlet plan_2 = session "x"\n'
        'let plan = session: plan\n  prompt: "Go"\nsession "{plan} {plan_2}"\n'
    )
    fixed = fix_source(SourceFile.from_text(text), unsafe=True).text
    assert "let plan_3 = session: plan\n" in fixed
    assert 'session "{plan_3} {plan_2}"' in fixed


def test_a_name_used_in_a_block_body_is_not_renamed() -> None:
    # which binding the block reads depends on where it is called: no mechanical answer
    text = (
        'let plan = session "a"\nlet plan = session "b"\n'
        'block show():\n  session "{plan}"\ndo show()\n'
    )
    (e019,) = [d for d in _check(text) if d.code == "E019"]
    assert e019.fix is None


def test_a_block_result_read_by_name_binds_the_bare_call() -> None:
    # the block's last statement binds `summary`, so its value is the block's: binding the
    # call gives the program the name it reads (renamed, as a block's names are flat too)
    text = (
        'block digest(topic):\n  let summary = session "Summarize {topic}"\n'
        'do digest("tides")\nsession "Share {summary}"\n'
    )
    (e141,) = [d for d in _check(text) if d.is_error]
    assert e141.fix is not None and not e141.fix.safe
    assert [e.text for e in e141.fix.edits] == ["let summary = "]
    fixed = fix_source(SourceFile.from_text(text), unsafe=True).text
    assert fixed.endswith('let summary_2 = do digest("tides")\nsession "Share {summary_2}"\n')
    assert [d.code for d in _check(fixed) if d.is_error] == []


def test_a_binding_in_a_body_beside_the_first_is_not_renamed() -> None:
    # after the `if`, `verdict` is whichever branch ran: two names would split it
    text = (
        'if **the draft is long**:\n  output verdict = session "Shorten it"\nelse:\n'
        '  session "Log it"\n  if **the draft is empty**:\n    output verdict = session "Fill"\n'
    )
    (e024,) = [d for d in _check(text) if d.code == "E024"]
    assert e024.fix is None


def test_an_input_in_a_body_alone_leaves_the_body_empty_with_a_warning() -> None:
    text = 'let a = session "x"\nif **a is short**:\n  input more: "Extra detail"\nsession "y"\n'
    fixed = fix_source(SourceFile.from_text(text), unsafe=True).text
    assert fixed.startswith('input more: "Extra detail"\nlet a')
    assert [d.code for d in _check(fixed)] == ["W154"]


def test_the_data_fix_is_offered_only_where_a_value_is_bound() -> None:
    # inside `context:` the names-only rewrite stays the fix; a value with a session in it
    # has no mechanical answer
    text = 'let a = session "x"\nsession "y"\n  context: { draft: a, n: 3 }\n'
    (found,) = [d for d in _check(text) if d.is_error]
    assert found.fix is None
    text = 'let a = { s: session "x" }\n'
    (found,) = [d for d in _check(text) if d.is_error]
    assert found.fix is None


def test_keys_equal_to_their_names_become_a_context_object() -> None:
    text = 'let a = session "x"\nlet b = session "y"\noutput r = { a: a, b: b }\n'
    fixed = fix_source(SourceFile.from_text(text), unsafe=True).text
    assert fixed.endswith("output r = { a, b }\n")


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        (
            "let next = depth - 1",
            '`let next = session "Compute: depth - 1"` with `context: [depth]`',
        ),
        ("let all = notes + [extra]", "`context: [notes, extra]`"),
        ("x = count * 2", '`x = session "Compute: count * 2"`'),
        ("if depth > 3:", "`if **depth > 3**`"),
    ],
)
def test_operators_get_the_nearest_rewrite_in_their_help(line: str, shown: str) -> None:
    text = f'input depth: "n"\nlet notes = session "a"\nlet extra = session "b"\n{line}\n'
    text += '  session "z"\n' if line.endswith(":") else ""
    helps = [d.help for d in _check(text) if d.is_error]
    assert any(shown in h for h in helps), helps


def test_assert_is_explained_with_a_condition() -> None:
    (found,) = [d for d in _check('let x = session "a"\nassert x is long\n') if d.is_error]
    assert "`if **x is long does not hold**:`" in found.help
    assert found.fix is None


# --- every fixed program runs end to end --------------------------------------------------------


def _reply(api: str, body: dict[str, Any]) -> str:
    """Echo the prompt; a condition the evaluator is asked gets the JSON verdict it wants."""
    from tests.support.fake_llm_server import echo_reply

    text = echo_reply(api, body)
    return '{"verdict": true, "reason": "yes"}' if "Condition:" in text else text


@pytest.fixture(scope="module")
def model_server() -> Iterator[str]:
    """A loopback OpenAI-style server on its own thread's event loop, shared by the runs."""
    from tests.support.fake_llm_server import FakeLLMServer

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    server = FakeLLMServer(reply=_reply)
    base_url = asyncio.run_coroutine_threadsafe(server.start(), loop).result(timeout=30)
    try:
        yield base_url
    finally:
        asyncio.run_coroutine_threadsafe(server.close(), loop).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=30)
        loop.close()


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_the_fixed_program_runs_against_a_model_server(
    path: Path,
    model_server: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from openprose.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_BASE_URL", f"{model_server}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    monkeypatch.delenv("PROSE_PROVIDER", raising=False)
    program = tmp_path / path.name
    program.write_text(path.with_suffix(".expected").read_text(encoding="utf-8"))
    inputs = [
        f"--input={stmt.name.id}=some {stmt.name.id}"
        for stmt in parse_text(program.read_text()).program.body
        if isinstance(stmt, n.Input)
    ]
    code = main(["run", str(program), "--provider", "openai", "--json", *inputs])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Traceback" not in out + err
    assert json.loads(out)["status"] == "succeeded", out


# --- fuzz: programs mixing the shapes -----------------------------------------------------------

_texts = st.text(alphabet="abcXYZ .,!?-", min_size=1, max_size=12).map(str.strip).filter(bool)


def _shape(index: int) -> st.SearchStrategy[str]:
    """One statement of a shape above (names carry ``index``: shapes never share a name)."""
    v = f"v{index}"
    return st.one_of(
        _texts.map(
            lambda t: f'let {v} = session "{t}"\nlet {v} = session "{t}"\nsession "{{{v}}}"'
        ),
        _texts.map(lambda t: f'output {v} = session "{t}"\nlet {v} = session "x"\n  context: {v}'),
        _texts.map(lambda t: f'let {v} = session "{t}"\noutput o{index} = {{ a: "{t}", b: {v} }}'),
        _texts.map(lambda t: f'let {v} = {{ n: 1, items: ["{t}"] }}'),
        _texts.map(lambda t: f'session "{t}"\n  context: ["docs/{index}.md", "{t}"]'),
        _texts.map(
            lambda t: (
                f'block b{index}(p{index}):\n  session "{{p{index}}}"\nsession "{{p{index}}} {t}"'
            )
        ),
        _texts.map(
            lambda t: f'agent {v}:\n  model: sonnet\nfor {v} in ["{t}"]:\n  session "{{{v}}}"'
        ),
        _texts.map(lambda t: f'session "{t}"\ninput i{index}: "{t}"'),
        _texts.map(
            lambda t: f'if **the case {t} holds**:\n  input j{index}: "{t}"\n  session "go"'
        ),
        _texts.map(lambda t: f"# {t}"),
    )


@st.composite
def _mixed(draw: st.DrawFn) -> str:
    count = draw(st.integers(min_value=1, max_value=5))
    return "\n".join(draw(_shape(index)) for index in range(count)) + "\n"


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_mixed())
def test_unsafe_fixing_mixed_shapes_gives_a_clean_fixed_point(text: str) -> None:
    result = fix_source(SourceFile.from_text(text), unsafe=True)
    assert parse_text(result.text).ok, result.text
    assert [d.code for d in result.remaining if d.is_error] == [], result.text
    assert [d.code for d in result.remaining if d.fix is not None] == [], result.text
    assert fix_source(SourceFile.from_text(result.text), unsafe=True).text == result.text
    comments = [c.text for c in parse_text(text).program.comments]
    assert [c.text for c in parse_text(result.text).program.comments] == comments
    assert parse_text(compile_program(parse_text(result.text).program)).ok

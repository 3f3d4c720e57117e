"""PLSP blocks, instructions and replies as the seed prints them and as tools and models
write them (docs/decisions.md, "Conformance (protocol transcripts)").

transcripts/ holds the seed's own examples verbatim, one a line: its state blocks and its
IMF examples (the `INSTR:` line and the directive forms §3 lists without the prefix).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plsp.cli import main
from plsp.instr import parse_instr
from plsp.syntax import ParseError, extract, parse
from plsp.transcript import check_text
from plsp.verify import verify

HERE = Path(__file__).with_name("transcripts")
BLOCKS = HERE.joinpath("seed_blocks.txt").read_text(encoding="utf-8").splitlines()
INSTRUCTIONS = HERE.joinpath("seed_instructions.txt").read_text(encoding="utf-8").splitlines()

FRAMINGS: dict[str, Callable[[str], str]] = {
    "as printed": lambda t: t,
    "fenced": lambda t: f"```\n{t}\n```",
    "fenced with a language": lambda t: f"```plsp\n{t}\n```\n",
    "tilde fence": lambda t: f"~~~\n{t}\n~~~",
    "crlf and fenced": lambda t: f"```text\r\n{t}\r\n```\r\n",
    "bom": lambda t: "\ufeff" + t,
    "surrounding blank lines and tabs": lambda t: f"\n\t\n{t}\t\n\n",
}


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("framing", sorted(FRAMINGS))
@pytest.mark.parametrize("block", BLOCKS)
def test_the_seed_s_blocks_parse_however_they_are_framed(
    block: str, framing: str, capsys: pytest.CaptureFixture[str]
) -> None:
    canonical = parse(block).dumps()
    assert parse(FRAMINGS[framing](block)).dumps() == canonical
    code, out, err = _run(capsys, "parse", FRAMINGS[framing](block))
    assert (code, out, err) == (0, canonical + "\n", "")


@pytest.mark.parametrize("framing", sorted(FRAMINGS))
@pytest.mark.parametrize("instruction", INSTRUCTIONS)
def test_the_seed_s_instructions_parse_with_or_without_the_prefix(
    instruction: str, framing: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # The seed's IMF is illustrative ("not rigidly defined"): forms ours cannot apply are
    # passed through with a warning; none is an error.
    code, out, _ = _run(capsys, "parse", FRAMINGS[framing](instruction))
    assert code == 0
    assert out.startswith("INSTR:")
    canonical = parse_instr(instruction, passthrough=True, require_prefix=False).dumps()
    assert out == canonical + "\n"


def test_a_prefix_is_still_required_where_the_instruction_is_ours() -> None:
    with pytest.raises(ParseError, match="expected 'INSTR:'"):
        parse_instr("@set:$a=1;")
    assert parse_instr("@set:$a=1;", require_prefix=False).dumps() == "INSTR:@set:$a=1;"


def test_stdin_with_a_bom_and_crlf(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io
    import sys

    data = '\ufeffS{$t:75;\r\n >"Temp OK",$t;}S\r\n'.encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert _run(capsys, "parse", "-") == (0, 'S{$t:75;>"Temp OK",$t;}S\n', "")


@pytest.mark.parametrize(
    ("block", "says"),
    [
        (
            "S{$a:9e-1;}S",
            "column 6: numbers are digits[.digits], without an exponent: write 9e-1 as 0.9",
        ),
        ("S{$a:1E+3;}S", "write 1E+3 as 1000"),
        ("S{$a:1e400;}S", "write 1e400 in plain digits"),
        (
            "S{$a:true;}S",
            'true is not a PLSP value (values are strings, numbers and $variables): write "true" or 1',
        ),
        ("S{$a:null;}S", 'write ""'),
        ("S{$a:-1;}S", "numbers are unsigned; write a negative value as a string"),
    ],
)
def test_values_outside_the_grammar_stay_errors_that_name_the_fix(block: str, says: str) -> None:
    with pytest.raises(ParseError) as error:
        parse(block)
    assert says in str(error.value)


def test_numbers_in_the_grammar_are_one_value_whatever_the_spelling() -> None:
    block = parse("S{$a:0.9;$b:0.90;$c:00.900;$d:3.14;}S")
    assert block.dumps() == "S{$a:0.9;$b:0.9;$c:0.9;$d:3.14;}S"


@pytest.mark.parametrize(
    "reply",
    [
        '```\nS{$u:"op";$t:75;}S\n```',
        '```plsp\nS{$u:"op";$t:75;}S\n```\n',
        '\n\n```\r\nS{$u:"op";\r\n$t:75;}S\r\n```\r\n',
    ],
)
def test_a_fenced_reply_is_accepted_by_the_middleware(reply: str) -> None:
    found = extract(reply)
    assert found is not None and found.violations == ()
    previous = parse('S{$u:"op";}S')
    verdict = verify(previous, parse_instr("INSTR:@set:$t=75;"), reply)
    assert verdict.acceptable and verdict.violations == (), verdict.violations


def test_chatter_around_a_fence_is_still_stray_text() -> None:
    found = extract("Here is the state:\n```\nS{$a:1;}S\n```\nHope this helps!")
    assert found is not None
    assert [(v.kind, v.line) for v in found.violations] == [("stray_text", 1), ("stray_text", 5)]


def test_a_replies_file_of_fenced_crlf_replies_runs_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    loop = tmp_path / "loop.yaml"
    loop.write_bytes(
        b"\xef\xbb\xbfinitial: '@set:$a=1;'\r\notherwise: '@upd:$a=2;'\r\nmax_cycles: 2\r\n"
        b"replies: replies.ndjson\r\n"
    )
    replies = ["```plsp\r\nS{$a:1;}S\r\n```", "```\nS{$a:2;}S\n```\n"]
    (tmp_path / "replies.ndjson").write_bytes(
        b"\xef\xbb\xbf" + "".join(json.dumps(r) + "\r\n" for r in replies).encode()
    )
    trace = tmp_path / "t.ndjson"
    code, out, _ = _run(capsys, "run", str(loop), "--trace", str(trace), "--quiet")
    assert code == 0, out
    assert "state S{$a:2;}S" in out
    trace.write_bytes(b"\xef\xbb\xbf" + trace.read_bytes().replace(b"\n", b"\r\n"))
    code, out, _ = _run(capsys, "check", str(trace))
    assert code == 0 and out.endswith("2 cycles, 0 failing\n"), out


BOILER = HERE.joinpath("boiler.txt").read_text(encoding="utf-8")

TRANSCRIPT_VARIANTS: dict[str, Callable[[str], str]] = {
    "as written": lambda t: t,
    "crlf + bom": lambda t: "\ufeff" + t.replace("\n", "\r\n"),
    "the seed's labels": lambda t: t.replace(
        '\nS{$u:"op";$t:75;$p:"run";}S\nS{', '\nPrevious: S{$u:"op";$t:75;$p:"run";}S\nNext: S{'
    ),
    "previous states left out": lambda t: t.replace("S{}S\n", "").replace(
        ';\nS{$u:"op";$t:75;$p:"run";}S\nS{', ";\nS{"
    ),
    "replies fenced": lambda t: t.replace(
        '\nS{$u:"op";$t:82;$p:"hot";!', '\n```\nS{$u:"op";$t:82;$p:"hot";!'
    ).replace('"boiler hot";}S\n', '"boiler hot";}S\n```\n'),
    "blank lines and indentation": lambda t: t.replace("\nS{", "\n\n    S{"),
    # Pasted from a chat: speaker labels before the instruction and the reply (session 13).
    "chat paste, User/Assistant": lambda t: _replies_labelled(t, "User: ", "Assistant: "),
    "chat paste, bold on their own lines": lambda t: _replies_labelled(
        t, "**User:**\n", "**Assistant:**\n"
    ),
    "chat copy, You said/ChatGPT said": lambda t: _replies_labelled(
        t, "You said:\n", "ChatGPT said:\n"
    ),
    "chat paste, Human/Model, crlf": lambda t: _replies_labelled(t, "Human: ", "Model: ").replace(
        "\n", "\r\n"
    ),
}


def _replies_labelled(text: str, user: str, assistant: str) -> str:
    """The transcript as a chat shows it: the previous states left out, each INSTR: line
    said by the user and each reply by the assistant."""
    bare = TRANSCRIPT_VARIANTS["previous states left out"](text)
    lines = [
        user + line if line.startswith("INSTR:") else assistant + line if line else line
        for line in bare.split("\n")
        if not line.startswith("S{}S")
    ]
    return "\n".join(lines)


@pytest.mark.parametrize("variant", sorted(TRANSCRIPT_VARIANTS))
def test_a_text_transcript_is_checked_cycle_by_cycle(
    variant: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "boiler.txt"
    path.write_text(TRANSCRIPT_VARIANTS[variant](BOILER), encoding="utf-8", newline="")
    code, out, err = _run(capsys, "check", str(path))
    assert (code, err) == (0, ""), out
    assert out.endswith("3 cycles, 0 failing\n")


def test_a_wrong_reply_in_a_text_transcript_fails_its_cycle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "boiler.txt"
    path.write_text(BOILER.replace("$l:82", "$l:80"), encoding="utf-8")
    code, out, _ = _run(capsys, "check", str(path))
    assert code == 1
    assert "line 9 cycle 3: FAIL\n  ! wrong_value: $l is 80, expected 82 (from @set:$l=$t)" in out
    assert out.endswith("3 cycles, 1 failing\n")


def test_a_previous_state_that_does_not_continue_is_a_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "boiler.txt"
    path.write_text(
        BOILER.replace('S{$u:"op";$t:75;$p:"run";}S\nS{$u', 'S{$u:"op";$t:70;$p:"run";}S\nS{$u', 1)
    )
    code, out, _ = _run(capsys, "check", str(path))
    assert code == 1
    assert "line 5 cycle 2: FAIL" in out
    assert (
        'previous state S{$u:"op";$t:70;$p:"run";}S does not continue the last accepted state'
        in out
    )


def test_a_text_transcript_from_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(BOILER.encode())))
    assert _run(capsys, "check", "-")[0] == 0


def test_an_instruction_the_middleware_cannot_read_is_a_problem_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.txt"
    path.write_text("INSTR: please set a to one\nS{$a:1;}S\n")
    code, out, _ = _run(capsys, "check", str(path))
    assert code == 1 and "line 1 cycle 1: FAIL\n  - unreadable INSTR:" in out


@given(st.text(alphabet='INSTR:@$S{}";,\n ab1>!?&=', max_size=300))
@settings(max_examples=200)
def test_any_text_transcript_gets_a_verdict(text: str) -> None:
    for line, cycle, problems, violations in check_text("INSTR:" + text):
        assert line >= 1 and cycle >= 1 and all(isinstance(p, str) for p in problems)
        assert all(isinstance(v.blocking, bool) for v in violations)


_PASTED_LINES = [
    "User: INSTR: @set:$a=1;",
    "**User:**",
    "You said:",
    'Human: INSTR: @upd:$a=$a+1;@sig:>"a",$a;',
    'INSTR: @if:$a>1?@set:$b="hi":@set:$b="lo";',
    "INSTR: please",
    "Assistant: S{$a:1;}S",
    "ChatGPT said:",
    "## Model",
    "Previous: S{$a:1;}S",
    'Next: S{$a:2;>"a",2;}S',
    'S{$a:2;$b:"hi";}S',
    "S{$a:9e-1;}S",
    "S{",
    "Here is the state:",
    "```",
    "",
    "ünïcødé ✓ " + "x" * 200,
]


@given(st.lists(st.sampled_from(_PASTED_LINES), max_size=12), st.sampled_from(["\n", "\r\n"]))
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_any_pasted_transcript_gets_a_verdict_from_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], lines: list[str], newline: str
) -> None:
    path = tmp_path / "t.txt"
    path.write_bytes(newline.join(lines).encode("utf-8"))
    code, out, err = _run(capsys, "check", str(path))
    assert code in (0, 1, 2) and "Traceback" not in err, err
    if code == 2:  # not a transcript: the error names the file and the line
        assert err.startswith(f"plsp: error: {path}:"), err
    else:
        assert re.search(r"\d+ cycles, \d+ failing\n$", out), out


def test_a_lowercase_prefix_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "parse", "instr: @set:$a=1;")
    assert code == 1
    assert "line 1, column 1: the prefix is written 'INSTR:' (uppercase)" in err


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", ":1: no cycles: the trace is empty"),
        ("\n  \n", ":1: no cycles: the trace is empty"),
        (
            "\nAssistant: S{$a:1;}S\n",
            (
                ":2: neither an NDJSON trace (one JSON object a line) nor a text transcript"
                " (each cycle opens with a line starting 'INSTR:'); it holds state blocks"
                " without the INSTR: lines they answer: put each cycle's INSTR: line before"
                " its blocks"
            ),
        ),
        (
            "Some notes about the run.\n",
            (
                ":1: neither an NDJSON trace (one JSON object a line) nor a text transcript"
                " (each cycle opens with a line starting 'INSTR:')"
            ),
        ),
        (
            "instr: @set:$a=1;\nS{$a:1;}S\n",
            (
                ":1: neither an NDJSON trace (one JSON object a line) nor a text transcript"
                " (each cycle opens with a line starting 'INSTR:'); line 1 starts with"
                " 'instr:': the prefix is 'INSTR:'"
            ),
        ),
    ],
)
def test_input_that_is_no_trace_says_what_a_trace_is(
    text: str, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.txt"
    path.write_text(text, encoding="utf-8")
    code, out, err = _run(capsys, "check", str(path))
    assert (code, out) == (2, "")
    assert err == f"plsp: error: {path}{says}\n"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("Assistant: S{$a:1;}S", "text before the block, which starts at line 1, column 12"),
        (
            "Here is the state:\n  S{$a:1;}S",
            "text before the block, which starts at line 2, column 3",
        ),
        ("User: INSTR: @set:$a=1;", "text before an INSTR: line, which starts at line 1, column 7"),
    ],
)
def test_text_before_a_block_or_instruction_says_where_it_starts(
    text: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, "parse", text)
    assert (code, out) == (1, "")
    assert err.startswith("plsp: error: line 1, column 1: expected 'S{', found ")
    assert f"{says}; pass it alone\n" in err

"""The vlp command line: output formats and exit codes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.vlp.conftest import base
from vlp import validate_vlp
from vlp.cli import main


def write(path: Path, messages: list[Any]) -> Path:
    path.write_bytes(
        b"".join((m if isinstance(m, bytes) else orjson.dumps(m)) + b"\n" for m in messages)
    )
    return path


def line_of(msg: Any) -> bytes:
    return orjson.dumps(msg) + b"\n"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_validate_valid_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], dialogue: list[dict[str, Any]]
) -> None:
    path = write(tmp_path / "ok.ndjson", dialogue)
    code, out, _ = run(capsys, "validate", str(path))
    assert code == 0
    assert out.strip() == "ok: 5 message(s), 5 valid, 0 problem(s) in 1 file(s)"


def test_validate_reports_path_line_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(
        tmp_path / "bad.ndjson",
        [base(id="A"), b"{oops", base(id="A"), base(id="E", type="evidence")],
    )
    code, out, _ = run(capsys, "validate", str(path))
    lines = out.splitlines()
    assert code == 1
    assert lines[0].startswith(f"{path}:2: VLP001 ")
    assert f"{path}:3: VLP301 duplicate id 'A' (first on line 1)" in lines
    assert any(line.startswith(f"{path}:4: VLP201 ") for line in lines)
    assert lines[-1].startswith("INVALID: 4 message(s), 2 valid")


def test_validate_json_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path / "bad.ndjson", [base(id="A"), base(id="B", confidence=0.95)])
    code, out, _ = run(capsys, "validate", "--format", "json", str(path))
    report = orjson.loads(out)
    assert code == 1
    assert report["ok"] is False and report["messages"] == 2 and report["valid"] == 1
    assert report["problems"] == [
        {
            "path": str(path),
            "line": 2,
            "id": "B",
            "code": "VLP204",
            "message": report["problems"][0]["message"],
        }
    ]


def test_validate_json_document_and_stdin(tmp_path: Path) -> None:
    document = orjson.dumps([base(id="A"), base(id="B")], option=orjson.OPT_INDENT_2)
    done = subprocess.run(
        [sys.executable, "-m", "vlp.cli", "validate", "-"],
        input=document,
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout
    assert b"2 message(s), 2 valid" in done.stdout


def test_validate_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "validate", str(tmp_path / "missing.ndjson"))
    assert code == 2 and "cannot read" in err and "Traceback" not in err
    with pytest.raises(SystemExit) as caught:
        main(["validate"])
    assert caught.value.code == 2
    with pytest.raises(SystemExit) as caught:
        main(["frobnicate"])
    assert caught.value.code == 2


def test_max_line_bytes_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path / "long.ndjson", [base(content="x" * 500)])
    code, out, _ = run(capsys, "validate", "--max-line-bytes", "200", str(path))
    assert code == 1 and ":1: VLP003 " in out


@pytest.mark.parametrize("value", ["x", "0"])
def test_bad_max_line_bytes_is_a_usage_error_that_names_the_option(
    value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path / "one.ndjson", [base()])
    with pytest.raises(SystemExit) as caught:
        main(["validate", "--max-line-bytes", value, str(path)])
    err = capsys.readouterr().err
    assert caught.value.code == 2
    assert "argument --max-line-bytes: " in err and "_max_line" not in err


def test_show_renders_tree_with_corrections(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], dialogue: list[dict[str, Any]]
) -> None:
    path = write(
        tmp_path / "thread.ndjson", dialogue + [b"garbage", base(id="BAD", confidence=0.99)]
    )
    code, out, _ = run(capsys, "show", str(path))
    assert code == 0
    assert out.startswith("MSG001 claim  Operator  conf 0.95")
    assert "now: Adjusted tone to formal style.  (corrected by MSG005" in out
    assert "├─ MSG002 query" in out and "└─ MSG005 correction" in out
    assert "[REVIEW] off_brand_tone" in out
    assert ":6: VLP001" in out
    assert "line 7: BAD (VLP204)" in out


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ([], 0),
        ([base(id="R", safety={"level": "review"})], 3),
        ([base(id="B", safety={"level": "block"}), base(id="Z")], 4),
    ],
)
def test_gate_exit_codes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[Any], expected: int
) -> None:
    path = write(tmp_path / "thread.ndjson", [base(id="A")] + extra)
    code, out, _ = run(capsys, "gate", str(path))
    assert code == expected
    assert out.split()[0] == {0: "PROCEED", 3: "HOLD", 4: "HALT"}[expected]
    code, out, _ = run(capsys, "gate", "--format", "json", str(path))
    assert (
        code == expected
        and orjson.loads(out)["verdict"] == ["proceed", "hold", "halt"][[0, 3, 4].index(expected)]
    )


def test_gate_missing_file_is_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "gate", str(tmp_path / "nope"))
    assert code == 2 and "cannot read" in err


def test_new_prints_a_valid_message(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "new",
        "evidence",
        "--sender",
        "Operator",
        "--content",
        "links",
        "--confidence",
        "1",
        "--refers-to",
        "MSG001",
        "--provenance",
        "https://a",
        "--provenance",
        "https://b",
        "--keyword",
        "audit",
        "--safety",
        "review",
        "--issue",
        "tone:informal",
        "--extras",
        '{"k": 1}',
    )
    msg = orjson.loads(out)
    assert code == 0 and validate_vlp(msg) == (True, None)
    assert msg["refers_to"] == "MSG001" and msg["provenance"] == ["https://a", "https://b"]
    assert msg["safety"]["issues"] == [{"code": "tone", "detail": "informal"}]


def test_new_invalid_message_exits_1_and_bad_json_exits_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(
        capsys, "new", "evidence", "--sender", "a", "--content", "x", "--confidence", "0.5"
    )
    assert code == 1 and out == "" and "VLP201" in err
    code, _, err = run(
        capsys,
        "new",
        "claim",
        "--sender",
        "a",
        "--content",
        "x",
        "--confidence",
        "0.5",
        "--payload",
        "{nope",
    )
    assert code == 2 and "--payload" in err


def test_new_pipes_into_validate(tmp_path: Path) -> None:
    made = subprocess.run(
        [sys.executable, "-m", "vlp.cli", "new", "query", "--sender", "a", "--content", "?"],
        capture_output=True,
        check=True,
    )
    checked = subprocess.run(
        [sys.executable, "-m", "vlp.cli", "validate", "-"],
        input=made.stdout,
        capture_output=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout


NEW_ARGS: dict[str, list[str]] = {
    "claim": ["--confidence", "0.95", "--provenance", "https://a"],
    "evidence": ["--confidence", "1", "--refers-to", "C", "--provenance", "https://a"],
    "query": ["--refers-to", "C"],
    "response": ["--confidence", "0.7", "--refers-to", "Q"],
    "correction": ["--confidence", "0.8", "--refers-to", "C", "--refers-to", "R"],
    "notice": ["--confidence", "0.5", "--safety", "review", "--issue", "tone"],
    "session_context": ["--confidence", "0.5", "--session-id", "S1", "--seq", "0"],
}


@pytest.mark.parametrize("kind", sorted(NEW_ARGS))
def test_new_makes_every_type(kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "new", kind, "--sender", "A", "--content", "c", *NEW_ARGS[kind])
    assert code == 0, err
    msg = orjson.loads(out)
    assert msg["type"] == kind and validate_vlp(msg) == (True, None)
    assert out.count("\n") == 1  # one NDJSON line


def test_validate_json_lists_unreadable_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = write(tmp_path / "ok.ndjson", [base()])
    code, out, err = run(capsys, "validate", "--format", "json", str(tmp_path), str(good))
    report = orjson.loads(out)
    assert code == 2 and "cannot read" in err
    assert report["ok"] is False and (report["messages"], report["valid"]) == (1, 1)
    [problem] = report["problems"]
    assert problem["path"] == str(tmp_path) and problem["line"] is None
    assert problem["code"] == "VLP004" and problem["id"] is None


def _nested_content() -> bytes:
    """A valid message whose content is deeper than orjson will write back."""
    head = orjson.dumps(base(content="PLACEHOLDER")).split(b'"PLACEHOLDER"')
    return head[0] + b'{"a":' * 300 + b"1" + b"}" * 300 + head[1] + b"\n"


BAD_INPUTS: dict[str, bytes] = {
    "empty": b"",
    "blank": b"\n \n\t\n",
    "random": bytes(range(256)) * 4,
    "deep-document": b"[" * 100_000,
    "deep-line": line_of(base()) + b"[" * 100_000 + b"\n",
    "deep-content": _nested_content(),
    "lone-bracket": b"[",
    "lone-brace": b"{\n",
    "nul": b"\x00\n\x00",
    "trailing-junk": b'[{"a": 1}] junk',
    "nan": b'[{"confidence": NaN}]',
    "huge-int": line_of(base())[:-2] + b',"seq":' + b"9" * 5000 + b"}\n",
    "lone-surrogate-document": b'[{"id": "\\ud800", "confidence": 2}]',
    "lone-surrogate-object": b'{\n"id": "\\ud800"}',
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_no_input_makes_a_command_crash(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / name
    path.write_bytes(BAD_INPUTS[name])
    for argv in (
        ["validate", str(path)],
        ["validate", "--no-thread", str(path)],
        ["validate", "--format", "json", str(path)],
        ["show", str(path)],
        ["gate", str(path)],
        ["gate", "--format", "json", str(path)],
    ):
        code, out, err = run(capsys, *argv)
        assert code in (0, 1, 3), (argv, out, err)
        assert "Traceback" not in out + err
        if "json" in argv:
            orjson.loads(out)


def test_show_lists_reused_ids_and_says_when_there_is_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path / "dup.ndjson", [base(id="A"), base(id="A", content="second")])
    code, out, _ = run(capsys, "show", str(path))
    assert code == 0
    assert "1 message(s) reusing an earlier id" in out
    assert "line 2: A claim (id first used on line 1): second" in out
    empty = write(tmp_path / "empty.ndjson", [])
    assert run(capsys, "show", str(empty))[:2] == (0, "no messages\n")


def test_interrupt_exits_130_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr("vlp.ndjson.scan", interrupted)  # the CLI imports it when it runs
    path = write(tmp_path / "ok.ndjson", [base()])
    assert run(capsys, "validate", str(path))[0] == 130


def test_output_survives_a_terminal_that_is_not_utf8(tmp_path: Path) -> None:
    path = write(tmp_path / "t.ndjson", [base(id="A", content="héllo ✓"), base(id="B")])
    env = dict(os.environ, PYTHONIOENCODING="ascii")
    for argv in (["show", str(path)], ["validate", str(path)]):
        done = subprocess.run(
            [sys.executable, "-m", "vlp.cli", *argv], capture_output=True, env=env, check=False
        )
        assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    made = subprocess.run(
        [sys.executable, "-m", "vlp.cli", "new", "claim", "--sender", "A", "--content", "héllo ✓"]
        + ["--confidence", "0.5"],
        capture_output=True,
        env=env,
        check=False,
    )
    assert made.returncode == 0 and orjson.loads(made.stdout)["content"] == "héllo ✓"


def test_json_report_memory_stays_bounded_however_many_problems(tmp_path: Path) -> None:
    path = tmp_path / "bad.ndjson"
    path.write_bytes(b"{oops\n" * 100_000)  # 100,000 problems, ~13 MB of report
    warm = tmp_path / "one.ndjson"
    warm.write_bytes(b"{oops\n")
    probe = (
        "import os, sys, tracemalloc\n"
        "from vlp.cli import main\n"
        "sys.stdout = open(os.devnull, 'w')\n"
        # the modules the command imports when it runs are loaded before memory is traced
        f"main(['validate', '--format', 'json', {str(warm)!r}])\n"
        "tracemalloc.start()\n"
        f"code = main(['validate', '--no-thread', '--format', 'json', {str(path)!r}])\n"
        "sys.stderr.write(f'{code} {tracemalloc.get_traced_memory()[1]}')\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, check=True)
    code, peak = map(int, done.stderr.split())
    assert code == 1
    assert peak < 20 << 20  # the problems are spooled (8 MiB in memory, then disk)
    report = subprocess.run(
        [sys.executable, "-m", "vlp.cli", "validate", "--format", "json", str(path)],
        capture_output=True,
        check=False,
    )
    parsed = orjson.loads(report.stdout)
    assert list(parsed) == ["ok", "messages", "valid", "problems"]
    assert len(parsed["problems"]) == parsed["messages"] == 100_000
    assert parsed["problems"][-1]["line"] == 100_000


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["--sender", "\udcff"], "--sender"),
        (["--sender", "a", "--content", "ok\udcff"], "--content"),
        (["--sender", "a", "--issue", "X:\udcff"], "--issue"),
        (["--sender", "a", "--payload", '{"a": "\udcff"}'], "--payload"),
    ],
)
def test_new_refuses_arguments_that_are_not_utf8(
    argv: list[str], option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Undecodable argv bytes reach Python as lone surrogates (os.fsdecode); they used to end
    # in a traceback from the JSON encoder.
    if "--content" not in argv:
        argv = [*argv, "--content", "x"]
    code, out, err = run(capsys, "new", "claim", "--confidence", "0.5", *argv)
    assert (code, out) == (2, "")
    assert err.startswith(f"vlp: {option} is not UTF-8 text (character ")
    assert "\udcff" not in err


def test_show_and_validate_neutralise_terminal_escapes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    evil = "\x1b]0;pwned\x07\x1b[2J\x9b31m\u202eevil\r"
    path = write(
        tmp_path / "t.ndjson",
        [
            base(id="A" + evil, sender="S" + evil, content="c" + evil),
            base(id="B", session_id="S" + evil, seq=1),
            base(id="C", session_id="S" + evil, seq=1),
        ],
    )
    for argv in (["show", str(path)], ["validate", str(path)]):
        code, out, _ = run(capsys, *argv)
        assert code in (0, 1)
        for raw in ("\x1b", "\x07", "\x9b", "\u202e", "\r"):
            assert raw not in out, (argv, raw)
    assert "\\x1b]0;pwned\\x07" in run(capsys, "show", str(path))[1]


# Lines as streams in the wild hold them (session 13 fuzz): messages whole, pretty-printed,
# run together, commented, fenced, with wrong types, duplicate keys and huge numbers.
_MESSAGE = orjson.dumps(base()).decode()
_FUZZ_LINES = [
    _MESSAGE,
    _MESSAGE + _MESSAGE,
    _MESSAGE + ",",
    orjson.dumps(base(id="MSG002", refers_to="MSG001", type="correction")).decode(),
    orjson.dumps(base(id=7, confidence="high", timestamp=None)).decode(),
    orjson.dumps(base(safety={"level": "halt"}, seq=1))
    .decode()
    .replace(":1}", ":" + "9" * 30 + "}"),
    _MESSAGE.replace('"id":"MSG001"', '"id":"MSG001","id":"MSG009"'),
    _MESSAGE.replace("0.8", "1e400"),
    _MESSAGE.replace("0.8", "123456789012345678901234567890"),
    "{",
    '  "id": "MSG003",',
    "}",
    "[",
    "]",
    "// a comment",
    "# a comment",
    "```json",
    "```",
    "data: " + _MESSAGE,
    "{'id': 'x'}",
    "null",
    "",
    "   ",
    "\ufeff" + _MESSAGE,
    "ünïcødé ✓ " + "x" * 500,
]


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.sampled_from(_FUZZ_LINES), max_size=12), st.sampled_from(["\n", "\r\n", ""]))
def test_fuzz_every_reading_command_reports_or_names_the_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], lines: list[str], newline: str
) -> None:
    path = tmp_path / "t.ndjson"
    path.write_bytes(newline.join(lines).encode("utf-8"))
    for argv in (
        ["validate", str(path)],
        ["validate", "--format", "json", "--no-thread", str(path)],
        ["show", str(path)],
        ["gate", "--format", "json", str(path)],
    ):
        code = main(argv)
        out, err = capsys.readouterr()
        assert code in (0, 1, 2, 3, 4), (argv, err)
        assert "Traceback" not in err
        if "--format" in argv:
            json.loads(out)
        if len(argv) == 2 and argv[0] == "validate" and code == 1:  # problems: line and code
            assert re.search(r":\d+: VLP\d{3} ", out), out

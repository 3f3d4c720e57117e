"""The vlp command line: output formats and exit codes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.vlp.conftest import base
from vlp import validate_vlp
from vlp.cli import main


def write(path: Path, messages: list[Any]) -> Path:
    path.write_bytes(
        b"".join((m if isinstance(m, bytes) else orjson.dumps(m)) + b"\n" for m in messages)
    )
    return path


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

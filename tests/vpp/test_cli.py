from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from vpp import build_footer
from vpp.cli import main
from vpp.versions import Version

SAMPLE = Path("/work/shared/reference/vpp/v1.4/examples/sample-transcript-1.md")


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def footer(tag: str, index: int, version: Version = "1.4", cycle: int = 1) -> str:
    return build_footer(tag, index, cycle=cycle, locus="default", version=version)


def test_check_compliant_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(SAMPLE)]) == 0
    assert "compliant with VPP 1.4" in capsys.readouterr().out


def test_check_reports_line_numbers_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = f"User: !<q>\nAssistant: <o>\nbody\n{footer('q', 1)}\n"
    path = write(tmp_path, "t.txt", text)
    assert main(["check", path]) == 1
    out = capsys.readouterr().out
    assert f"{path}:2: turn 2 (assistant): tag-mismatch:" in out
    assert "1 violation(s) in 1 of 2 turns" in out


def test_check_json_several_files_is_one_document(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = write(tmp_path, "good.txt", f"User: !<q>\nAssistant: <q>\nbody\n{footer('q', 1)}\n")
    missing = str(tmp_path / "missing.txt")
    assert main(["check", "--format", "json", good, good, missing]) == 2
    captured = capsys.readouterr()
    report = json.loads(captured.out)  # one document, not one line per file
    assert report["ok"] is False
    assert [f["ok"] for f in report["files"]] == [True, True, False]
    assert report["files"][0]["turns"][1]["role"] == "assistant"
    assert "cannot read" in report["files"][2]["error"]
    assert "missing.txt" in captured.err


def test_check_json_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    turns = [
        {"role": "user", "content": "!<q> --minor --major"},
        {"role": "assistant", "content": "<c>\nnope\n" + footer("c", 1, "1.5")},
    ]
    path = write(tmp_path, "t.json", json.dumps(turns, indent=2))
    assert main(["check", "--version", "1.5", "--format", "json", path]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False
    assert [(t["index"], t["role"], t["ok"]) for t in report["turns"]] == [
        (1, "user", False),
        (2, "assistant", False),
    ]
    assert report["turns"][0]["violations"][0] == {
        "code": "conflicting-severity",
        "message": "--minor and --major are mutually exclusive.",
        "line": 2,
    }
    assert [v["code"] for v in report["turns"][1]["violations"]] == ["recovery-body-mismatch"]


def test_check_lenient_tolerates_cosmetic_variants(tmp_path: Path) -> None:
    text = "User: !<q>\nAssistant: <q>\nx\n[Version=v1.4 | Tag=<q> | Sources=<none> | Assumptions=0 | Cycle=1/3]\n"
    path = write(tmp_path, "t.txt", text)
    assert main(["check", path]) == 1
    assert main(["check", "--lenient", path]) == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["check", "/no/such/file"], "/no/such/file: cannot read"),
        (["check", "BAD_JSON"], "bad.json:2: invalid JSON"),
        (["repair", "BAD_JSON"], "bad.json:2: invalid JSON"),
    ],
)
def test_input_errors_exit_2_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    bad = write(tmp_path, "bad.json", '[{"role": "user",\n "content": ]')
    assert main([bad if a == "BAD_JSON" else a for a in args]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize("args", [["check"], ["check", "--version", "1.6", "x"], ["nope"], []])
def test_usage_errors_exit_2(args: list[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(args)
    assert caught.value.code == 2


def test_one_bad_file_among_many_still_checks_the_rest(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(SAMPLE), "/no/such/file"]) == 2
    assert "compliant" in capsys.readouterr().out


def test_parse_valid_and_invalid(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse", "!<o> --correct --<q>\n!<x> ignored"]) == 0
    out = capsys.readouterr().out
    assert "destination: q" in out and "reply: <q>" in out
    assert main(["parse", "!<q> --correct --incorrect"]) == 1
    out = capsys.readouterr().out
    assert "conflicting-correctness" in out and "Example: !<q> --incorrect" in out


def test_parse_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse", "--json", "--version", "1.5", "!<e> --<g> --<q>"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False and report["tag"] == "e" and report["assistant_tag"] == "c"
    assert [e["code"] for e in report["errors"]] == ["multiple-pipeline-destinations"]
    assert main(["parse", "--json", "!<o> --incorrect --minor"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["modifiers"], report["destination"], report["assistant_tag"]) == (
        ["incorrect", "minor"],
        None,
        "c",
    )
    assert report["errors"] == []


def test_repair_keeps_crlf_line_ends_of_a_text_transcript(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    path = tmp_path / "t.txt"
    path.write_bytes(b"User: !<q>\r\nhi\r\n\r\nAssistant: <g>\r\nbody  \r\n[Tag=q_1]\r\n")
    assert main(["repair", str(path)]) == 0
    out = capsysbinary.readouterr().out
    assert out.startswith(b"User: !<q>\r\nhi\r\n\r\nAssistant: <q>\r\nbody  \r\n[Version=")
    assert b"\n" not in out.replace(b"\r\n", b"")
    fixed = tmp_path / "fixed.txt"
    fixed.write_bytes(out)
    assert main(["check", str(fixed)]) == 0


def test_repair_prints_the_transcript_in_its_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [
        json.dumps({"role": "user", "content": "!<g>"}),
        json.dumps({"role": "assistant", "content": "Idea only."}),
    ]
    path = write(tmp_path, "t.jsonl", "\n".join(lines) + "\n")
    assert main(["repair", path]) == 0
    out = capsys.readouterr().out
    repaired = [json.loads(line) for line in out.splitlines()]
    assert repaired[1]["content"] == "<g>\nIdea only.\n" + footer("g", 1)
    fixed = write(tmp_path, "fixed.jsonl", out)
    assert main(["check", fixed]) == 0


def test_snippet(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["snippet", "--version", "1.5"]) == 0
    assert "Version=v1.5" in capsys.readouterr().out


def test_console_script_reads_stdin() -> None:
    text = f"User: !<q>\nAssistant: <q>\nok\n{footer('q', 1)}\n"
    done = subprocess.run(
        [sys.executable, "-m", "vpp.cli", "check", "-"],
        check=False,
        input=text,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "-: compliant" in done.stdout

"""VPP transcripts as people produce them (tests/vpp/transcripts/pasted/: chat UI copies,
timestamps, HTML-escaped pages, API and dataset JSON, exports, typical mistakes): each
file's verdict, violations (turn, line, code) and notes, reviewed once and kept in
expected.json; `repair` output re-checks clean; never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cliconventions.test_four_clis import run

HERE = Path(__file__).with_name("transcripts") / "pasted"
EXPECTED = json.loads((HERE / "expected.json").read_text())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_pasted_transcript_gets_its_reviewed_verdict(name: str, tmp_path: Path) -> None:
    path = HERE / name
    expected = EXPECTED[name]
    result = run("vpp", "check", "--format", "json", str(path))
    assert "Traceback" not in result.stderr
    assert result.returncode == expected["exit"], result.stderr
    if expected["exit"] == 2:
        assert result.stderr.strip().endswith(f"{name}:{expected['error']}")
        return
    report = json.loads(result.stdout)
    turns = report["turns"]
    found = [f"{t['index']}:{v['line']}:{v['code']}" for t in turns for v in t["violations"]]
    assert found == expected["violations"]
    assert [f"{t['index']}:{n['code']}" for t in turns for n in t.get("notes", [])] == expected[
        "notes"
    ]
    repaired = run("vpp", "repair", str(path))
    assert repaired.returncode == 0 and "Traceback" not in repaired.stderr
    again = tmp_path / name
    again.write_text(repaired.stdout)
    commands = {"1:1:invalid-first-line"}  # a user's command is not the reply's to repair
    rechecked = run("vpp", "check", "--format", "json", str(again))
    left = [
        f"{t['index']}:{v['line']}:{v['code']}"
        for t in json.loads(rechecked.stdout)["turns"]
        for v in t["violations"]
        if t["role"] == "assistant"
    ]
    assert left == [] or set(found) & commands, left

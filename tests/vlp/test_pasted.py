"""VLP files as people produce them (tests/vlp/transcripts/pasted/: jq streams, JS and
Python writers, log lines, SSE, chat answers in Markdown, API responses, typical mistakes):
each file's verdict, problems (line and code) and gate verdict, reviewed once and kept in
expected.json; every problem names its line and says something; never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cliconventions.test_four_clis import run

HERE = Path(__file__).with_name("transcripts") / "pasted"
EXPECTED = json.loads((HERE / "expected.json").read_text())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_pasted_file_gets_its_reviewed_verdict(name: str) -> None:
    path = HERE / name
    result = run("vlp", "validate", "--format", "json", str(path))
    assert "Traceback" not in result.stderr
    report = json.loads(result.stdout)
    expected = EXPECTED[name]
    assert result.returncode == expected["exit"]
    assert report["valid"] == expected["valid"]
    assert [f"{p['line']}:{p['code']}" for p in report["problems"]] == expected["problems"]
    for problem in report["problems"]:
        assert problem["line"] >= 1 and len(problem["message"]) > 20
    gated = run("vlp", "gate", str(path))
    assert gated.returncode == expected["gate"] and "Traceback" not in gated.stderr
    shown = run("vlp", "show", str(path))
    assert shown.returncode == 0 and "Traceback" not in shown.stderr

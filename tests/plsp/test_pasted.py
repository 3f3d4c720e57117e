"""PLSP transcripts and traces as people produce them (tests/plsp/transcripts/pasted/:
chat copies with speakers and timestamps, fenced blocks with labels, other tools' minimal
NDJSON traces, typical model mistakes): each file's report, reviewed once and kept in
expected.json, problems at file lines; never a traceback."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.cliconventions.test_four_clis import run

HERE = Path(__file__).with_name("transcripts") / "pasted"
EXPECTED = json.loads((HERE / "expected.json").read_text())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_pasted_transcript_gets_its_reviewed_report(name: str) -> None:
    expected = EXPECTED[name]
    here = os.getcwd()
    os.chdir(HERE)  # the report names the file as given
    try:
        result = run("plsp", "check", name)
    finally:
        os.chdir(here)
    assert "Traceback" not in result.stderr
    assert result.returncode == expected["exit"]
    assert result.stdout == expected["stdout"]
    assert result.stderr.replace(f"error: {name}:", "error: FILE:") == expected["stderr"]

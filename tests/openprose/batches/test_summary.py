"""What `prose ui` reads of a project's batches: one summary each, rows by counted status."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openprose.batches.summary import batch_rows, batch_summaries
from openprose.cli import main


def test_rows_filter_by_the_count_they_are_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PROSE_PROVIDER", raising=False)
    (tmp_path / "rules.yaml").write_text('default: "ok"\n')
    (tmp_path / "p.prose").write_text('input topic: "what"\noutput answer = session "On {topic}"\n')
    (tmp_path / "in.jsonl").write_text('{"topic": "a"}\n{"topic": "b"}\n')
    assert main(["batch", "p.prose", "in.jsonl", "--provider", "scripted:rules.yaml"]) == 0
    capsys.readouterr()
    (summary,) = batch_summaries(tmp_path)
    rows_file = Path(summary["rows_file"])
    # a run the VM failed on is a failure, as the batch counts it
    with rows_file.open("a") as rows:
        rows.write(json.dumps({"line": 3, "run_id": "r-3", "status": "error", "usage": {}}) + "\n")
    (tmp_path / ".prose" / "batches" / "not-a-batch").mkdir()
    (summary,) = batch_summaries(tmp_path)
    assert (summary["done"], summary["succeeded"], summary["failed"]) == (3, 2, 1)
    batch_id = summary["batch_id"]
    assert [r["line"] for r in batch_rows(tmp_path, batch_id, "failed")] == [3]
    assert [r["line"] for r in batch_rows(tmp_path, batch_id, "succeeded")] == [1, 2]
    assert batch_rows(tmp_path, batch_id, "invalid") == []
    with pytest.raises(KeyError):
        batch_rows(tmp_path, "../runs")

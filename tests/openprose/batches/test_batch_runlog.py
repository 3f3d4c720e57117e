"""A batch's runs live in its run log until asked for: every command that takes a run id
makes the folder first (`prose resume`, `prose runs`, the Python API), and a program whose
agents keep memory inside the run folder gets folders from the start."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import openprose
from openprose.cli import main

TWO_SESSIONS = (
    'input topic: "what"\nlet a = session "One {topic}"\noutput b = session "Two {topic}"\n'
)


def rows_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def run_folder(project: Path, run_id: str) -> Path:
    return project / ".prose" / "runs" / run_id


def test_prose_resume_continues_a_logged_run(project: Path) -> None:
    (project / "two.prose").write_text(TWO_SESSIONS)
    (project / "in.jsonl").write_text('{"topic": "a"}\n{"topic": "b"}\n')
    base = [
        "batch",
        "two.prose",
        "in.jsonl",
        "-o",
        "out.jsonl",
        "--provider",
        "scripted:rules.yaml",
    ]
    assert main([*base, "--max-sessions", "1"]) == 1
    first, second = sorted(rows_of(project / "out.jsonl"), key=lambda r: r["line"])
    assert first["status"] == second["status"] == "stopped"
    assert not (project / ".prose" / "runs").exists()

    # the CLI: the folder is made from the log, then resumed with a larger budget
    assert main(["resume", first["run_id"], "--max-sessions", "5"]) == 0
    meta = json.loads((run_folder(project, first["run_id"]) / "run.json").read_text())
    assert meta["status"] == "succeeded"
    assert meta["usage"]["requests_served_from_journal"] == 1  # session one was not sent again
    assert meta["usage"]["requests_sent"] == 1

    # the Python API, by a unique prefix of the id
    result = openprose.resume(second["run_id"], max_sessions=5)
    assert result.run_id == second["run_id"] and result.status == "succeeded"
    assert result.outputs == {"b": "ok"}
    assert result.usage["requests_served_from_journal"] == 1


def test_prose_runs_lists_logged_runs(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "in.jsonl").write_text('{"topic": "a"}\n{"topic": "b"}\n')
    assert main(["batch", "p.prose", "in.jsonl", "--provider", "scripted:rules.yaml"]) == 0
    capsys.readouterr()
    assert main(["runs", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    batch_id = next((project / ".prose" / "batches").iterdir()).name
    assert [(r["run_id"], r["status"]) for r in listed] == [
        (f"{batch_id}-1", "succeeded"),
        (f"{batch_id}-2", "succeeded"),
    ]
    assert listed[0]["program"].endswith("p.prose")


def test_durable_batch_fsyncs_its_run_log(project: Path) -> None:
    (project / "in.jsonl").write_text("".join(f'{{"topic": "t{i}"}}\n' for i in range(5)))
    base = ["batch", "p.prose", "in.jsonl", "-o", "out.jsonl", "--provider", "scripted:rules.yaml"]
    assert main([*base, "--durable"]) == 0
    rows = rows_of(project / "out.jsonl")
    assert sorted(r["line"] for r in rows) == [1, 2, 3, 4, 5]
    assert main(["show", rows[0]["run_id"]]) == 0


PERSISTENT = """input topic: "what"
agent scribe:
  model: sonnet
  persist: true
output answer = session: scribe
  prompt: "Note {topic}"
"""


def test_agents_keeping_memory_in_the_run_get_run_folders(project: Path) -> None:
    (project / "mem.prose").write_text(PERSISTENT)
    (project / "in.jsonl").write_text('{"topic": "a"}\n{"topic": "b"}\n')
    base = [
        "batch",
        "mem.prose",
        "in.jsonl",
        "-o",
        "out.jsonl",
        "--provider",
        "scripted:rules.yaml",
    ]
    assert main(base) == 0
    for row in rows_of(project / "out.jsonl"):
        folder = run_folder(project, row["run_id"])
        assert (folder / "agents" / "scribe" / "memory.md").is_file()
    batch = next((project / ".prose" / "batches").iterdir())
    log = batch / "runs.ndjson"
    assert not log.exists() or log.read_text() == ""

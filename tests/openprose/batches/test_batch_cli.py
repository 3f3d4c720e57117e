"""`prose batch` end to end on the scripted provider: rows, invalid lines, failures, resume
after kill -9, one writer per batch."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from openprose.cli import main
from openprose.record.logged_runs import read_log, read_log_file


def rows_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def run_folders(project: Path) -> list[Path]:
    runs = project / ".prose" / "runs"
    return sorted(p for p in runs.iterdir() if p.is_dir()) if runs.is_dir() else []


def batch_runs(project: Path) -> dict[str, list[dict]]:
    """run id -> its journal events: a folder's when it has one (materialized, resumed),
    else the batch's run log's."""
    runs: dict[str, list[dict]] = {}
    for batch in (project / ".prose" / "batches").iterdir():
        for run_id, run in read_log(batch).items():
            runs[run_id] = [json.loads(line) for line in run.events]
    for folder in run_folders(project):
        lines = (folder / "journal.jsonl").read_text().splitlines()
        runs[folder.name] = [json.loads(line) for line in lines if line]
    return runs


def calls_made(events: list[dict]) -> int:
    return sum(e["ev"] == "session_finished" for e in events)


def test_batch_writes_one_row_per_case(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "in.jsonl").write_text(
        '{"topic": "owls"}\n\n{"topic": "fail now"}\nnot json\n{"other": 1}\n{"topic": "cats"}\n'
    )
    code = main(
        ["batch", "p.prose", "in.jsonl", "-o", "out.jsonl", "--provider", "scripted:rules.yaml"]
    )
    captured = capsys.readouterr()
    assert code == 1  # a case failed and lines were invalid
    rows = {row["line"]: row for row in rows_of(project / "out.jsonl")}
    assert sorted(rows) == [1, 3, 4, 5, 6]
    assert set(rows[1]) == {"line", "run_id", "status", "outputs", "usage", "error"}
    assert rows[1]["status"] == "succeeded" and rows[1]["outputs"] == {"answer": "ok"}
    assert rows[1]["usage"]["requests_sent"] == 1
    assert rows[3]["status"] == "failed" and "injected error" in rows[3]["error"]
    assert rows[4]["status"] == "invalid" and rows[4]["run_id"] is None
    assert "E026 missing required input 'topic'" in rows[5]["error"]
    assert "E027 unknown input 'other'" in rows[5]["error"]
    assert "in.jsonl:4: invalid JSON" in captured.err and "in.jsonl:5: E026" in captured.err
    # a run failed: the batch failed, invalid lines or not
    assert ": failed  2 succeeded, 1 failed, 2 invalid" in captured.out
    # every run is a normal run folder that `prose show` reads: made from the batch's run
    # log the first time it is asked for
    assert len(batch_runs(project)) == 3 and run_folders(project) == []
    batch_id = next((project / ".prose" / "batches").iterdir()).name
    assert all(rows[line]["run_id"] == f"{batch_id}-{line}" for line in (1, 3, 6))
    assert main(["show", rows[6]["run_id"]]) == 0
    assert "cats" in (project / ".prose" / "runs" / rows[6]["run_id"] / "run.json").read_text()
    assert [p.name for p in run_folders(project)] == [rows[6]["run_id"]]


def test_batch_json_summary_and_csv(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "in.csv").write_text("topic\nowls\ncats\n")
    code = main(["batch", "p.prose", "in.csv", "--provider", "scripted:rules.yaml", "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert code == 0
    assert summary["status"] == "succeeded" and summary["succeeded"] == 2
    assert summary["usage"]["input_tokens"] > 0
    rows = rows_of(Path(summary["output"]))
    assert sorted(r["line"] for r in rows) == [2, 3]  # the header is line 1
    assert Path(summary["output"]).parent.name == summary["batch_id"]


def test_invalid_lines_alone_are_named_as_such(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "in.jsonl").write_text('{"topic": "owls"}\n[1, 2]\n{"topic": "cats"}\n{}\n')
    command = ["batch", "p.prose", "in.jsonl", "--provider", "scripted:rules.yaml"]
    assert main(command) == 1  # not every case ran: still not a success
    out = capsys.readouterr().out
    assert (
        "invalid input lines, not run (every run succeeded)  2 succeeded, 0 failed, 2 invalid"
        in out
    )
    assert "failed  " not in out
    assert main([*command, "--json"]) == 1
    summary = json.loads(capsys.readouterr().out)
    assert summary["status"] == "invalid_lines"
    assert (summary["succeeded"], summary["failed"], summary["invalid"]) == (2, 0, 2)
    # a resume with nothing left to run says the same from the rows written before
    assert main(["batch", "--resume", summary["batch_id"], "--json"]) == 1
    again = json.loads(capsys.readouterr().out)
    assert again["status"] == "invalid_lines" and again["done_before"] == 4


def test_usage_errors_exit_2_and_leave_no_batch(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "bad.prose").write_text('sesion "x"\n')
    (project / "in.jsonl").write_text('{"topic": "a"}\n')
    assert main(["batch", "bad.prose", "in.jsonl", "--provider", "scripted:rules.yaml"]) == 2
    assert main(["batch", "p.prose", "nope.jsonl", "--provider", "scripted:rules.yaml"]) == 2
    assert main(["batch", "p.prose", "in.jsonl", "--provider", "scripted:nope.yaml"]) == 2
    assert main(["batch", "p.prose", "in.jsonl", "--max-runs", "0"]) == 2
    assert main(["batch", "--resume", "nothing-here"]) == 2
    err = capsys.readouterr().err
    assert "nope.jsonl: no such file" in err and "no batch 'nothing-here'" in err
    assert not (project / ".prose" / "batches").exists()


SLOW_RULES = """latency_ms: 150
default: "ok"
"""


def processes_in(folder: Path) -> list[int]:
    """Live processes whose working folder is `folder` (a batch's worker processes)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if not proc.name.isdigit() or int(proc.name) == os.getpid():
                continue
            if (proc / "cwd").resolve() == folder.resolve():
                status = (proc / "status").read_text()
                if "State:\tZ" not in status:
                    found.append(int(proc.name))
        except OSError:
            continue
    return found


def killable(project: Path, out: Path) -> bool:
    """Three rows written and a run begun that has no row yet: a kill now interrupts a run.
    (Rows come in pairs as the slots finish together; right after a pair, nothing may be in
    flight for a moment, and a kill then would test no interrupted run.)"""
    try:
        if not out.exists() or len(out.read_text().splitlines()) < 3:
            return False
        finished = {row["run_id"] for row in rows_of(out)}
        return bool(set(batch_runs(project)) - finished)
    except (OSError, ValueError, KeyError):  # a row or log line half-written: look again
        return False


@pytest.mark.parametrize("processes", [1, 2])
def test_kill_9_then_resume_repeats_no_finished_run(project: Path, processes: int) -> None:
    (project / "slow.yaml").write_text(SLOW_RULES)
    cases = 12
    (project / "in.jsonl").write_text("".join(f'{{"topic": "t{i}"}}\n' for i in range(cases)))
    command = [sys.executable, "-m", "openprose.cli", "batch", "p.prose", "in.jsonl"]
    command += ["-o", "out.jsonl", "--provider", "scripted:slow.yaml"]
    command += ["--max-runs", str(2 * processes), "--processes", str(processes)]
    child = subprocess.Popen(command, cwd=project, stderr=subprocess.DEVNULL)
    out = project / "out.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not killable(project, out):
        time.sleep(0.02)
    child.send_signal(signal.SIGKILL)
    child.wait()
    deadline = time.monotonic() + 10
    while processes_in(project) and time.monotonic() < deadline:  # workers die with it
        time.sleep(0.02)
    assert processes_in(project) == []
    before = rows_of(out)
    assert 3 <= len(before) < cases, "the kill came too late to test anything"
    runs_before = set(batch_runs(project))
    batch_id = next((project / ".prose" / "batches").iterdir()).name

    code = main(["batch", "--resume", batch_id[:12]])
    assert code == 0
    after = rows_of(out)
    assert sorted(r["line"] for r in after) == list(range(1, cases + 1))  # each line once
    assert after[: len(before)] == before  # finished rows untouched
    runs_after = batch_runs(project)
    assert len(runs_after) == cases  # no case ran as two runs
    assert runs_before <= set(runs_after)
    # a run the kill interrupted was resumed, not started again: its id is kept
    assert all(r["run_id"] == f"{batch_id}-{r['line']}" for r in after)
    interrupted = runs_before - {r["run_id"] for r in before}
    assert interrupted and {p.name for p in run_folders(project)} == interrupted
    # the finished runs sent nothing again: one request per case in all
    assert sum(calls_made(events) for events in runs_after.values()) == cases


def test_one_writer_per_batch(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "in.jsonl").write_text('{"topic": "a"}\n')
    assert main(["batch", "p.prose", "in.jsonl", "--provider", "scripted:rules.yaml"]) == 0
    root = next((project / ".prose" / "batches").iterdir())
    import fcntl

    with open(root / "lock", "r+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        held.write("4242\n")
        held.flush()
        assert main(["batch", "--resume", root.name]) == 2
    assert f"batch {root.name} is being written by pid 4242" in capsys.readouterr().err
    # released: the resume goes through and has nothing left to run
    assert main(["batch", "--resume", root.name, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["done_before"] == 1 and summary["succeeded"] == 0


def test_changed_inputs_file_is_refused_on_resume(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "in.jsonl").write_text('{"topic": "a"}\n')
    assert main(["batch", "p.prose", "in.jsonl", "--provider", "scripted:rules.yaml"]) == 0
    (project / "in.jsonl").write_text('{"topic": "b"}\n{"topic": "a"}\n')
    root = next((project / ".prose" / "batches").iterdir())
    assert main(["batch", "--resume", root.name]) == 2
    assert "changed since batch" in capsys.readouterr().err


def test_torn_last_row_is_dropped_and_rewritten(project: Path) -> None:
    (project / "in.jsonl").write_text('{"topic": "a"}\n{"topic": "b"}\n')
    assert (
        main(
            ["batch", "p.prose", "in.jsonl", "-o", "out.jsonl", "--provider", "scripted:rules.yaml"]
        )
        == 0
    )
    out = project / "out.jsonl"
    lines = out.read_text().splitlines()
    out.write_text(lines[0] + "\n" + lines[1][:20])  # a crash tore the second row
    root = next((project / ".prose" / "batches").iterdir())
    assert main(["batch", "--resume", root.name]) == 0
    rows = rows_of(out)
    assert sorted(r["line"] for r in rows) == [1, 2]
    assert all(r["status"] == "succeeded" for r in rows)
    # the torn row's run had ended: its row comes from the run log, nothing is sent again
    assert [calls_made(events) for events in batch_runs(project).values()] == [1, 1]


def test_budgets_apply_to_each_run(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "two.prose").write_text(
        'input topic: "what"\nlet a = session "One {topic}"\noutput b = session "Two {topic}"\n'
    )
    (project / "in.jsonl").write_text('{"topic": "a"}\n{"topic": "b"}\n')
    code = main(
        [
            "batch",
            "two.prose",
            "in.jsonl",
            "-o",
            "out.jsonl",
            "--provider",
            "scripted:rules.yaml",
            "--max-sessions",
            "1",
        ]
    )
    assert code == 1
    rows = rows_of(project / "out.jsonl")
    assert [r["status"] for r in rows] == ["stopped", "stopped"]
    assert all("--max-sessions" in r["error"] for r in rows)
    assert all(r["usage"]["requests_sent"] == 1 for r in rows)


def test_worker_processes_share_the_runs(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # slow enough that this process cannot finish them all while the worker starts
    (project / "slow.yaml").write_text('latency_ms: 200\ndefault: "ok"\n')
    cases = 60
    (project / "in.jsonl").write_text("".join(f'{{"topic": "t{i}"}}\n' for i in range(cases)))
    command = [
        "batch",
        "p.prose",
        "in.jsonl",
        "-o",
        "out.jsonl",
        "--provider",
        "scripted:slow.yaml",
    ]
    assert main([*command, "--max-runs", "8", "--processes", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["succeeded"] == cases
    rows = rows_of(project / "out.jsonl")
    assert sorted(r["line"] for r in rows) == list(range(1, cases + 1))
    batch = next((project / ".prose" / "batches").iterdir())
    worker_runs = read_log_file(batch / "runs.1.ndjson")  # what the worker process ran
    own_runs = read_log_file(batch / "runs.ndjson")
    assert worker_runs and own_runs and len(worker_runs) + len(own_runs) == cases
    run_id = next(iter(worker_runs))
    assert main(["show", run_id]) == 0
    assert (project / ".prose" / "runs" / run_id / "journal.jsonl").is_file()

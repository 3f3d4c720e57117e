"""One writer per run: the run lock (openprose/locks.py, `lock_run`) across real processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from openprose.cli import main
from openprose.locks import LockHeld, holder_of, locked, try_lock
from openprose.record.runstore import RunBusy, lock_run

TRIALS = 20
AT_ONCE = 5  # trials whose two resumes run side by side (2 cores: keep the machine usable)

HOLDER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from openprose.record.runstore import lock_run
    lock = lock_run(Path(sys.argv[1]))
    print("held", flush=True)
    sys.stdin.read()
    """
)


def _holder(run_dir: Path) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(run_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdout.readline() == "held\n"
    return child


def test_a_run_held_by_another_process_is_busy_naming_its_pid(tmp_path: Path) -> None:
    child = _holder(tmp_path)
    try:
        with pytest.raises(
            RunBusy, match=rf"run {tmp_path.name} is being written by pid {child.pid}"
        ):
            lock_run(tmp_path)
    finally:
        child.kill()
        child.wait()
    # kill -9 released it: the kernel drops a flock with its holder.
    lock_run(tmp_path).release()


def test_a_process_may_take_its_own_lock_again(tmp_path: Path) -> None:
    first = try_lock(tmp_path / "x.lock")
    second = try_lock(tmp_path / "x.lock")
    assert second is first
    first.release()
    assert second.held  # one holder left
    second.release()
    assert not first.held


def test_locked_waits_then_gives_up_after_its_timeout(tmp_path: Path) -> None:
    child = _holder(tmp_path)
    try:
        with (
            pytest.raises(LockHeld, match=f"pid {child.pid}"),
            locked(tmp_path / ".lock", timeout=0.1),
        ):
            pass
    finally:
        child.terminate()
        child.wait()
    with locked(tmp_path / ".lock", timeout=1.0) as lock:
        assert lock.held


@pytest.fixture
def failed_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """TRIALS runs whose one session failed, so that a resume sends it again."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PROSE_PROVIDER", raising=False)
    (tmp_path / "p.prose").write_text('session "slow"\n')
    (tmp_path / "fail.yaml").write_text(
        "rules:\n  - match: slow\n    answer: x\n    failures: [error]\n"
    )
    # The resumed session takes a while, so that both resumes are alive at once.
    (tmp_path / "slow.yaml").write_text(
        "rules:\n  - match: slow\n    answer: done\n    latency_ms: 1500\n"
    )
    for _ in range(TRIALS):
        assert main(["run", "p.prose", "--provider", "scripted:fail.yaml", "--json"]) == 1
    return sorted((tmp_path / ".prose" / "runs").iterdir())


def _resume(run_dir: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "openprose.cli", "resume", run_dir.name]
        + ["--provider", "scripted:slow.yaml", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_two_resumes_of_one_run_at_once_exactly_one_runs(
    failed_runs: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    outcomes = []
    for first in range(0, TRIALS, AT_ONCE):
        batch = failed_runs[first : first + AT_ONCE]
        pairs = [(run_dir, _resume(run_dir), _resume(run_dir)) for run_dir in batch]
        for run_dir, a, b in pairs:
            results = [(p.pid, p.wait(timeout=60), *p.communicate()) for p in (a, b)]
            outcomes.append((run_dir, results))
    for run_dir, results in outcomes:
        codes = sorted(code for _, code, _, _ in results)
        assert codes == [0, 2], (run_dir.name, results)
        winner = next(pid for pid, code, _, _ in results if code == 0)
        loser_err = next(err for _, code, _, err in results if code == 2)
        assert f"run {run_dir.name} is being written by pid {winner}" in loser_err
        events = [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines()]
        # The failed first attempt, then exactly one resume: one run_started each.
        assert [e["ev"] for e in events].count("run_started") == 2
        assert [e["ev"] for e in events].count("session_finished") == 1
        assert json.loads((run_dir / "run.json").read_text())["status"] == "succeeded"
    assert len(outcomes) == TRIALS


def test_a_killed_writer_leaves_the_run_resumable(
    failed_runs: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = failed_runs[0]
    writer = _resume(run_dir)
    try:
        # Wait until it holds the lock (it writes its pid into the lock file).
        deadline = time.monotonic() + 30
        while holder_of(run_dir / ".lock") != writer.pid and time.monotonic() < deadline:
            time.sleep(0.01)
        with pytest.raises(RunBusy):
            lock_run(run_dir)
    finally:
        os.kill(writer.pid, signal.SIGKILL)
        writer.communicate()
    assert main(["resume", run_dir.name, "--provider", "scripted:slow.yaml", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "succeeded"

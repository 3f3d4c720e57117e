"""How a run ended, as `prose runs` and `prose show` tell it: Ctrl-C (recorded by the run), a
process that crashed on a fatal signal (its fault report), one killed without a word; and
the command that continues each resumable run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from openprose.cli import main

SLOW = 'default: "ok"\nlatency_ms: 20000\n'
FAST = 'default: "ok"\n'


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in ("PROSE_PROVIDER", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "slow.yaml").write_text(SLOW)
    (tmp_path / "rules.yaml").write_text(FAST)
    (tmp_path / "ok.prose").write_text('session "Hello"\n')
    return tmp_path


def _stopped_run(
    project: Path, how: signal.Signals
) -> tuple[str, subprocess.CompletedProcess[str]]:
    """`prose run` (the command, in its own process) stopped by `how` while its call waits."""
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "openprose.cli",
            "run",
            "ok.prose",
            "--provider",
            "scripted:slow.yaml",
        ],
        cwd=project,
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert child.stderr is not None
    run_id = child.stderr.readline().split()[2]  # printed before the model call
    child.send_signal(how)
    out, err = child.communicate(timeout=60)
    return run_id, subprocess.CompletedProcess(child.args, child.returncode, out, err)


def _listing(capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["runs", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    return dict(row)


def _shown(run_id: str, capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, object], str]:
    assert main(["show", run_id, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert main(["show", run_id]) == 0
    return shown, capsys.readouterr().out


def test_a_ctrl_c_run_is_recorded_as_interrupted(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id, done = _stopped_run(project, signal.SIGINT)
    assert done.returncode == 130, done.stderr
    meta = json.loads((project / ".prose" / "runs" / run_id / "run.json").read_text())
    assert (meta["status"], meta["error"]) == ("interrupted", "interrupted (Ctrl-C)")
    assert _listing(capsys)["resume"] == f"prose resume {run_id}"
    shown, text = _shown(run_id, capsys)
    assert (shown["status"], shown["error"]) == ("interrupted", "interrupted (Ctrl-C)")
    assert f"continue it with: prose resume {run_id}\n" in text
    assert not (project / ".prose" / "crashes").exists()  # a normal exit leaves no report
    assert main(["resume", run_id, "--provider", "scripted:rules.yaml", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "succeeded"


def test_a_crashed_run_is_told_from_an_interrupted_one(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # SIGSEGV from outside stands for a native crash (llama.cpp): the same handler runs.
    run_id, done = _stopped_run(project, signal.SIGSEGV)
    assert done.returncode == -signal.SIGSEGV
    meta = json.loads((project / ".prose" / "runs" / run_id / "run.json").read_text())
    assert meta["status"] == "running"  # nothing could be written at the crash
    (report,) = (project / ".prose" / "crashes").iterdir()
    assert report.name.startswith(f"{meta['pid']}-")
    assert report.read_text().startswith("Fatal Python error: Segmentation fault")
    row = _listing(capsys)
    assert (row["status"], row["resume"]) == ("crashed", f"prose resume {run_id}")
    assert main(["runs"]) == 0
    assert "crashed      " in capsys.readouterr().out
    shown, text = _shown(run_id, capsys)
    assert shown["status"] == "crashed"
    assert shown["error"] == (
        f"the process (pid {meta['pid']}) crashed: Fatal Python error: Segmentation fault "
        f"(report: {report})"
    )
    assert f"continue it with: prose resume {run_id}\n" in text
    assert main(["resume", run_id, "--provider", "scripted:rules.yaml", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "succeeded"
    assert _listing(capsys)["status"] == "succeeded"  # the report was of the process before


def test_a_killed_run_says_its_process_ended_first(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id, done = _stopped_run(project, signal.SIGKILL)
    assert done.returncode == -signal.SIGKILL
    meta = json.loads((project / ".prose" / "runs" / run_id / "run.json").read_text())
    assert _listing(capsys)["status"] == "interrupted"
    shown, text = _shown(run_id, capsys)
    assert shown["error"] == (
        f"the process running it (pid {meta['pid']}) ended before the run did "
        "(killed, or stopped with its batch)"
    )
    assert f"continue it with: prose resume {run_id}\n" in text


def test_in_a_host_process_faulthandler_stays_the_hosts(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`main([...])` called from Python (here pytest) records no crash file: the host's
    faulthandler setup (pytest's) is left alone."""
    assert main(["run", "ok.prose", "--provider", "scripted:rules.yaml", "--json"]) == 0
    assert not (project / ".prose" / "crashes").exists()


FAILING = 'default: "ok"\nrules:\n  - match: "^Fail"\n    answer: "x"\n    failures: [error, error, error, error, error, error]\n'


def test_resume_commands_by_status(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A failure a resume asks again gets the command; a `throw` (every answer replayed, the
    same error) does not; a budget stop names its flag; a succeeded run has none."""
    (project / "failing.yaml").write_text(FAILING)
    (project / "fail.prose").write_text('session "Hello"\nsession "Fail now"\n')
    (project / "throw.prose").write_text('session "Hello"\nthrow "no"\n')
    (project / "two.prose").write_text('session "a"\nsession "b"\n')
    scripted = ["--provider", "scripted:failing.yaml", "--json"]
    ids = {}
    for name, extra, code in (
        ("fail", [], 1),
        ("throw", [], 1),
        ("two", ["--max-sessions", "1", "--yes"], 3),
        ("ok", [], 0),
    ):
        assert main(["run", f"{name}.prose", *scripted, *extra]) == code
        ids[name] = json.loads(capsys.readouterr().out)["run_id"]
    assert main(["runs", "--json"]) == 0
    resume = {row["run_id"]: row["resume"] for row in json.loads(capsys.readouterr().out)}
    assert resume == {
        ids["fail"]: f"prose resume {ids['fail']}",
        ids["throw"]: "",
        ids["two"]: f"prose resume {ids['two']} --max-sessions N",
        ids["ok"]: "",
    }
    assert main(["runs"]) == 0
    listing = capsys.readouterr().out
    assert f"(continue: prose resume {ids['fail']})" in listing
    assert listing.count("(continue: ") == 2
    shown, text = _shown(ids["throw"], capsys)
    assert shown["resume"] is None and "continue it with" not in text


def test_shown_from_another_folder_the_command_names_the_run_folder(
    project: Path,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (project / "failing.yaml").write_text(FAILING)
    (project / "fail.prose").write_text('session "Fail now"\n')
    assert main(["run", "fail.prose", "--provider", "scripted:failing.yaml", "--json"]) == 1
    run_dir = project / ".prose" / "runs" / json.loads(capsys.readouterr().out)["run_id"]
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    monkeypatch.chdir(elsewhere)
    assert main(["show", str(run_dir), "--json"]) == 0
    command = json.loads(capsys.readouterr().out)["resume"]
    assert command == f"prose resume {run_dir.resolve()}"
    rules = f"scripted:{project / 'rules.yaml'}"
    assert main([*command.split()[1:], "--provider", rules, "--json"]) == 0  # it works as shown
    assert json.loads(capsys.readouterr().out)["status"] == "succeeded"

"""The per-process crash file and how a run's record is found (`openprose.vm.crashes`)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from openprose.vm.crashes import CRASHES_DIR, crash_file, crash_report, record_native_crashes


def _run_dir(home: Path) -> Path:
    run_dir = home / ".prose" / "runs" / "20261207-000000-abcdef"
    run_dir.mkdir(parents=True)
    return run_dir


def test_a_report_is_found_by_pid_and_start_time(tmp_path: Path) -> None:
    run_dir = _run_dir(tmp_path)
    report = crash_file(tmp_path, 4242, 777)
    report.parent.mkdir(parents=True)
    report.write_text(
        "\nFatal Python error: Segmentation fault\n\nThread 0x1 (most recent call first):\n"
    )
    assert crash_report(run_dir, {"pid": 4242, "pid_started": 777}) == (
        "Fatal Python error: Segmentation fault",
        report,
    )
    assert crash_report(run_dir, {"pid": 4242, "pid_started": 778}) is None  # pid reused
    assert crash_report(run_dir, {"pid": 4243, "pid_started": 777}) is None


@pytest.mark.parametrize(
    "meta",
    [
        {},
        {"pid": None},
        {"pid": True, "pid_started": 1},
        {"pid": -1},
        {"pid": 10**30, "pid_started": 1},  # no such process, and no such file name
        {"pid": 12, "pid_started": "soon"},
        {"pid": "12"},
    ],
)
def test_damaged_pids_find_no_report(tmp_path: Path, meta: dict[str, object]) -> None:
    assert crash_report(_run_dir(tmp_path), meta) is None


def test_an_empty_file_or_one_that_is_not_regular_is_no_report(tmp_path: Path) -> None:
    run_dir = _run_dir(tmp_path)
    (tmp_path / CRASHES_DIR).mkdir(parents=True)
    crash_file(tmp_path, 10, 1).write_text("")
    assert crash_report(run_dir, {"pid": 10, "pid_started": 1}) is None
    fifo = crash_file(tmp_path, 11, 1)
    os.mkfifo(fifo)
    found: list[object] = []
    reader = threading.Thread(
        target=lambda: found.append(crash_report(run_dir, {"pid": 11, "pid_started": 1}))
    )
    reader.start()
    reader.join(10)
    assert not reader.is_alive() and found == [None]  # a FIFO never blocks the listing
    crash_file(tmp_path, 12, 1).symlink_to("/dev/zero")
    assert crash_report(run_dir, {"pid": 12, "pid_started": 1}) is None


def test_outside_the_command_nothing_is_recorded(tmp_path: Path) -> None:
    assert record_native_crashes(tmp_path) is None
    assert not (tmp_path / CRASHES_DIR).exists()


SCRIPT = """
import sys
from pathlib import Path
from openprose.vm import crashes
crashes.this_process_is_the_command()
path = crashes.record_native_crashes(Path(sys.argv[1]))
assert crashes.record_native_crashes(Path(sys.argv[1]) / "elsewhere") == path  # once
print(path, flush=True)
if sys.argv[2] == "crash":
    import faulthandler
    faulthandler._sigsegv()
"""


def test_a_normal_exit_removes_the_empty_file_and_a_crash_keeps_its_report(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONFAULTHANDLER": ""}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path), "exit"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).parent == tmp_path / CRASHES_DIR
    assert not (tmp_path / CRASHES_DIR).exists()
    crashed = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path), "crash"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert crashed.returncode < 0
    report = Path(crashed.stdout.strip())
    text = report.read_text()
    assert text.startswith("Fatal Python error: Segmentation fault")
    assert "most recent call first" in text
    assert "Fatal Python error" not in crashed.stderr  # the report went to the file


def test_a_project_that_cannot_be_written_runs_without_the_record(tmp_path: Path) -> None:
    (tmp_path / ".prose").write_text("not a folder")
    script = (
        "import sys; from pathlib import Path; from openprose.vm import crashes; "
        "crashes.this_process_is_the_command(); print(crashes.record_native_crashes(Path(sys.argv[1])))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stdout) == (0, "None\n")

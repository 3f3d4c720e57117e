"""`.prose/` state files are read only as regular files, without blocking, up to a size
limit, and their fields are checked: anything else in their place is a damaged run, listed
as such, never a hang, a memory blow-up or a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from openprose.statefiles import (
    PID_MAX,
    StateFileUnreadable,
    open_state_file,
    read_state_file,
    valid_pid,
)


def test_a_regular_file_is_read_whole_or_from_an_offset(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_bytes(b"0123456789")
    assert read_state_file(path) == b"0123456789"
    assert read_state_file(path, offset=4) == b"456789"
    with open_state_file(path) as handle:
        assert handle.read() == b"0123456789"


def test_missing_is_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_state_file(tmp_path / "run.json")


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "folder", "symlink"])
def test_anything_but_a_regular_file_is_refused_at_once(kind: str, tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    if kind == "fifo":
        os.mkfifo(path)  # opening it for reading would wait for a writer
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")  # reading it would never end
    elif kind == "folder":
        path.mkdir()
    else:
        (tmp_path / "real.json").write_text("{}")
        path.symlink_to(tmp_path / "real.json")
    with pytest.raises(StateFileUnreadable) as refused:
        read_state_file(path)
    assert refused.value.strerror in ("not a regular file", "a symlink, not a regular file")


def test_over_the_limit_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    path.write_bytes(b"x" * 101)
    assert read_state_file(path, limit=101) == b"x" * 101
    with pytest.raises(StateFileUnreadable, match="larger than 100 bytes"):
        read_state_file(path, limit=100)


@pytest.mark.parametrize(
    ("value", "valid"),
    [(1234, True), (PID_MAX, True), (0, False), (-1, False), (10**30, False), (True, False),
     ("1234", False), (1.5, False), (None, False)],
)  # fmt: skip
def test_a_pid_is_an_int_a_process_can_have(value: object, valid: bool) -> None:
    assert (valid_pid(value) is not None) is valid


# --- through the CLI ------------------------------------------------------------------------


def make_runs(project: Path) -> Path:
    """One good run and the folder of a second, whose run.json the test puts in place."""
    runs = project / ".prose" / "runs"
    for name in ("20260101-000000-aaaaaa", "20260101-000001-bbbbbb"):
        (runs / name).mkdir(parents=True)
    (runs / "20260101-000000-aaaaaa" / "run.json").write_text(
        json.dumps({"run_id": "20260101-000000-aaaaaa", "status": "succeeded", "program": "a"})
    )
    return runs / "20260101-000001-bbbbbb"


def prose(project: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "openprose.cli", *args],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


DAMAGE = {
    "huge pid": lambda path: path.write_text(
        json.dumps({"status": "running", "pid": 10**30, "pid_started": 5, "program": "b"})
    ),
    "pid a string": lambda path: path.write_text(
        json.dumps({"status": "running", "pid": "12", "program": "b"})
    ),
    "a fifo": os.mkfifo,
    "a link to /dev/zero": lambda path: path.symlink_to("/dev/zero"),
    "not JSON": lambda path: path.write_bytes(b"\xff{"),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_runs_and_show_list_a_damaged_run_and_never_hang(damage: str, tmp_path: Path) -> None:
    run = make_runs(tmp_path)
    DAMAGE[damage](run / "run.json")
    listed = prose(tmp_path, "runs", "--json", timeout=30)
    assert listed.returncode == 0, listed.stderr
    rows = {row["run_id"]: row["status"] for row in json.loads(listed.stdout)}
    expected = "interrupted" if "pid" in damage else "damaged"
    assert rows == {"20260101-000000-aaaaaa": "succeeded", run.name: expected}
    shown = prose(tmp_path, "show", run.name, timeout=30)
    assert "Traceback" not in shown.stderr and "internal error" not in shown.stderr
    if expected == "damaged":
        assert shown.returncode == 2 and shown.stderr.startswith("prose: ")
    else:
        assert shown.returncode == 0 and "interrupted" in shown.stdout


def test_show_of_a_run_whose_journal_and_trail_are_not_files(tmp_path: Path) -> None:
    run = make_runs(tmp_path)
    (run / "run.json").write_text(json.dumps({"status": "failed", "program": "b"}))
    os.mkfifo(run / "journal.jsonl")
    (run / "audit.ndjson").symlink_to("/dev/zero")
    shown = prose(tmp_path, "show", run.name, timeout=30)
    assert shown.returncode == 0, shown.stderr
    assert "journal.jsonl: cannot read (not a regular file)" in shown.stdout
    trail = prose(tmp_path, "show", run.name, "--vlp", timeout=30)
    assert trail.returncode == 2
    assert trail.stderr.strip().endswith(
        "audit.ndjson: cannot read (a symlink, not a regular file)"
    )

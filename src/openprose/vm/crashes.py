"""Why a run's process died, when native code (llama.cpp, a C extension) crashed it.

A segfault ends the process at once: no `except`, no `finally`, nothing written to run.json,
which still says `running`. So the `prose` command points Python's `faulthandler` at one file
per process, `.prose/crashes/PID-START.txt` (START tells a reused pid apart, as run.json's
`pid_started` does), and a run whose process is gone is `crashed` when that file holds a
report, rather than `interrupted`. The file is removed at a normal exit when empty.
"""

from __future__ import annotations

import atexit
import contextlib
import faulthandler
import os
import stat
from pathlib import Path
from typing import IO, Any

CRASHES_DIR = Path(".prose") / "crashes"
REPORT_LIMIT = 64 * 1024  # a fault report is a few KiB: the first lines say what happened

_recording: tuple[Path, IO[str]] | None = None
# Only the `prose` command's own process records: in a host process (pytest, a library
# user's program) faulthandler is the host's to set up.
_as_command = False


def this_process_is_the_command() -> None:
    """Called by `prose`'s main when it runs as the process's command."""
    global _as_command
    _as_command = True


def crash_file(home: Path, pid: int, started: int | None) -> Path:
    """Where process `pid` (started at `started`, clock ticks since boot) records a crash."""
    return home / CRASHES_DIR / f"{pid}-{'unknown' if started is None else started}.txt"


def record_native_crashes(home: Path) -> Path | None:
    """From now on a fatal signal in this process writes its report (the Python stack of
    every thread) under `home`. Once per process: the first project wins. None outside the
    command's process, or when the file cannot be made (a read-only project): the run goes
    on without the record."""
    global _recording
    if _recording is not None or not _as_command:
        return _recording[0] if _recording is not None else None
    from openprose.record.runstore import process_started

    pid = os.getpid()
    path = crash_file(home, pid, process_started(pid))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        stream = path.open("w", encoding="utf-8")
    except OSError:
        return None
    faulthandler.enable(stream, all_threads=True)
    _recording = (path, stream)
    atexit.register(_stop_recording)
    return path


def _stop_recording() -> None:
    """A normal exit: nothing crashed, the empty file goes (the folder too, when empty)."""
    global _recording
    if _recording is None:
        return
    path, stream = _recording
    _recording = None
    faulthandler.disable()
    stream.close()
    with contextlib.suppress(OSError):
        if path.stat().st_size == 0:
            path.unlink()
            path.parent.rmdir()  # only when no other process's file is there


def crash_report(run_dir: Path, meta: dict[str, Any]) -> tuple[str, Path] | None:
    """(first line of the report, its file) when the process that ran `run_dir` (run.json's
    `pid`, `pid_started`) crashed on a fatal signal, else None."""
    pid, started = meta.get("pid"), meta.get("pid_started")
    if type(pid) is not int or pid <= 0 or (started is not None and type(started) is not int):
        return None
    home = run_dir.parent.parent.parent  # {home}/.prose/runs/{id}
    path = crash_file(home, pid, started)
    text = _read_report(path)
    if not text:
        return None
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first, path


def _read_report(path: Path) -> str:
    """The start of a crash file; nothing when it is absent, empty or not a regular file
    (a FIFO or a device put there must not block or flood `prose runs`)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return ""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return ""
        return os.read(fd, REPORT_LIMIT).decode("utf-8", "replace")
    except OSError:
        return ""
    finally:
        os.close(fd)

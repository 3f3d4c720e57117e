"""``prose runs``: the runs under `.prose/runs/`, oldest first, with their status."""

from __future__ import annotations

import argparse
import json
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON array")


def status_of(meta: dict[str, Any]) -> str:
    """`running` only while the recorded process is alive; a dead one was `interrupted`."""
    status = str(meta.get("status", "unknown"))
    if status == "running" and not _alive(meta.get("pid"), meta.get("pid_started")):
        return "interrupted"
    return status


def _alive(pid: object, started: object) -> bool:
    """Is the run's process still there? A process that reused its pid (it started at
    another time) is not it."""
    from openprose.statefiles import valid_pid
    from openprose.vm.runstore import process_started

    pid = valid_pid(pid)
    if pid is None:  # none recorded, or damage (10**30 would overflow os.kill)
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return started is None or process_started(pid) in (None, started)


def run(args: argparse.Namespace) -> int:
    from openprose.project import runs_home
    from openprose.terminal import printable
    from openprose.vm.logged_runs import logged_runs
    from openprose.vm.runstore import RUNS_DIR, list_runs

    home = runs_home()
    rows = [run_row(folder, read_meta(folder)) for folder in list_runs(home)]
    # A batch's runs not yet asked for live in its run log (`prose show` makes the folder).
    rows += [run_row(home / RUNS_DIR / run.run_id, run.meta) for run in logged_runs(home)]
    rows.sort(key=lambda row: row["run_id"])
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print("no runs yet (they appear under .prose/runs/)")
        return 0
    for row in rows:
        line = f"{row['run_id']}  {row['status']:<11}  {row['started']}  {row['program']}"
        print(printable(line))
    return 0


def read_meta(folder: Path) -> object:
    """A run folder's run.json as read (None when it cannot be read or decoded)."""
    import orjson

    from openprose.statefiles import read_state_file

    try:  # orjson: a nesting too deep for Python's json is a decode error, not a crash
        return orjson.loads(read_state_file(folder / "run.json"))
    except (OSError, orjson.JSONDecodeError):
        return None


def run_row(folder: Path, meta: object) -> dict[str, str]:
    """One run of the listing (`prose runs`, `prose ui`): id, status, program, start time,
    from the run's `read_meta`."""
    if isinstance(meta, dict):
        status = status_of(meta)
    else:
        meta, status = {}, "damaged"  # run.json unreadable: `prose show` says why
    return {
        "run_id": folder.name,
        "status": status,
        "program": _text(meta.get("program", "")),
        "started": _text(meta.get("started", "")),
    }


def _text(value: object) -> str:
    """A run.json field shown in the listing: text as is, anything else (damage) shortened."""
    return value if isinstance(value, str) else repr(value)[:60]

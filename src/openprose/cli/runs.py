"""``prose runs``: the runs under `.prose/runs/`, oldest first, with their status."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any


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
    from openprose.vm.runstore import process_started

    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return started is None or process_started(pid) in (None, started)


def run(args: argparse.Namespace) -> int:
    import orjson

    from openprose.project import runs_home
    from openprose.terminal import printable
    from openprose.vm.logged_runs import logged_runs
    from openprose.vm.runstore import list_runs

    listed: list[tuple[str, Any]] = []
    for folder in list_runs(runs_home()):
        try:  # orjson: a nesting too deep for Python's json is a decode error, not a crash
            listed.append((folder.name, orjson.loads((folder / "run.json").read_bytes())))
        except (OSError, orjson.JSONDecodeError):
            listed.append((folder.name, None))
    # A batch's runs not yet asked for live in its run log (`prose show` makes the folder).
    listed += [(run.run_id, run.meta) for run in logged_runs(runs_home())]
    rows = []
    for run_id, meta in sorted(listed, key=lambda item: item[0]):
        if isinstance(meta, dict):
            status = status_of(meta)
        else:
            meta, status = {}, "damaged"  # run.json unreadable: `prose show` says why
        rows.append(
            {
                "run_id": run_id,
                "status": status,
                "program": _text(meta.get("program", "")),
                "started": _text(meta.get("started", "")),
            }
        )
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


def _text(value: object) -> str:
    """A run.json field shown in the listing: text as is, anything else (damage) shortened."""
    return value if isinstance(value, str) else repr(value)[:60]

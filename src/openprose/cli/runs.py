"""``prose runs``: the runs under `.prose/runs/`, oldest first, with their status."""

from __future__ import annotations

import argparse
import json
import os
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON array")


def status_of(meta: dict[str, Any], run_dir: Path | None = None) -> str:
    """`running` only while the recorded process is alive. A dead one was `crashed` when
    it left a fault report (`openprose.vm.crashes`; looked for when `run_dir` is given),
    else `interrupted` (killed, or stopped with its batch; a Ctrl-C'd `prose run` records
    `interrupted` itself)."""
    status = str(meta.get("status", "unknown"))
    if status == "running" and not _alive(meta.get("pid"), meta.get("pid_started")):
        from openprose.vm.crashes import crash_report

        crashed = run_dir is not None and crash_report(run_dir, meta) is not None
        return "crashed" if crashed else "interrupted"
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
    except (ProcessLookupError, OverflowError):  # OverflowError: no pid is that large
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
    listed = [(folder, read_meta(folder)) for folder in list_runs(home)]
    # A batch's runs not yet asked for live in its run log (`prose show` makes the folder).
    listed += [(home / RUNS_DIR / run.run_id, run.meta) for run in logged_runs(home)]
    rows = [run_row(folder, meta) for folder, meta in listed]
    rows.sort(key=lambda row: row["run_id"])
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print("no runs yet (they appear under .prose/runs/)")
        return 0
    for row in rows:
        line = f"{row['run_id']}  {row['status']:<11}  {row['started']}  {row['program']}"
        if row["resume"]:
            line += f"  (continue: {row['resume']})"
        print(printable(line))
    return 0


def resume_command(run_id: str, status: str, error: object, run_dir: Path) -> str | None:
    """The command that continues a run, for every run a resume can take further: one
    interrupted, crashed or aborted; one stopped at a budget (with the flag that lifts it);
    one waiting for an approval (after it); one that failed where a resume would ask a model
    again (not a `throw`, which every replayed answer leads back to). Else None."""
    resume = f"prose resume {run_id}"
    if status in ("interrupted", "crashed", "aborted"):
        return resume
    if status == "failed":
        return resume if _asks_again(run_dir) else None
    if status == "stopped":
        said = error if isinstance(error, str) else ""
        found = re.search(r"prose resume \S+ (--max-[a-z]+) N", said)  # runner's `_stopped`
        return f"{resume} {found.group(1)} N" if found else resume
    if status == "waiting":
        return f"prose approve {run_id} (or prose deny {run_id}), then {resume}"
    return None


def _asks_again(run_dir: Path) -> bool:
    """`prose run`'s test: would a resume send a model call again? A run folder that is not
    there (a batch's run kept in its run log) or cannot be read is not judged here."""
    from openprose.cli.run import asks_again

    if not run_dir.is_dir():
        return False
    try:
        return asks_again(run_dir)
    except OSError:
        return True  # `prose resume` says what it cannot read


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
    from the run's `read_meta`, and the command that continues it ("" when none does)."""
    if isinstance(meta, dict):
        status = status_of(meta, folder)
    else:
        meta, status = {}, "damaged"  # run.json unreadable: `prose show` says why
    return {
        "run_id": folder.name,
        "status": status,
        "program": _text(meta.get("program", "")),
        "started": _text(meta.get("started", "")),
        "resume": resume_command(folder.name, status, meta.get("error"), folder) or "",
    }


def _text(value: object) -> str:
    """A run.json field shown in the listing: text as is, anything else (damage) shortened."""
    return value if isinstance(value, str) else repr(value)[:60]

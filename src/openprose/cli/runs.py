"""``prose runs``: the runs under `.prose/runs/`, oldest first, with their status."""

from __future__ import annotations

import argparse
import json

from openprose.session.runs import read_meta, run_row


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON array")


def run(args: argparse.Namespace) -> int:
    from openprose.project import runs_home
    from openprose.record.logged_runs import logged_runs
    from openprose.record.runstore import RUNS_DIR, list_runs
    from openprose.terminal import printable

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
        if row.get("parent"):
            line += f"  (fork of {row['parent']} at {row['parent_step']})"
        if row["resume"]:
            line += f"  (continue: {row['resume']})"
        print(printable(line))
    return 0

"""``prose approve RUN [ID]... [--all] [--for-run]``: answer a waiting run's permission
requests with yes; ``prose resume RUN`` then continues it."""

from __future__ import annotations

import argparse

ANSWER = "once"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_decision_arguments(parser)
    parser.add_argument(
        "--for-run",
        action="store_true",
        help="allow the same action again for the rest of the run without asking",
    )


def add_decision_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_ref", metavar="RUN", help="run id (or unique prefix) or run folder")
    parser.add_argument("ids", nargs="*", metavar="ID", help="request ids (see `prose show`)")
    parser.add_argument("--all", action="store_true", help="answer every pending request")


def run(args: argparse.Namespace) -> int:
    return decide(args, "run" if args.for_run else ANSWER)


def decide(args: argparse.Namespace, answer: str) -> int:
    import sys
    from pathlib import Path

    from openprose.cli.runs import status_of
    from openprose.vm.approvals import ApprovalError, decide_pending, pending_requests
    from openprose.vm.logged_runs import resolve_run
    from openprose.vm.runstore import RUNS_DIR, AmbiguousRun, DamagedRun, RunBusy, RunStore

    try:
        run_dir = resolve_run(Path.cwd(), args.run_ref)
        if run_dir is None:
            print(f"prose: no run {args.run_ref!r} under {Path.cwd() / RUNS_DIR}", file=sys.stderr)
            return 2
        meta = RunStore.open(run_dir).read_meta()
    except (AmbiguousRun, DamagedRun, RunBusy) as error:
        print(f"prose: {error}", file=sys.stderr)
        return 2
    if status_of(meta) == "running":
        print(f"prose: run {run_dir.name} is still running", file=sys.stderr)
        return 2
    requests = {str(r["id"]): r for r in pending_requests(run_dir)}
    try:
        chosen = decide_pending(run_dir, answer, args.ids, all_pending=args.all)
    except ApprovalError as error:
        print(f"prose: {error}", file=sys.stderr)
        return 2
    verb = {"once": "approved", "run": "approved for the run", "deny": "denied"}[answer]
    for request_id in chosen:
        r = requests[request_id]
        print(f"{verb}: {r.get('tool')} {r.get('kind')} {r.get('action')}  ({request_id})")
    print(f"continue with: prose resume {run_dir.name}")
    return 0

"""``prose approve RUN [ID]... [--all] [--for-run]``: answer a waiting run's permission
requests with yes; ``prose resume RUN`` then continues it."""

from __future__ import annotations

import argparse

from openprose.session.answers import answer_requests

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
    parser.add_argument(
        "ids", nargs="*", default=[], metavar="ID", help="request ids (see `prose show`)"
    )
    parser.add_argument("--all", action="store_true", help="answer every pending request")


def run(args: argparse.Namespace) -> int:
    return decide(args, "run" if args.for_run else ANSWER)


def decide(args: argparse.Namespace, answer: str) -> int:
    import sys

    from openprose.project import runs_home
    from openprose.record.logged_runs import resolve_run
    from openprose.record.runstore import RUNS_DIR, AmbiguousRun, DamagedRun, RunBusy
    from openprose.terminal import neutralise, one_line
    from openprose.vm.approvals import ApprovalError

    home = runs_home()  # where `prose resume` and `show` look too
    try:
        run_dir = resolve_run(home, args.run_ref)
        if run_dir is None:
            print(f"prose: no run {args.run_ref!r} under {home / RUNS_DIR}", file=sys.stderr)
            return 2
        answered = answer_requests(run_dir, answer, args.ids, all_pending=args.all)
    except (AmbiguousRun, DamagedRun, RunBusy, ApprovalError) as error:
        print(f"prose: {error}", file=sys.stderr)
        return 2
    for r in answered:
        # the action as it will run, escaped on one line (a hidden `\r` cannot mask it)
        action = one_line(str(r.get("action")))
        said = f"{VERBS[answer]}: {r.get('tool')} {r.get('kind')} {action}  ({r['id']})"
        print(neutralise(said))
    print(f"continue with: prose resume {run_dir.name}")
    return 0


VERBS = {"once": "approved", "run": "approved for the run", "deny": "denied"}

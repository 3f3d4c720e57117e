"""``prose resume RUN``: continue an interrupted run (a run id, an id prefix or a run folder).

Finished sessions and decisions are served from the run's journal and never sent again; only
unfinished work runs. Provider, model routes, concurrency and evaluator default to what the
run was started with (secrets are never recorded; they come from the environment as usual).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from openprose.cli.run import (
    add_budget_arguments,
    add_offline_argument,
    add_permission_mode_argument,
    add_provider_arguments,
    add_trace_argument,
    guarded,
    hold_progress,
    progress,
    report,
    run_async,
    run_options,
    shut_down,
)
from openprose.record.journal import JOURNAL_FILE
from openprose.session.opening import UsageError, open_tracer_or_fail, run_tools
from openprose.session.resume import NothingToResume, locate_run, prepare_resume


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_ref", metavar="RUN", help="run id (or unique prefix) or run folder")
    add_provider_arguments(parser)
    add_permission_mode_argument(parser)
    add_budget_arguments(parser)
    add_trace_argument(parser)
    add_offline_argument(parser)


def run(args: argparse.Namespace) -> int:
    return guarded(_resume, args)


def _nothing_to_resume(done: NothingToResume, as_json: bool) -> int:
    """A run that already succeeded is not run again (exit 0); `prose show` has its outputs."""
    run_dir, meta = done.run_dir, done.meta
    print(
        f"prose: run {run_dir.name} already succeeded; nothing to resume "
        f"(prose show {run_dir.name} shows its outputs)",
        file=sys.stderr,
    )
    if as_json:
        from openprose.record.runstore import RunStore

        shown = {
            "run_id": run_dir.name,
            "status": "succeeded",
            "outputs": RunStore.open(run_dir).read_outputs() or {},
            "usage": meta.get("usage") or {},
            "resumed": False,
        }
        print(json.dumps(shown, ensure_ascii=False))
    return 0


def _resume(args: argparse.Namespace) -> int:
    from openprose.project import runs_home
    from openprose.record.runstore import RunBusy, lock_run

    home = runs_home()
    run_dir = locate_run(home, args.run_ref)
    try:
        # Held until the run ends: a second `prose resume` of the run stops here.
        lock = lock_run(run_dir)
    except RunBusy as error:
        raise UsageError(str(error)) from None
    try:
        return _resume_locked(args, home, run_dir)
    finally:
        lock.release()


def _resume_locked(args: argparse.Namespace, home: Path, run_dir: Path) -> int:
    options = run_options(args)
    try:
        resuming = prepare_resume(home, str(run_dir), options)
    except NothingToResume as done:
        return _nothing_to_resume(done, args.json)
    args.notice.project, args.notice.provider = resuming.project, resuming.settings.provider
    name_recorded_answers(run_dir)
    tools = run_tools(resuming.project, options)
    tracer = open_tracer_or_fail(args.trace)
    with progress(args.json, args.notice, args.quiet) as observer, shut_down(tracer):
        hold_progress(tools, observer)
        result = run_async(resuming.resume(observer, tools, tracer), resuming.provider)
    return report(result, args.json, args.notice)


ANSWERED = {"once": "approved once", "run": "approved for the run", "deny": "denied"}


def name_recorded_answers(run_dir: Path) -> None:
    """Say on stderr which recorded answers this resume applies, and which it ignores (an
    answer without a seal that holds: appended by an agent, another run's, altered)."""
    from openprose.record.journal import read_journal
    from openprose.terminal import neutralise
    from openprose.vm.approvals import honoured_answers, run_id_of
    from openprose.vm.runtime import ToolTurns

    try:
        turns = ToolTurns.of(read_journal(run_dir / JOURNAL_FILE))
    except (KeyError, TypeError, ValueError, OSError):
        return  # a damaged journal: the resume itself says where
    honoured = honoured_answers(turns, run_id_of(run_dir))
    for request_id, recorded in honoured.answers.items():
        print(
            f"prose: applying the answer {ANSWERED[recorded.answer]} "
            f"(by {recorded.by or 'cli'}) to {neutralise(honoured.shown[request_id])} "
            f"({request_id})",
            file=sys.stderr,
        )
    for ignored in honoured.ignored:
        print(f"prose: {neutralise(ignored.describe())}", file=sys.stderr)
    _name_recorded_replies(run_dir)


def _name_recorded_replies(run_dir: Path) -> None:
    """The same for the answers to the run's questions (`ask`)."""
    from openprose.terminal import neutralise, one_line
    from openprose.vm.replies import recorded_answers

    try:
        found = recorded_answers(run_dir)
    except (KeyError, TypeError, ValueError, OSError):
        return  # a damaged journal: the resume itself says where
    for recorded in found:
        if recorded.reply is None:
            continue
        answer = one_line(repr(recorded.reply.get("answer")))
        question = f"{recorded.question.id} ({one_line(recorded.question.text)})"
        if recorded.problem:
            said = f"ignored the answer {answer} to {question}: {recorded.problem}"
        else:
            who = recorded.reply.get("user")
            by = f"{recorded.reply.get('by')}" + (f", {who}" if who else "")
            said = f"applying the answer {answer} (by {by}) to {question}"
        print(f"prose: {neutralise(said)}", file=sys.stderr)

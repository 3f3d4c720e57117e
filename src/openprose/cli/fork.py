"""``prose fork RUN --at STEP [--input k=v] [--set name=value]``: a new run that takes RUN's
answers up to STEP, with inputs changed and bindings set, and continues live from there
(`openprose.session.fork`). Provider, models and settings default to RUN's."""

from __future__ import annotations

import argparse

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
from openprose.session.fork import pairs, prepare_fork
from openprose.session.opening import open_tracer_or_fail, read_inputs, run_tools


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_ref", metavar="RUN", help="run id (or unique prefix) or run folder")
    parser.add_argument(
        "--at",
        required=True,
        metavar="STEP",
        help="the step to continue live from, as `prose show RUN` prints it (or a statement "
        "holding steps, such as a loop)",
    )
    parser.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="change an input of RUN; repeat for several",
    )
    parser.add_argument(
        "--inputs",
        metavar="FILE.json",
        help="inputs to change, as a JSON object ('-': stdin); values keep their JSON types",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        dest="values",
        metavar="NAME=VALUE",
        help="answer the session that bound NAME before STEP with VALUE; repeat for several",
    )
    add_provider_arguments(parser)
    add_permission_mode_argument(parser)
    add_budget_arguments(parser)
    add_trace_argument(parser)
    add_offline_argument(parser)


def run(args: argparse.Namespace) -> int:
    return guarded(_fork, args)


def _fork(args: argparse.Namespace) -> int:
    from openprose.project import runs_home

    options = run_options(args)
    forking = prepare_fork(
        runs_home(),
        args.run_ref,
        args.at,
        inputs=read_inputs(args.input, args.inputs),
        values=pairs(args.values, "--set"),
        options=options,
    )
    args.notice.project, args.notice.provider = forking.project, forking.parent.settings.provider
    tools = run_tools(forking.project, options)
    tracer = open_tracer_or_fail(args.trace)
    with progress(args.json, args.notice, args.quiet) as observer, shut_down(tracer):
        hold_progress(tools, observer)
        result = run_async(forking.start(observer, tools, tracer), forking.provider)
    return report(result, args.json, args.notice)

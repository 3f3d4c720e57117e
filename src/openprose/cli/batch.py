"""``prose batch PROGRAM INPUTS.jsonl``: one run per case, rows in an output file.

Exit status: 0 when every case succeeded; 1 when some case failed or was invalid (its row
says why); 2 for usage errors (bad program, provider configuration, unreadable inputs).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

OK, FAILED, USAGE_ERROR = 0, 1, 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from openprose.cli.run import add_budget_arguments, add_provider_arguments, add_trace_argument

    parser.add_argument("program", metavar="PROGRAM", nargs="?", help="the .prose file to run")
    parser.add_argument(
        "inputs",
        metavar="INPUTS",
        nargs="?",
        help="cases: a .jsonl file of JSON objects of inputs, or a .csv file with a header",
    )
    parser.add_argument(
        "-o", "--output", metavar="FILE", help="rows file (default: in the batch folder)"
    )
    parser.add_argument(
        "--resume", metavar="BATCH", help="continue a batch: run only the cases without a row"
    )
    parser.add_argument(
        "--max-runs", type=int, metavar="N", help="runs in flight at once (default 64)"
    )
    parser.add_argument(
        "--executor", choices=("local", "ray"), help="where runs execute (default: local)"
    )
    parser.add_argument(
        "--processes",
        type=int,
        metavar="N",
        help="local executor: processes running the runs, this one included (default 1; "
        "more use idle cores, see docs/batch.md)",
    )
    parser.add_argument(
        "--ray-address", metavar="ADDRESS", help="an existing Ray cluster (default: start one)"
    )
    parser.add_argument(
        "--durable",
        action="store_true",
        help="fsync each run's journal as prose run does (slower; see docs/batch.md)",
    )
    add_provider_arguments(
        parser,
        json_help='print one JSON object {"batch_id", "status", "output", "cases", '
        '"succeeded", "failed", "invalid", "usage", ...}',
    )
    add_budget_arguments(parser)  # each run's budgets
    add_trace_argument(parser)  # a span for the batch, one per case, each run's own trace


def run(args: argparse.Namespace) -> int:
    from openprose.batches import BatchError

    _announced.clear()
    try:
        return _batch(args)
    except BatchError as error:
        return _not_run(str(error), args.json)
    except OSError as error:  # the batch folder or rows file cannot be written
        from cliconventions import os_error_text

        if isinstance(error, BrokenPipeError):
            raise  # the output's reader left: guard_output ends quietly
        if not _announced:
            return _not_run(f"the batch could not start: {os_error_text(error)}", args.json)
        print(
            f"prose batch: cannot write the batch: {os_error_text(error)}; after fixing the "
            f"cause, continue with: prose batch --resume {_announced[-1]}",
            file=sys.stderr,
        )
        return FAILED


def _not_run(message: str, as_json: bool) -> int:
    print(f"prose batch: {message}", file=sys.stderr)
    if as_json:
        print(json.dumps({"batch_id": None, "status": "not_run", "error": message}))
    return USAGE_ERROR


def _batch(args: argparse.Namespace) -> int:
    from openprose.batches import BatchError, resume_batch, run_batch
    from openprose.batches.cases import count_cases
    from openprose.cli.run import budget_flags
    from openprose.session.options import RunOptions

    if args.resume:
        if args.program or args.inputs or args.output or args.provider or args.model:
            raise BatchError(
                "--resume BATCH continues with the batch's own program, inputs and provider; "
                "give no PROGRAM, INPUTS, -o, --provider or --model with it"
            )
        root = _batch_root(args.resume)
        # the progress view's total (--json shows none)
        total = count_cases(Path(_meta(root).get("inputs", ""))) if root and not args.json else None
        title = f"batch {root.name if root else args.resume}"
        return _show(
            lambda on_row: resume_batch(
                args.resume,
                max_runs=args.max_runs,
                executor=args.executor,
                ray_address=args.ray_address,
                processes=args.processes,
                trace=args.trace or None,  # without --trace: as the environment says
                on_row=on_row,
                on_start=_announce,
            ),
            args.json,
            total,
            title,
            _meta(root).get("inputs") if root else None,
        )
    if not args.program or not args.inputs:
        raise BatchError("give PROGRAM and INPUTS (or --resume BATCH)")
    total = None if args.json else count_cases(Path(args.inputs))
    return _show(
        lambda on_row: run_batch(
            args.program,
            args.inputs,
            output=args.output,
            options=RunOptions(
                provider=args.provider,
                models=tuple(args.model),
                max_concurrency=args.max_concurrency,
                evaluator=args.evaluator,
                budgets=budget_flags(args),
                yes=args.yes,
            ),
            max_runs=64 if args.max_runs is None else args.max_runs,
            durable=args.durable,
            trace=args.trace or None,  # without --trace: as the environment says
            executor=args.executor or "local",
            ray_address=args.ray_address,
            processes=1 if args.processes is None else args.processes,
            on_row=on_row,
            on_start=_announce,
        ),
        args.json,
        total,
        f"batch {Path(args.program).name}",
        args.inputs,
    )


def _batch_root(spec: str) -> Path | None:
    from openprose.batches.store import find_batch
    from openprose.project import runs_home

    try:
        return find_batch(runs_home(), spec)  # where `resume_batch` looks
    except ValueError:
        return None


def _meta(root: Path) -> dict[str, Any]:
    try:
        data = json.loads((root / "batch.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _show(start: Any, as_json: bool, total: int | None, title: str, inputs: str | None) -> int:
    """Run the batch with a progress view (none with --json), then the summary. `inputs`:
    the cases file, naming an invalid line as `cases.jsonl:LINE:`."""
    cases = f"{inputs}:" if inputs else "line "

    def invalid_lines_only(row: dict[str, Any], stats: Any) -> None:
        if row["status"] == "invalid":
            print(f"prose batch: {invalid_line(cases, row)}", file=sys.stderr)

    from cliconventions import interrupt_status, run_async
    from cliconventions import interrupt_word as interrupted
    from openprose.batches.event_loop import batch_loop_factory
    from openprose.batches.progress import BarProgress, PlainBatchProgress, invalid_line

    loop = batch_loop_factory()

    try:
        if as_json:
            result = run_async(start(invalid_lines_only), loop)
        elif sys.stderr.isatty() and os.environ.get("TERM") != "dumb":
            with BarProgress(total, title, cases) as bar:
                result = run_async(start(bar), loop)
        else:
            plain = PlainBatchProgress(sys.stderr, total, cases=cases)
            result = run_async(start(plain), loop)
            plain.finish()
    except KeyboardInterrupt as interrupt:  # Ctrl-C, or SIGTERM
        if not _announced:
            print(
                f"prose batch: {interrupted(interrupt)} before the batch started", file=sys.stderr
            )
        else:
            print(
                f"prose batch: {interrupted(interrupt)}; continue with: "
                f"prose batch --resume {_announced[-1]}",
                file=sys.stderr,
            )
        return interrupt_status(interrupt)
    summary = result.to_json()
    if as_json:
        print(json.dumps(summary, ensure_ascii=False))
    else:
        print(_summary_text(result.batch_id, result.status, str(result.output), summary))
    return OK if result.status == "succeeded" else FAILED


def _summary_text(batch_id: str, status: str, output: str, summary: dict[str, Any]) -> str:
    counts = (
        f"{summary['succeeded']} succeeded, {summary['failed']} failed, "
        f"{summary['invalid']} invalid"
    )
    if summary["done_before"]:
        counts += f" ({summary['done_before']} done before this resume)"
    from openprose.batches.driver import INVALID_LINES
    from openprose.batches.progress import cost_text
    from openprose.providers.prices import cache_text

    status_text = (
        "invalid input lines, not run (every run succeeded)" if status == INVALID_LINES else status
    )

    usage = summary["usage"]
    lines = [
        f"batch {batch_id}: {status_text}  {counts}",
        f"rows: {output}",
        f"tokens: {usage['input_tokens']} in"
        + cache_text(usage.get("cache_read_tokens", 0), usage.get("cache_write_tokens", 0))
        + f", {usage['output_tokens']} out; cost "
        + cost_text(usage["cost_usd"], usage["unpriced_models"], usage["by_model"]),
    ]
    return "\n".join(lines)


_announced: list[str] = []


def _announce(batch_id: str, root: Path) -> None:
    """The batch id on stderr at the start, so an interrupted batch can be found."""
    _announced.append(batch_id)
    from openprose.vm.crashes import record_native_crashes

    record_native_crashes(root.parent.parent.parent)  # {home}/.prose/batches/{id}
    print(f"prose batch: batch {batch_id} ({root})", file=sys.stderr)

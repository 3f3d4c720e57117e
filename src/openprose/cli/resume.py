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
from typing import Any

from openprose.cli.run import (
    UsageError,
    add_budget_arguments,
    add_provider_arguments,
    add_trace_argument,
    budget_flags,
    cost_is_enforceable,
    guarded,
    load_imports_or_fail,
    open_provider_or_fail,
    open_tracer_or_fail,
    progress,
    report,
    run_async,
    run_prices,
    shut_down,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_ref", metavar="RUN", help="run id (or unique prefix) or run folder")
    add_provider_arguments(parser)
    add_budget_arguments(parser)
    add_trace_argument(parser)


def run(args: argparse.Namespace) -> int:
    return guarded(_resume, args)


def _nothing_to_resume(run_dir: Path, meta: dict[str, Any], as_json: bool) -> int:
    """A run that already succeeded is not run again (exit 0); `prose show` has its outputs."""
    print(
        f"prose: run {run_dir.name} already succeeded; nothing to resume "
        f"(prose show {run_dir.name} shows its outputs)",
        file=sys.stderr,
    )
    if as_json:
        from openprose.vm.runstore import RunStore

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
    from openprose.parser import parse_text
    from openprose.project import runs_home
    from openprose.vm.runstore import RUNS_DIR, AmbiguousRun, DamagedRun, RunStore, find_run

    project = runs_home()
    try:
        run_dir = find_run(project, args.run_ref)
        if run_dir is None:
            raise UsageError(f"no run {args.run_ref!r} under {project / RUNS_DIR}")
        meta = RunStore.open(run_dir).read_meta()
    except (AmbiguousRun, DamagedRun) as error:
        raise UsageError(str(error)) from None
    project = run_dir.resolve().parent.parent.parent  # {project}/.prose/runs/{id}
    from openprose.cli.runs import status_of

    status = status_of(meta)
    if status == "running":
        raise UsageError(f"run {run_dir.name} is still running (pid {meta.get('pid')})")
    if status == "succeeded":
        return _nothing_to_resume(run_dir, meta, args.json)
    launch = meta.get("launch") or {}
    text = (run_dir / "program.prose").read_text(encoding="utf-8")
    parsed = parse_text(text, str(meta.get("program") or run_dir / "program.prose"))
    if not parsed.ok:
        raise UsageError(f"{run_dir}/program.prose no longer parses")
    pins = dict(meta.get("import_pins") or {})
    program_dir = Path(launch.get("program_dir") or project)
    imports = load_imports_or_fail(parsed.program, program_dir, project, pinned=pins)
    settings, provider = open_provider_or_fail(
        project,
        args.provider or launch.get("provider"),
        args.model or list(launch.get("models") or []),
        args.max_concurrency or launch.get("max_concurrency"),
        record=args.record,
        resuming=run_dir,
    )
    from dataclasses import replace

    from openprose.vm.runner import VMConfig, resume_run

    recorded = meta.get("config") or {}
    config = VMConfig(**{k: v for k, v in recorded.items() if k in VMConfig.__dataclass_fields__})
    config = replace(config, max_concurrency=settings.max_concurrency)
    if args.evaluator:
        config = replace(config, evaluator_model=args.evaluator)
    # A budget given now replaces the recorded one (a larger budget lets a stopped run go on).
    config = replace(config, **budget_flags(args))
    prices = run_prices(project)
    cost_is_enforceable(parsed.program, config, settings, prices)
    args.notice.project, args.notice.provider = project, settings.provider
    tracer = open_tracer_or_fail(args.trace)
    with progress(args.json, args.notice, args.quiet) as observer, shut_down(tracer):
        result = run_async(
            resume_run(
                run_dir,
                parsed.program,
                provider=provider,
                project_dir=project,
                imports=imports,
                settings=settings,
                config=config,
                observer=observer,
                prices=prices,
                tracer=tracer,
            ),
            provider,
        )
    return report(result, args.json, args.notice)

"""``prose resume RUN``: continue an interrupted run (a run id, an id prefix or a run folder).

Finished sessions and decisions are served from the run's journal and never sent again; only
unfinished work runs. Provider, model routes, concurrency and evaluator default to what the
run was started with (secrets are never recorded; they come from the environment as usual).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
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
    hold_progress,
    load_imports_or_fail,
    open_provider_or_fail,
    open_tracer_or_fail,
    progress,
    report,
    run_async,
    run_prices,
    shut_down,
    tool_runtime,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_ref", metavar="RUN", help="run id (or unique prefix) or run folder")
    add_provider_arguments(parser)
    add_budget_arguments(parser)
    add_trace_argument(parser)


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
    from openprose.project import runs_home

    try:
        resuming = prepare_resume(
            runs_home(),
            args.run_ref,
            provider_spec=args.provider,
            models=args.model,
            max_concurrency=args.max_concurrency,
            evaluator=args.evaluator,
            record=args.record,
            budgets=budget_flags(args),
        )
    except NothingToResume as done:
        return _nothing_to_resume(done, args.json)
    args.notice.project, args.notice.provider = resuming.project, resuming.settings.provider
    tools = tool_runtime(resuming.project, args.yes)
    tracer = open_tracer_or_fail(args.trace)
    with progress(args.json, args.notice, args.quiet) as observer, shut_down(tracer):
        hold_progress(tools, observer)
        result = run_async(resuming.resume(observer, tools, tracer), resuming.provider)
    return report(result, args.json, args.notice)


class NothingToResume(Exception):
    """The run already succeeded: there is nothing to continue."""

    def __init__(self, run_dir: Path, meta: dict[str, Any]) -> None:
        super().__init__(f"run {run_dir.name} already succeeded; nothing to resume")
        self.run_dir = run_dir
        self.meta = meta


@dataclass(slots=True)
class Resuming:
    """What `resume_run` needs, checked and opened (shared with `openprose.resume`)."""

    run_dir: Path
    project: Path
    program: Any  # nodes.Program of the run's own program.prose
    imports: Any
    settings: Any
    provider: Any
    config: Any
    prices: Any

    async def resume(self, observer: Any = None, tools: Any = None, tracer: Any = None) -> Any:
        """Continue the run (`resume_run`); the caller closes the provider."""
        from openprose.vm.runner import resume_run

        return await resume_run(
            self.run_dir,
            self.program,
            provider=self.provider,
            project_dir=self.project,
            imports=self.imports,
            settings=self.settings,
            config=self.config,
            observer=observer,
            prices=self.prices,
            tools=tools,
            tracer=tracer,
        )


def prepare_resume(
    project: Path,
    run_ref: str,
    *,
    provider_spec: str | None = None,
    models: list[str] | None = None,
    max_concurrency: int | None = None,
    evaluator: str | None = None,
    record: str | None = None,
    budgets: dict[str, Any] | None = None,
) -> Resuming:
    """Find the run and open what continuing it needs; options not given default to those
    the run was started with. A budget given now replaces the recorded one (a larger budget
    lets a stopped run go on)."""
    from openprose.parser import parse_text
    from openprose.vm.runstore import RUNS_DIR, AmbiguousRun, DamagedRun, RunStore, find_run

    try:
        run_dir = find_run(project, run_ref)
        if run_dir is None:
            raise UsageError(f"no run {run_ref!r} under {project / RUNS_DIR}")
        meta = RunStore.open(run_dir).read_meta()
    except (AmbiguousRun, DamagedRun) as error:
        raise UsageError(str(error)) from None
    project = run_dir.resolve().parent.parent.parent  # {project}/.prose/runs/{id}
    from openprose.cli.runs import status_of

    status = status_of(meta)
    if status == "running":
        raise UsageError(f"run {run_dir.name} is still running (pid {meta.get('pid')})")
    if status == "succeeded":
        raise NothingToResume(run_dir, meta)
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
        provider_spec or launch.get("provider"),
        models or list(launch.get("models") or []),
        max_concurrency or launch.get("max_concurrency"),
        record=record,
        resuming=run_dir,
    )
    from dataclasses import replace

    from openprose.vm.runner import VMConfig

    recorded = meta.get("config") or {}
    config = VMConfig(**{k: v for k, v in recorded.items() if k in VMConfig.__dataclass_fields__})
    config = replace(config, max_concurrency=settings.max_concurrency)
    if evaluator:
        config = replace(config, evaluator_model=evaluator)
    config = replace(config, **(budgets or {}))
    prices = run_prices(project)
    cost_is_enforceable(parsed.program, config, settings, prices)
    return Resuming(run_dir, project, parsed.program, imports, settings, provider, config, prices)

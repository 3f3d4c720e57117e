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
    add_budget_arguments,
    add_offline_argument,
    add_permission_mode_argument,
    add_provider_arguments,
    add_trace_argument,
    budget_flags,
    guarded,
    hold_progress,
    open_tracer_or_fail,
    progress,
    report,
    run_async,
    shut_down,
)
from openprose.session.opening import (
    BUDGET_KINDS,
    UsageError,
    check_evaluator,
    check_vm_setting,
    cost_is_enforceable,
    load_imports_or_fail,
    offline_wanted,
    open_provider_or_fail,
    run_prices,
    tool_runtime,
)


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
    from openprose.vm.runstore import RunBusy, lock_run

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

    try:
        resuming = prepare_resume(
            home,
            str(run_dir),
            provider_spec=args.provider,
            models=args.model,
            max_concurrency=args.max_concurrency,
            evaluator=args.evaluator,
            record=args.record,
            budgets=budget_flags(args),
            offline=args.offline,
        )
    except NothingToResume as done:
        return _nothing_to_resume(done, args.json)
    args.notice.project, args.notice.provider = resuming.project, resuming.settings.provider
    name_recorded_answers(run_dir)
    tools = tool_runtime(resuming.project, args.yes, permission_mode=args.permission_mode)
    tracer = open_tracer_or_fail(args.trace)
    with progress(args.json, args.notice, args.quiet) as observer, shut_down(tracer):
        hold_progress(tools, observer)
        result = run_async(resuming.resume(observer, tools, tracer), resuming.provider)
    return report(result, args.json, args.notice)


ANSWERED = {"once": "approved once", "run": "approved for the run", "deny": "denied"}


def name_recorded_answers(run_dir: Path) -> None:
    """Say on stderr which recorded answers this resume applies, and which it ignores (an
    answer without a seal that holds: appended by an agent, another run's, altered)."""
    from openprose.terminal import neutralise
    from openprose.vm.approvals import honoured_answers, run_id_of
    from openprose.vm.journal import read_journal
    from openprose.vm.runtime import ToolTurns

    turns = ToolTurns()
    try:
        for event in read_journal(run_dir / "journal.jsonl"):
            turns.add(event)
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
    offline: bool = False,
) -> Resuming:
    """Find the run and open what continuing it needs; options not given default to those
    the run was started with. A budget given now replaces the recorded one (a larger budget
    lets a stopped run go on)."""
    from openprose.vm.runstore import DamagedRun, RunStore

    run_dir = locate_run(project, run_ref)
    try:
        meta = RunStore.open(run_dir).read_meta()
    except DamagedRun as error:
        raise UsageError(str(error)) from None
    project = run_dir.resolve().parent.parent.parent  # {project}/.prose/runs/{id}
    from openprose.session.runs import status_of

    status = status_of(meta)
    if status == "running":
        raise UsageError(f"run {run_dir.name} is still running (pid {meta.get('pid')})")
    if status == "succeeded":
        raise NothingToResume(run_dir, meta)
    recorded = _Recorded(run_dir / "run.json", meta)
    launch = _Recorded(run_dir / "run.json", recorded.table("launch"), "launch.")
    parsed = _program_of(run_dir, recorded.text("program"))
    recorded.table("inputs")  # resume_run reads them; a wrong type is caught here
    pins = {str(k): str(v) for k, v in recorded.table("import_pins").items()}
    program_dir = Path(launch.text("program_dir") or project)
    imports = load_imports_or_fail(
        parsed.program, program_dir, project, pinned=pins, offline=offline_wanted(offline)
    )
    settings, provider = open_provider_or_fail(
        project,
        provider_spec or launch.text("provider"),
        models or launch.texts("models"),
        max_concurrency or launch.count("max_concurrency"),
        record=record,
        resuming=run_dir,
    )
    from dataclasses import replace

    from openprose.vm.runner import VMConfig

    config_fields = {
        k: v for k, v in recorded.table("config").items() if k in VMConfig.__dataclass_fields__
    }
    defaults = VMConfig()
    for key, value in config_fields.items():
        if key == "max_concurrency" or (value is None and key in BUDGET_KINDS):
            continue  # replaced below by the provider settings' limit; a budget left open
        try:
            check_vm_setting(key, value, getattr(defaults, key))
        except UsageError as error:
            problem = str(error).removeprefix(f"[vm] {key} ")
            raise UsageError(f"{run_dir / 'run.json'}: damaged, `config.{key}` {problem}") from None
    config = VMConfig(**config_fields)
    config = replace(config, max_concurrency=settings.max_concurrency)
    if evaluator:
        check_evaluator(evaluator, settings)
        config = replace(config, evaluator_model=evaluator)
    config = replace(config, **(budgets or {}))
    prices = run_prices(project)
    cost_is_enforceable(parsed.program, config, settings, prices)
    return Resuming(run_dir, project, parsed.program, imports, settings, provider, config, prices)


def locate_run(project: Path, run_ref: str) -> Path:
    """The run folder `run_ref` names (id, unique prefix or folder); a usage error if none."""
    from openprose.vm.logged_runs import resolve_run
    from openprose.vm.runstore import RUNS_DIR, AmbiguousRun, RunBusy

    try:
        run_dir = resolve_run(project, run_ref)
    except (AmbiguousRun, RunBusy) as error:
        raise UsageError(str(error)) from None
    if run_dir is None:
        raise UsageError(f"no run {run_ref!r} under {project / RUNS_DIR}")
    return run_dir


def _program_of(run_dir: Path, recorded_path: str | None) -> Any:
    """The parse of the run's own program.prose; a damaged copy is a usage error."""
    from openprose.parser import parse_text
    from openprose.statefiles import read_state_file

    path = run_dir / "program.prose"
    try:
        text = read_state_file(path).decode("utf-8")
    except FileNotFoundError:
        raise UsageError(f"{path}: missing; the run folder is damaged") from None
    except OSError as error:
        raise UsageError(f"{path}: cannot read ({error.strerror})") from None
    except UnicodeDecodeError as error:
        raise UsageError(
            f"{path}: damaged, not UTF-8 (byte {error.start}); the run folder cannot be resumed"
        ) from None
    parsed = parse_text(text, recorded_path or str(path))
    if not parsed.ok:
        raise UsageError(f"{path} no longer parses")
    return parsed


class _Recorded:
    """Typed reads of run.json (or one table of it); a wrongly typed field is a usage error
    naming the file and the field."""

    def __init__(self, path: Path, data: dict[str, Any], prefix: str = "") -> None:
        self.path, self.data, self.prefix = path, data, prefix

    def _wrong(self, key: str, expected: str) -> UsageError:
        shown = repr(self.data[key])
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        return UsageError(
            f"{self.path}: damaged, `{self.prefix}{key}` should be {expected}, not {shown}"
        )

    def table(self, key: str) -> dict[str, Any]:
        value = self.data.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self._wrong(key, "an object")
        return value

    def text(self, key: str) -> str | None:
        value = self.data.get(key)
        if value is None or isinstance(value, str):
            return value
        raise self._wrong(key, "a string")

    def texts(self, key: str) -> list[str]:
        value = self.data.get(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self._wrong(key, "a list of strings")
        return value

    def count(self, key: str) -> int | None:
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise self._wrong(key, "a positive integer")
        return value

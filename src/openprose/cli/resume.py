"""``prose resume RUN``: continue an interrupted run (a run id, an id prefix or a run folder).

Finished sessions and decisions are served from the run's journal and never sent again; only
unfinished work runs. Provider, model routes, concurrency and evaluator default to what the
run was started with (secrets are never recorded; they come from the environment as usual).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from openprose.cli.run import (
    BUDGET_KINDS,
    UsageError,
    add_budget_arguments,
    add_provider_arguments,
    budget_flags,
    check_vm_setting,
    cost_is_enforceable,
    guarded,
    load_imports_or_fail,
    open_provider_or_fail,
    progress,
    report,
    run_async,
    run_prices,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_ref", metavar="RUN", help="run id (or unique prefix) or run folder")
    add_provider_arguments(parser)
    add_budget_arguments(parser)


def run(args: argparse.Namespace) -> int:
    return guarded(_resume, args)


def _resume(args: argparse.Namespace) -> int:
    from openprose.vm.runstore import (
        RUNS_DIR,
        AmbiguousRun,
        DamagedRun,
        RunBusy,
        find_run,
        lock_run,
    )

    project = Path.cwd()
    try:
        run_dir = find_run(project, args.run_ref)
        if run_dir is None:
            raise UsageError(f"no run {args.run_ref!r} under {project / RUNS_DIR}")
        # Held until the run ends: a second `prose resume` of the run stops here.
        lock = lock_run(run_dir)
    except (AmbiguousRun, DamagedRun, RunBusy) as error:
        raise UsageError(str(error)) from None
    try:
        return _resume_locked(args, run_dir)
    finally:
        lock.release()


def _resume_locked(args: argparse.Namespace, run_dir: Path) -> int:
    from openprose.vm.runstore import DamagedRun, RunStore

    try:
        meta = RunStore.open(run_dir).read_meta()
    except DamagedRun as error:
        raise UsageError(str(error)) from None
    project = run_dir.resolve().parent.parent.parent  # {project}/.prose/runs/{id}
    from openprose.cli.runs import status_of

    if status_of(meta) == "running":  # its recorded process is alive (this one, via the API)
        raise UsageError(f"run {run_dir.name} is still running (pid {meta.get('pid')})")
    recorded = _Recorded(run_dir / "run.json", meta)
    launch = _Recorded(run_dir / "run.json", recorded.table("launch"), "launch.")
    parsed = _program_of(run_dir, recorded.text("program"))
    recorded.table("inputs")  # resume_run reads them; a wrong type is caught here
    pins = {str(k): str(v) for k, v in recorded.table("import_pins").items()}
    program_dir = Path(launch.text("program_dir") or project)
    imports = load_imports_or_fail(parsed.program, program_dir, project, pinned=pins)
    settings, provider = open_provider_or_fail(
        project,
        args.provider or launch.text("provider"),
        args.model or launch.texts("models"),
        args.max_concurrency or launch.count("max_concurrency"),
        record=args.record,
        resuming=run_dir,
    )
    from dataclasses import replace

    from openprose.vm.runner import VMConfig, resume_run

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
    if args.evaluator:
        config = replace(config, evaluator_model=args.evaluator)
    # A budget given now replaces the recorded one (a larger budget lets a stopped run go on).
    config = replace(config, **budget_flags(args))
    prices = run_prices(project)
    cost_is_enforceable(parsed.program, config, settings, prices)
    with progress(args.json) as observer:
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
            ),
            provider,
        )
    return report(result, args.json)


def _program_of(run_dir: Path, recorded_path: str | None) -> Any:
    """The parse of the run's own program.prose; a damaged copy is a usage error."""
    from openprose.parser import parse_text

    path = run_dir / "program.prose"
    try:
        text = path.read_text(encoding="utf-8")
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

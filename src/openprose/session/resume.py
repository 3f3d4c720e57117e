"""Continuing a run: the run found by id, prefix or folder, its recorded program, imports,
provider and settings opened again (`prose resume` and `openprose.resume`). Options not given
default to what the run was started with."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
)
from openprose.session.options import DEFAULT_OPTIONS, RunOptions
from openprose.session.runs import status_of

__all__ = [
    "NothingToResume",
    "Resuming",
    "locate_run",
    "prepare_resume",
    "program_of",
    "read_run_meta",
    "reopen",
]


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


def prepare_resume(project: Path, run_ref: str, options: RunOptions = DEFAULT_OPTIONS) -> Resuming:
    """Find the run and open what continuing it needs; options not given default to those
    the run was started with. A budget given now replaces the recorded one (a larger budget
    lets a stopped run go on)."""
    run_dir = locate_run(project, run_ref)
    meta = read_run_meta(run_dir)
    status = status_of(meta)
    if status == "running":
        raise UsageError(f"run {run_dir.name} is still running (pid {meta.get('pid')})")
    if status == "succeeded":
        raise NothingToResume(run_dir, meta)
    return reopen(run_dir, meta, options, resuming=True)


def read_run_meta(run_dir: Path) -> dict[str, Any]:
    """The run's run.json; damaged, a usage error."""
    from openprose.record.runstore import DamagedRun, RunStore

    try:
        return RunStore.open(run_dir).read_meta()
    except DamagedRun as error:
        raise UsageError(str(error)) from None


def reopen(run_dir: Path, meta: dict[str, Any], options: RunOptions, *, resuming: bool) -> Resuming:
    """The run's recorded program, imports, provider and settings opened again, options
    given now replacing the recorded ones (`resuming`: for this run itself, else for a new
    run made from it, a fork)."""
    project = run_dir.resolve().parent.parent.parent  # {project}/.prose/runs/{id}
    recorded = _Recorded(run_dir / "run.json", meta)
    launch = _Recorded(run_dir / "run.json", recorded.table("launch"), "launch.")
    parsed = program_of(run_dir, recorded.text("program"))
    recorded.table("inputs")  # resume_run reads them; a wrong type is caught here
    pins = {str(k): str(v) for k, v in recorded.table("import_pins").items()}
    program_dir = Path(launch.text("program_dir") or project)
    imports = load_imports_or_fail(
        parsed.program, program_dir, project, pinned=pins, offline=offline_wanted(options.offline)
    )
    settings, provider = open_provider_or_fail(
        project,
        options.provider or launch.text("provider"),
        list(options.models) or launch.texts("models"),
        options.max_concurrency or launch.count("max_concurrency"),
        record=options.record,
        resuming=run_dir if resuming else None,
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
    if options.evaluator:
        check_evaluator(options.evaluator, settings)
        config = replace(config, evaluator_model=options.evaluator)
    config = replace(config, **options.budgets)
    prices = run_prices(project)
    cost_is_enforceable(parsed.program, config, settings, prices)
    return Resuming(run_dir, project, parsed.program, imports, settings, provider, config, prices)


def locate_run(project: Path, run_ref: str) -> Path:
    """The run folder `run_ref` names (id, unique prefix or folder); a usage error if none."""
    from openprose.record.logged_runs import resolve_run
    from openprose.record.runstore import RUNS_DIR, AmbiguousRun, RunBusy

    try:
        run_dir = resolve_run(project, run_ref)
    except (AmbiguousRun, RunBusy) as error:
        raise UsageError(str(error)) from None
    if run_dir is None:
        raise UsageError(f"no run {run_ref!r} under {project / RUNS_DIR}")
    return run_dir


def program_of(run_dir: Path, recorded_path: str | None) -> Any:
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

"""Run programs from Python: the same runs `prose run` and `prose resume` make.

    import openprose
    result = openprose.run("examples/hello.prose", provider="openai",
                           models={"sonnet": "openai:gpt-4.1"})
    print(result.run_id, result.status, result.outputs)

`run` / `resume` block; `arun` / `aresume` are their coroutines; `events` runs a program and
yields each run event as it happens (the events the live view and `prose run` show). A
program that cannot be started (it does not check, an input is missing, no provider is
configured) raises `RunError` carrying the diagnostics; a program that starts and fails
returns a `RunResult` with `status == "failed"`, like `prose run` exits 1.
"""

from __future__ import annotations

import asyncio
import io
import os
from collections.abc import AsyncIterator, Coroutine, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from openprose.providers.base import Provider
    from openprose.vm.runner import RunResult
    from openprose.vm.runtime import Observer

__all__ = [
    "RunError",
    "RunEvent",
    "RunEvents",
    "abatch",
    "aresume",
    "arun",
    "batch",
    "events",
    "resume",
    "run",
]

ProgramRef = str | os.PathLike[str]
T = TypeVar("T")


class RunError(Exception):
    """The run could not start (or a resume could not continue): bad program, inputs,
    provider configuration. `diagnostics` holds what `prose check --format json` gives."""

    def __init__(self, message: str, diagnostics: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.diagnostics = diagnostics or []


@dataclass(frozen=True, slots=True)
class RunEvent:
    """One journal event as it happens: `event` (e.g. `session_started`, `decision`,
    `run_finished`), the statement's `step` id, and the event's fields."""

    event: str
    step: str
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Prepared:
    """Everything a run needs, checked and opened: what `prose run` builds from its flags."""

    program: Any  # nodes.Program
    text: str
    project: Path
    inputs: dict[str, Any]
    imports: Any
    settings: Any  # ProviderSettings
    provider: Provider
    config: Any  # VMConfig
    launch: dict[str, Any]
    prices: Any = None  # Prices: the packaged table extended by prose.toml


Budget = int | float | str | None  # a limit, "none" to lift the configured one, None: not given


def _budgets(max_sessions: Budget, max_tokens: Budget, max_cost: Budget) -> dict[str, Any]:
    """The budgets given, as VMConfig fields (as `--max-sessions` ... take them)."""
    given = {"max_sessions": max_sessions, "max_run_tokens": max_tokens, "max_cost": max_cost}
    budgets: dict[str, Any] = {}
    for key, value in given.items():
        if value is None:
            continue
        if value == "none":
            budgets[key] = None
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise RunError(f"{key} must be a positive number or 'none', got {value!r}")
        else:
            budgets[key] = value
    return budgets


def _models(models: Mapping[str, str] | list[str] | None) -> list[str]:
    """`{"sonnet": "openai:gpt-4.1"}` (or `["sonnet=openai:gpt-4.1"]`) as `--model` takes it."""
    if models is None:
        return []
    if isinstance(models, Mapping):
        return [f"{alias}={target}" for alias, target in models.items()]
    return list(models)


def _source(program: ProgramRef, project: Path) -> tuple[Path | None, str | None]:
    """(path, None) for a program file, (None, text) for program text.

    A `Path`, or a string naming an existing file, or a one-line string ending in `.prose`,
    is a file; any other string is the program's text."""
    if isinstance(program, os.PathLike):
        return Path(program), None
    if "\n" not in program and (program.endswith(".prose") or (project / program).is_file()):
        return Path(program), None
    return None, program


def prepare(
    program: ProgramRef,
    *,
    inputs: Mapping[str, Any] | None = None,
    provider: str | None = None,
    models: Mapping[str, str] | list[str] | None = None,
    max_concurrency: int | None = None,
    evaluator: str | None = None,
    record: str | os.PathLike[str] | None = None,
    project_dir: str | os.PathLike[str] | None = None,
    budgets: dict[str, Any] | None = None,
) -> Prepared:
    """Check the program and its inputs, load its imports and open the provider."""
    from openprose.cli import run as cli
    from openprose.project import find_project

    base = Path(project_dir) if project_dir is not None else Path.cwd()
    path, text = _source(program, base)
    if path is not None and not path.is_absolute():
        path = base / path
    program_dir = path.parent if path is not None else base
    # As `prose run`: without `project_dir`, the project is found from the program's folder
    # (the nearest prose.toml or pyproject.toml with [tool.prose]).
    found = find_project(program_dir) if project_dir is None else None
    project = found.root if found is not None else base
    shown = io.StringIO()  # diagnostics text: the error carries them as data
    try:
        if path is not None:
            parsed = cli.parse_and_check(path, project, shown)
            text = parsed.source.text
        else:
            assert text is not None
            parsed = check_text(text, "<string>", project)
        given = dict(inputs or {})
        cli.inputs_match(parsed, given, shown)
    except cli.UsageError as error:
        raise RunError(str(error), error.diagnostics) from None
    prepared = open_run(
        parsed.program,
        text,
        program_dir=program_dir,
        project=project,
        provider=provider,
        models=models,
        max_concurrency=max_concurrency,
        evaluator=evaluator,
        record=record,
        budgets=budgets,
        found=found,
    )
    prepared.inputs = given
    return prepared


def open_run(
    program: Any,
    text: str,
    *,
    program_dir: Path,
    project: Path,
    provider: str | None = None,
    models: Mapping[str, str] | list[str] | None = None,
    max_concurrency: int | None = None,
    evaluator: str | None = None,
    record: str | os.PathLike[str] | None = None,
    budgets: dict[str, Any] | None = None,
    found: Any = None,  # the discovered project, when there was a search (its config file)
) -> Prepared:
    """For a checked program: load its imports, open the provider, read the VM settings."""
    from openprose.cli import run as cli

    try:
        imports = cli.load_imports_or_fail(program, program_dir, project)
        settings, opened = cli.open_provider_or_fail(
            project,
            provider,
            _models(models),
            max_concurrency,
            record=None if record is None else os.fspath(record),
            found=found,
        )
    except cli.UsageError as error:
        raise RunError(str(error), error.diagnostics) from None
    try:
        config = cli.vm_config(
            project,
            settings.max_concurrency,
            evaluator,
            cli.local_budget(settings),
            budgets=budgets or {},
        )
        prices = cli.run_prices(project)
        cli.cost_is_enforceable(program, config, settings, prices)
    except cli.UsageError as error:
        _close_soon(opened)
        raise RunError(str(error), error.diagnostics) from None
    launch = {
        "provider": cli.launch_spec(provider, settings),
        "models": _models(models),
        "max_concurrency": max_concurrency,
        "evaluator": evaluator,
        "program_dir": str(program_dir.resolve()),
    }
    return Prepared(
        program, text, project, {}, imports, settings, opened, config, launch, prices
    )


def _close_soon(provider: Provider) -> None:
    """Close a provider opened before a later step failed (no event loop may be running)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(provider.aclose())
    else:
        loop.create_task(provider.aclose())


def check_text(text: str, path: str, project: Path) -> Any:
    """The parse of program text when it checks clean, else `UsageError` with diagnostics."""
    from openprose.checker import diagnose
    from openprose.cli.run import UsageError
    from openprose.parser import parse_text

    parsed = parse_text(text, path)
    diagnostics = diagnose(parsed, project)
    errors = [d for d in diagnostics if d.is_error]
    if errors:
        first = errors[0]
        raise UsageError(
            f"{path}:{first.span.line}:{first.span.column}: {first.code} {first.message} "
            f"({len(errors)} error(s); the program was not run)",
            [d.to_dict() for d in diagnostics],
        )
    return parsed


def _blocking(name: str, coroutine: Coroutine[Any, Any, T]) -> T:
    """Run `coroutine` to its end on a new event loop; inside running async code that would
    block the caller's loop, so the error names the coroutine to await instead."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    coroutine.close()
    raise RuntimeError(
        f"openprose.{name}() blocks; inside async code use `await openprose.a{name}(...)`"
    )


async def arun(
    program: ProgramRef,
    *,
    inputs: Mapping[str, Any] | None = None,
    provider: str | None = None,
    models: Mapping[str, str] | list[str] | None = None,
    max_concurrency: int | None = None,
    evaluator: str | None = None,
    record: str | os.PathLike[str] | None = None,
    project_dir: str | os.PathLike[str] | None = None,
    max_sessions: Budget = None,
    max_tokens: Budget = None,
    max_cost: Budget = None,
    observer: Observer | None = None,
) -> RunResult:
    """Run a program (a `.prose` path or program text) to its end; see `run`."""
    prepared = prepare(
        program,
        inputs=inputs,
        provider=provider,
        models=models,
        max_concurrency=max_concurrency,
        evaluator=evaluator,
        record=record,
        project_dir=project_dir,
        budgets=_budgets(max_sessions, max_tokens, max_cost),
    )
    return await start(prepared, observer)


async def start(prepared: Prepared, observer: Observer | None = None) -> RunResult:
    """Run what `prepare` built, closing its provider at the end."""
    from openprose.vm.runner import run_program

    try:
        return await run_program(
            prepared.program,
            prepared.text,
            provider=prepared.provider,
            project_dir=prepared.project,
            inputs=prepared.inputs,
            imports=prepared.imports,
            settings=prepared.settings,
            config=prepared.config,
            observer=observer,
            launch=prepared.launch,
            prices=prepared.prices,
        )
    finally:
        await prepared.provider.aclose()


def run(
    program: ProgramRef,
    *,
    inputs: Mapping[str, Any] | None = None,
    provider: str | None = None,
    models: Mapping[str, str] | list[str] | None = None,
    max_concurrency: int | None = None,
    evaluator: str | None = None,
    record: str | os.PathLike[str] | None = None,
    project_dir: str | os.PathLike[str] | None = None,
    max_sessions: Budget = None,
    max_tokens: Budget = None,
    max_cost: Budget = None,
) -> RunResult:
    """Run a program to its end and return its `RunResult` (`run_id`, `run_dir`, `status`,
    `outputs`, `usage`, `error`). Keywords mirror `prose run`'s options: `inputs` is
    `--input`/`--inputs`, `models` is `--model` as a mapping alias -> "provider:model",
    `max_sessions`/`max_tokens`/`max_cost` are the run's budgets (`"none"` lifts one),
    `project_dir` is where `.prose/` and `prose.toml` are (default: the working folder)."""
    return _blocking(
        "run",
        arun(
            program,
            inputs=inputs,
            provider=provider,
            models=models,
            max_concurrency=max_concurrency,
            evaluator=evaluator,
            record=record,
            project_dir=project_dir,
            max_sessions=max_sessions,
            max_tokens=max_tokens,
            max_cost=max_cost,
        ),
    )


async def aresume(
    run_id: str,
    *,
    provider: str | None = None,
    models: Mapping[str, str] | list[str] | None = None,
    max_concurrency: int | None = None,
    evaluator: str | None = None,
    project_dir: str | os.PathLike[str] | None = None,
    max_sessions: Budget = None,
    max_tokens: Budget = None,
    max_cost: Budget = None,
    observer: Observer | None = None,
) -> RunResult:
    """Continue a run (id, unique prefix or folder) as `prose resume` does: finished work is
    served from its journal; options default to what the run was started with (a budget
    given now replaces the recorded one)."""
    from openprose.cli import run as cli
    from openprose.cli.resume import NothingToResume, prepare_resume
    from openprose.project import runs_home
    from openprose.vm.runner import RunResult, resume_run

    project = Path(project_dir) if project_dir is not None else runs_home()
    try:
        resuming = prepare_resume(
            project,
            run_id,
            provider_spec=provider,
            models=_models(models),
            max_concurrency=max_concurrency,
            evaluator=evaluator,
            budgets=_budgets(max_sessions, max_tokens, max_cost),
        )
    except NothingToResume as done:  # it succeeded before: its result, nothing run again
        from openprose.vm.runstore import RunStore

        meta = done.meta
        return RunResult(
            done.run_dir.name,
            done.run_dir,
            "succeeded",
            RunStore.open(done.run_dir).read_outputs() or {},
            meta.get("usage") or {},
            None,
            meta.get("result"),
        )
    except cli.UsageError as error:
        raise RunError(str(error), error.diagnostics) from None
    try:
        return await resume_run(
            resuming.run_dir,
            resuming.program,
            provider=resuming.provider,
            project_dir=resuming.project,
            imports=resuming.imports,
            settings=resuming.settings,
            config=resuming.config,
            observer=observer,
            prices=resuming.prices,
        )
    finally:
        await resuming.provider.aclose()


def resume(
    run_id: str,
    *,
    provider: str | None = None,
    models: Mapping[str, str] | list[str] | None = None,
    max_concurrency: int | None = None,
    evaluator: str | None = None,
    project_dir: str | os.PathLike[str] | None = None,
    max_sessions: Budget = None,
    max_tokens: Budget = None,
    max_cost: Budget = None,
) -> RunResult:
    """`aresume`, blocking."""
    return _blocking(
        "resume",
        aresume(
            run_id,
            provider=provider,
            models=models,
            max_concurrency=max_concurrency,
            evaluator=evaluator,
            project_dir=project_dir,
            max_sessions=max_sessions,
            max_tokens=max_tokens,
            max_cost=max_cost,
        ),
    )


class RunEvents:
    """`async for event in openprose.events(...)`: each `RunEvent` as it happens; after the
    loop, `.result` holds the `RunResult`. Leaving the loop early cancels the run (it stays
    resumable, like an interrupted `prose run`)."""

    def __init__(self, program: ProgramRef, options: dict[str, Any]) -> None:
        self._program = program
        self._options = options
        self.result: RunResult | None = None

    async def __aiter__(self) -> AsyncIterator[RunEvent]:
        queue: asyncio.Queue[RunEvent | None] = asyncio.Queue()

        def observe(event: str, step: str, fields: dict[str, Any]) -> None:
            queue.put_nowait(RunEvent(event, step, dict(fields)))

        task = asyncio.ensure_future(arun(self._program, observer=observe, **self._options))
        task.add_done_callback(lambda _: queue.put_nowait(None))
        try:
            while (item := await queue.get()) is not None:
                yield item
            self.result = task.result()  # raises RunError when the run could not start
        finally:
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)


def events(program: ProgramRef, **options: Any) -> RunEvents:
    """Run a program, yielding its events; takes `arun`'s keywords (except `observer`)."""
    return RunEvents(program, options)


async def abatch(
    program: ProgramRef | None = None,
    inputs: str | os.PathLike[str] | None = None,
    *,
    resume: str | None = None,
    output: str | os.PathLike[str] | None = None,
    provider: str | None = None,
    models: Mapping[str, str] | list[str] | None = None,
    max_concurrency: int | None = None,
    evaluator: str | None = None,
    max_runs: int | None = None,
    executor: str | None = None,
    ray_address: str | None = None,
    project_dir: str | os.PathLike[str] | None = None,
    max_sessions: Budget = None,
    max_tokens: Budget = None,
    max_cost: Budget = None,
) -> Any:
    """Run `program` once per case of `inputs` (`prose batch`), or continue the batch
    `resume`; returns a `BatchResult` (`batch_id`, `status`, `output`, `stats`). A batch
    that cannot start raises `openprose.batches.BatchError`."""
    from openprose.batches import resume_batch, run_batch

    if resume is not None:
        return await resume_batch(
            resume,
            max_runs=max_runs,
            executor=executor,
            ray_address=ray_address,
            project_dir=project_dir,
        )
    if program is None or inputs is None:
        raise TypeError("batch() needs a program and an inputs file, or resume=BATCH_ID")
    return await run_batch(
        os.fspath(program),
        os.fspath(inputs),
        output=None if output is None else os.fspath(output),
        provider=provider,
        models=_models(models),
        max_concurrency=max_concurrency,
        evaluator=evaluator,
        max_runs=max_runs or 64,
        budgets=_budgets(max_sessions, max_tokens, max_cost),
        executor=executor or "local",
        ray_address=ray_address,
        project_dir=project_dir,
    )


def batch(
    program: ProgramRef | None = None,
    inputs: str | os.PathLike[str] | None = None,
    **options: Any,
) -> Any:
    """`abatch`, blocking."""
    return _blocking("batch", abatch(program, inputs, **options))

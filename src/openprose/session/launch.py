"""Opening a run: what `openprose.run` and `prose batch` share between reading a program
and starting the VM — check it, load its imports, open its provider, read the VM settings,
prices and tool runtime — built from the steps in `openprose.session.opening`; `prose run` opens
its runs here too. Below `openprose.api` and `openprose.batches`, which both use it.
"""

from __future__ import annotations

import asyncio
import io
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openprose.session.options import DEFAULT_OPTIONS, RunOptions

if TYPE_CHECKING:
    from openprose.providers.base import Provider

__all__ = [
    "Budget",
    "Prepared",
    "ProgramRef",
    "RunError",
    "budgets_of",
    "check_text",
    "execute",
    "model_flags",
    "open_run",
    "prepare",
]

ProgramRef = str | os.PathLike[str]


class RunError(Exception):
    """The run could not start (or a resume could not continue): bad program, inputs,
    provider configuration. `diagnostics` holds what `prose check --format json` gives."""

    def __init__(self, message: str, diagnostics: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.diagnostics = diagnostics or []


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
    tools: Any = None  # ToolRuntime: who answers `prompt` permissions, project defaults


Budget = int | float | str | None  # a limit, "none" to lift the configured one, None: not given


def budgets_of(max_sessions: Budget, max_tokens: Budget, max_cost: Budget) -> dict[str, Any]:
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


def model_flags(models: Mapping[str, str] | list[str] | None) -> list[str]:
    """`{"sonnet": "openai:gpt-4.1"}` (or `["sonnet=openai:gpt-4.1"]`) as `--model` takes it."""
    if models is None:
        return []
    if isinstance(models, Mapping):
        return [f"{alias}={target}" for alias, target in models.items()]
    return list(models)


def program_source(program: ProgramRef, project: Path) -> tuple[Path | None, str | None]:
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
    options: RunOptions = DEFAULT_OPTIONS,
    *,
    inputs: Mapping[str, Any] | None = None,
    project_dir: str | os.PathLike[str] | None = None,
) -> Prepared:
    """Check the program and its inputs, load its imports and open the provider."""
    from openprose.project import find_project
    from openprose.session import opening

    base = Path(project_dir) if project_dir is not None else Path.cwd()
    path, text = program_source(program, base)
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
            parsed = opening.parse_and_check(path, project, shown)
            text = parsed.source.text
        else:
            assert text is not None
            parsed = check_text(text, "<string>", project)
        given = dict(inputs or {})
        opening.inputs_match(parsed, given, shown)
    except opening.UsageError as error:  # the message names each problem, as `prose run` shows it
        details = shown.getvalue().strip()
        message = f"{error}:\n{details}" if details else str(error)
        raise RunError(message, error.diagnostics) from None
    prepared = open_run(
        parsed.program, text, program_dir=program_dir, project=project, options=options, found=found
    )
    prepared.inputs = given
    return prepared


def open_run(
    program: Any,
    text: str,
    *,
    program_dir: Path,
    project: Path,
    options: RunOptions = DEFAULT_OPTIONS,
    found: Any = None,  # the discovered project, when there was a search (its config file)
) -> Prepared:
    """For a checked program: load its imports, open the provider, read the VM settings.
    `options.interactive` (`prose run` only) lets a person at the terminal answer `prompt`
    permissions; library code never asks there: `options.yes` approves, else the run waits."""
    from openprose.session import opening

    try:
        imports = opening.load_imports_or_fail(
            program,
            program_dir,
            project,
            update_pins=options.update_pins,
            offline=opening.offline_wanted(options.offline),
        )
        settings, opened = opening.open_provider_or_fail(
            project,
            options.provider,
            list(options.models),
            options.max_concurrency,
            record=options.record,
            found=found,
        )
    except opening.UsageError as error:
        raise RunError(str(error), error.diagnostics) from None
    try:
        opening.check_evaluator(options.evaluator, settings)
        config = opening.vm_config(
            project,
            settings.max_concurrency,
            options.evaluator,
            opening.local_budget(settings),
            budgets=dict(options.budgets),
        )
        prices = opening.run_prices(project)
        opening.cost_is_enforceable(program, config, settings, prices)
        tools = opening.run_tools(project, options)
    except opening.UsageError as error:
        _close_soon(opened)
        raise RunError(str(error), error.diagnostics) from None
    launch = {
        "provider": opening.launch_spec(options.provider, settings),
        "models": list(options.models),
        "max_concurrency": options.max_concurrency,
        "evaluator": options.evaluator,
        "program_dir": str(program_dir.resolve()),
    }
    return Prepared(
        program, text, project, {}, imports, settings, opened, config, launch, prices, tools
    )


async def execute(
    prepared: Prepared,
    observer: Any = None,
    tracer: Any = None,
    *,
    inputs: Mapping[str, Any] | None = None,
    **run_options: Any,
) -> Any:
    """Run what `prepare`/`open_run` built (its `RunResult`); the caller closes the provider.
    `inputs` replaces the prepared ones (a batch's case); `run_options` go to `run_program`
    as they are (`run_id`, `durable`, `log`)."""
    from openprose.vm.runner import run_program

    return await run_program(
        prepared.program,
        prepared.text,
        provider=prepared.provider,
        project_dir=prepared.project,
        inputs=prepared.inputs if inputs is None else inputs,
        imports=prepared.imports,
        settings=prepared.settings,
        config=prepared.config,
        observer=observer,
        launch=prepared.launch,
        prices=prepared.prices,
        tools=prepared.tools,
        tracer=tracer,
        **run_options,
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
    from openprose.parser import parse_text
    from openprose.session.opening import UsageError

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

"""`--estimate` of `prose run` and `prose check`: the bounds of a run printed before (or
instead of) it, and the refusal of a run whose upper bound is over a budget given on the
command line (`--max-sessions`, `--max-cost`) unless `--yes`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from openprose.cli.opening import (
    UsageError,
    load_imports_or_fail,
    local_budget,
    run_prices,
    vm_config,
)

if TYPE_CHECKING:
    from openprose.estimates import Estimate


def estimate_run(
    program: Any,
    inputs: dict[str, Any] | None,
    *,
    project: Path,
    program_dir: Path,
    provider: str | None = None,
    models: list[str] | None = None,
    evaluator: str | None = None,
    budgets: dict[str, Any] | None = None,
) -> Estimate:
    """The estimate of a run as `prose run` would start it: the project's settings, prices,
    `[vm]` table and model routes (as far as they can be read without a provider)."""
    from openprose.estimates import default_model_id, estimate_program, local_imports
    from openprose.providers import ProviderConfigError, load_settings
    from openprose.providers.settings import DEFAULT_MAX_CONCURRENCY, resolve_model

    try:
        settings = load_settings(project, provider=provider, model_overrides=models or [])
    except ProviderConfigError:
        settings = None  # no provider configured: the standard aliases' models are priced
    config = vm_config(
        project,
        settings.max_concurrency if settings is not None else DEFAULT_MAX_CONCURRENCY,
        evaluator,
        local_budget(settings) if settings is not None else None,
        budgets=budgets or {},
    )

    def resolve(alias: str) -> str:
        return (
            resolve_model(alias, settings)[1] if settings is not None else default_model_id(alias)
        )

    return estimate_program(
        program,
        inputs=inputs,
        config=config,
        prices=run_prices(project),
        resolve=resolve,
        imports=_imports(program, program_dir, project) or local_imports(program, program_dir),
    )


def _imports(program: Any, program_dir: Path, project: Path) -> dict[str, Any]:
    """The imported programs from the import cache (never fetched for an estimate)."""
    try:
        loaded = load_imports_or_fail(program, program_dir, project, offline=True)
    except UsageError:
        return {}
    return {name: imported.program for name, imported in loaded.items()}


def refusal(estimate: Estimate, budgets: dict[str, Any]) -> str | None:
    """Why a run with these command-line budgets is refused before it starts, or None."""
    sessions = estimate.sessions.high
    limit = budgets.get("max_sessions")
    if limit is not None:
        if sessions is None:
            return _refused(
                f"may make unbounded model calls ({_why(estimate)})", "--max-sessions", limit
            )
        if sessions > limit:
            return _refused(f"may make up to {sessions:,} model calls", "--max-sessions", limit)
    dollars = budgets.get("max_cost")
    cost = estimate.cost
    if dollars is not None and cost is not None:
        if cost.high is None:
            return _refused(f"may cost without bound ({_why(estimate)})", "--max-cost", dollars)
        if cost.high > dollars:
            return _refused(f"may cost up to ${cost.high:.4f}", "--max-cost", dollars)
    return None


def _refused(what: str, flag: str, limit: object) -> str:
    return f"refused before any call: the run {what}, over {flag} {limit}; pass --yes to run anyway"


def _why(estimate: Estimate) -> str:
    if not estimate.unbounded:
        return "no upper bound"
    more = len(estimate.unbounded) - 1
    return estimate.unbounded[0] + (f"; and {more} more" if more else "")


def print_estimates(estimates: list[Estimate], as_json: bool, stream: TextIO) -> None:
    if as_json:
        shown: Any = [e.to_json() for e in estimates]
        stream.write(json.dumps(shown[0] if len(shown) == 1 else shown, ensure_ascii=False) + "\n")
        return
    stream.write("\n\n".join(e.table() for e in estimates) + "\n")

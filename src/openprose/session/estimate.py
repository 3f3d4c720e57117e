"""A run's bounds before it starts, with the settings it will have: what `prose run
--estimate`, `prose check --estimate` and `openprose.estimate` print and refuse by."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from openprose.session.opening import local_budget, run_prices, vm_config

if TYPE_CHECKING:
    from openprose.vm.estimates import Estimate


def estimate_run(
    program: Any,
    inputs: dict[str, Any],
    *,
    project: Path,
    program_dir: Path,
    provider: str | None = None,
    models: list[str] | None = None,
    evaluator: str | None = None,
    budgets: dict[str, Any] | None = None,
) -> Estimate:
    """The estimate of a run with the settings it will have (checked: a bad `[vm]` or
    `[prices]` is a usage error here as in the run); no provider is opened."""
    from openprose.providers import ProviderConfigError, load_settings
    from openprose.providers.setting_values import DEFAULT_MAX_CONCURRENCY
    from openprose.vm.estimates.project import estimate_in_project

    try:
        settings = load_settings(project, provider=provider, model_overrides=models or [])
    except ProviderConfigError:
        settings = None  # the run reports it when it opens the provider
    config = vm_config(
        project,
        settings.max_concurrency if settings is not None else DEFAULT_MAX_CONCURRENCY,
        evaluator,
        local_budget(settings) if settings is not None else None,
        budgets=budgets or {},
    )
    return estimate_in_project(
        program,
        inputs,
        project=project,
        program_dir=program_dir,
        provider=provider,
        models=models,
        config=config,
        prices=run_prices(project),
    )

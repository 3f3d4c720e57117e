"""An estimate in a project: the model routes, `[vm]` settings, prices and imports a run
there would have, read without opening a provider or fetching anything."""

from __future__ import annotations

from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from openprose import nodes as n
from openprose.providers.prices import Prices
from openprose.vm.estimates import Estimate, default_model_id, estimate_program, local_imports
from openprose.vm.runtime import VMConfig


def estimate_in_project(
    program: n.Program,
    inputs: dict[str, Any] | None,
    *,
    project: Path,
    program_dir: Path,
    provider: str | None = None,
    models: list[str] | None = None,
    config: VMConfig | None = None,
    prices: Prices | None = None,
) -> Estimate:
    """`config` and `prices`: as the run will have them (`prose run` reads them, checked);
    without them, the project's `[vm]` numbers and `[prices]` as far as they are valid (a
    bad settings file is `prose run`'s to report, not `prose check --estimate`'s)."""
    from openprose.providers import ProviderConfigError, load_settings
    from openprose.providers.settings import (
        LOCAL_CONTEXT_BUDGET,
        providers_in_use,
        read_config,
        resolve_model,
    )

    try:
        settings = load_settings(project, provider=provider, model_overrides=models or [])
    except ProviderConfigError:
        settings = None  # no provider configured: the standard aliases' models are priced
    try:
        table = read_config(project)[0]
    except ProviderConfigError:
        table = {}
    if config is None:
        config = _vm_numbers(table.get("vm"))
        if settings is not None and "local" in providers_in_use(settings):
            config = replace(
                config, context_budget=min(config.context_budget, LOCAL_CONTEXT_BUDGET)
            )
    if prices is None:
        prices = _prices(table.get("prices"))

    def resolve(alias: str) -> str:
        if settings is None:
            return default_model_id(alias)
        return resolve_model(alias, settings)[1]

    return estimate_program(
        program,
        inputs=inputs,
        config=config,
        prices=prices,
        resolve=resolve,
        imports={**local_imports(program, program_dir), **_cached_imports(program, project)},
    )


def _vm_numbers(table: object) -> VMConfig:
    """VMConfig with the `[vm]` numbers of the right type (the rest left at the defaults)."""
    config = VMConfig()
    if not isinstance(table, dict):
        return config
    numbers: dict[str, Any] = {}
    for field in fields(VMConfig):
        value, default = table.get(field.name), getattr(config, field.name)
        if (
            isinstance(value, int | float)
            and type(value) is type(default)  # bool and str settings are left alone
            and not isinstance(value, bool)
            and value > 0
        ):
            numbers[field.name] = value
    return replace(config, **numbers)


def _prices(table: object) -> Prices:
    from openprose.providers import ProviderConfigError

    if table is None:
        return Prices.default()
    try:
        return Prices.default().extended(table)
    except ProviderConfigError:
        return Prices.default()


def _cached_imports(program: n.Program, project: Path) -> dict[str, n.Program]:
    """The registry and URL programs `program` imports, as the project's import cache holds
    them (read only: an estimate neither fetches nor writes)."""
    from openprose.imports import ImportCache, ImportFailed, default_name, kind_of
    from openprose.parser import parse_text

    cache = ImportCache(project)
    found: dict[str, n.Program] = {}
    for stmt in program.body:
        if not isinstance(stmt, n.Use) or kind_of(stmt.path.value) == "path":
            continue
        spec = stmt.path.value
        try:
            cached = cache.latest(spec)
        except ImportFailed:
            cached = None
        if cached is not None:
            parsed = parse_text(cached.text, spec)
            if parsed.ok:
                found[stmt.alias.id if stmt.alias else default_name(spec)] = parsed.program
    return found

"""Bounds of a run before it starts (`prose run --estimate`, `prose check --estimate`,
`openprose.estimate`): the lowest and highest number of model calls, tokens and dollars a
program may spend, worked out from its text — loops by their `max:`, `for` and pipelines
by the size of the inputs given, retries by `retry:`, tool loops by `max_turns` — and, for
each bound that does not exist, why (`loop until` without `max:`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from openprose import nodes as n
from openprose.providers.prices import Prices
from openprose.vm.estimates.bounds import Range, Tally
from openprose.vm.estimates.report import Cost, Estimate, ModelRow, priced
from openprose.vm.estimates.walker import Walker
from openprose.vm.runtime import VMConfig

__all__ = ["Cost", "Estimate", "ModelRow", "Range", "estimate_program"]


def estimate_program(
    program: n.Program,
    *,
    inputs: Mapping[str, Any] | None = None,
    config: VMConfig | None = None,
    prices: Prices | None = None,
    resolve: Callable[[str], str] | None = None,
    imports: Mapping[str, n.Program] | None = None,
) -> Estimate:
    """`estimate` of a parsed program; `imports`: the programs its calls name, by name."""
    from openprose.depth import deep_recursion

    unbounded: list[str] = []
    walker = Walker(
        program,
        config or VMConfig(),
        inputs=inputs,
        imports=imports or {},
        unbounded=unbounded,
        path=program.path,
    )
    with deep_recursion():  # a walk recurses per level of nesting, as the VM does
        tally: Tally = walker.walk()
    return priced(
        program.path, tally, unbounded, prices or Prices.default(), resolve or default_model_id
    )


def default_model_id(alias: str) -> str:
    from openprose.providers.settings import DEFAULT_ALIASES

    return DEFAULT_ALIASES["anthropic"].get(alias, alias)


def local_imports(program: n.Program, folder: Path) -> dict[str, n.Program]:
    """The programs `use "./x.prose"` names, parsed from disk (read only)."""
    from openprose.imports import default_name, kind_of
    from openprose.parser import parse, read_source

    found: dict[str, n.Program] = {}
    for stmt in program.body:
        if not isinstance(stmt, n.Use) or kind_of(stmt.path.value) != "path":
            continue
        spec = stmt.path.value
        file = Path(spec) if Path(spec).is_absolute() else folder / spec  # as `fetch` reads it
        source, _ = read_source(file) if file.is_file() else (None, [])
        if source is not None:
            parsed = parse(source)
            if parsed.ok:
                found[stmt.alias.id if stmt.alias else default_name(spec)] = parsed.program
    return found

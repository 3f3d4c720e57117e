"""Inlay hints: what a line means but does not say.

* after a ``use``: the inputs the imported program expects (``inputs: topic, depth``), when
  its contract can be known without the network (a local file, the import cache);
* after ``model: sonnet``: the model the alias resolves to with the project's provider
  settings (``prose.toml``, the environment), as ``prose run`` would resolve it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lsprotocol import types as lsp

from openprose import nodes as n
from openprose.lsp.documents import Analysis, Documents
from openprose.source import Span

# An alias -> "model (provider)", or None when no provider is configured.
ModelResolver = Callable[[str], str | None]


def inlay_hints(
    store: Documents,
    analysis: Analysis,
    within: tuple[int, int],
    resolve_model: ModelResolver,
) -> list[lsp.InlayHint]:
    start, end = within
    hints: list[lsp.InlayHint] = []
    base = analysis.path.parent if analysis.path is not None else None
    for use in analysis.index.uses:
        if not start <= use.span.end <= end:
            continue
        contract = store.contract(use.path.value, base)
        if contract is None:
            continue
        shown = ", ".join(contract.inputs) if contract.inputs else "none"
        hints.append(_hint(analysis, use.span, f"inputs: {shown}", lsp.InlayHintKind.Parameter))
    for prop in analysis.index.properties:
        value = prop.value
        if prop.name != "model" or not isinstance(value, n.Name):
            continue
        if not start <= value.span.end <= end:
            continue
        model = resolve_model(value.id)
        if model is not None:
            hints.append(_hint(analysis, value.span, f"→ {model}", lsp.InlayHintKind.Type))
    return hints


def _hint(analysis: Analysis, after: Span, label: str, kind: lsp.InlayHintKind) -> lsp.InlayHint:
    line, units = analysis.lines.end(after)
    return lsp.InlayHint(
        position=lsp.Position(line, units), label=label, kind=kind, padding_left=True
    )


def project_models(project_dir: Path) -> ModelResolver:
    """The project's alias resolution (``openprose.providers.settings``), read once; every
    alias resolves to None when no provider is configured or the settings are broken (the
    editor shows nothing rather than an error on every line)."""
    from openprose.providers.base import ProviderConfigError
    from openprose.providers.settings import load_settings, resolve_model

    try:
        settings = load_settings(project_dir)
    except (ProviderConfigError, OSError, ValueError):
        return lambda alias: None

    def resolve(alias: str) -> str | None:
        try:
            provider, model = resolve_model(alias, settings)
        except (ProviderConfigError, ValueError):
            return None
        return f"{model} ({provider})"

    return resolve

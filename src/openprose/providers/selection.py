"""One model for a protocol command: `vlp ask`, `vpp chat` and friends pick a provider and a
model the way `prose run` does (`--provider`, prose.toml, environment), then name one model.

`--model` here names the model to talk to: an alias (`sonnet`, `haiku`), `PROVIDER:MODEL`
(`openai:gpt-4.1`) or a plain model id of the selected provider.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from openprose.providers.base import Provider
from openprose.providers.settings import load_settings, resolve_model

__all__ = ["DEFAULT_MODEL_ALIAS", "ModelChoice", "open_model"]

DEFAULT_MODEL_ALIAS = "sonnet"


@dataclass(frozen=True, slots=True)
class ModelChoice:
    provider: Provider
    provider_name: str
    model: str  # the concrete model id sent in every request


def open_model(
    provider: str | None = None, model: str | None = None, *, project: Path | None = None
) -> ModelChoice:
    """Open the provider serving `model` (default: the `sonnet` alias).

    Raises ProviderConfigError (with the same advice as `prose run`) when nothing usable is
    configured or a key is missing."""
    from openprose.providers import open_provider  # the package __init__, cheap

    settings = load_settings(project or Path.cwd(), provider=provider)
    name, model_id = resolve_model(model or DEFAULT_MODEL_ALIAS, settings)
    return ModelChoice(open_provider(settings, name), name, model_id)

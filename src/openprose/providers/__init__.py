"""Model providers for the OpenProse VM: one small async interface, one file each.

Importing this package is cheap: the HTTP stack (aiohttp, orjson) and llama_cpp are
imported only when `open_provider` opens a provider that needs them.
"""

from __future__ import annotations

from openprose.providers.base import (
    Message,
    ModelRequest,
    ModelResponse,
    Provider,
    ProviderConfigError,
    ProviderError,
    RetryAfterTooLongError,
    SingleAttemptProvider,
    TransientProviderError,
    Usage,
    single_attempt,
)
from openprose.providers.registry import OPENAI_PLACEHOLDER_KEY, provider_row
from openprose.providers.replay import RecordingProvider, ReplayProvider
from openprose.providers.resilient import ResilientProvider
from openprose.providers.scripted import ScriptedProvider, ScriptRule
from openprose.providers.settings import (
    DEFAULT_ALIASES,
    PROVIDER_NAMES,
    Endpoint,
    ProviderSettings,
    RetryPolicy,
    load_settings,
    local_model_installed,
    resolve_model,
)
from openprose.providers.streaming import TextSink, stream_text_to

__all__ = [
    "DEFAULT_ALIASES",
    "PROVIDER_NAMES",
    "Endpoint",
    "Message",
    "ModelRequest",
    "ModelResponse",
    "Provider",
    "ProviderConfigError",
    "ProviderError",
    "ProviderSettings",
    "RecordingProvider",
    "ReplayProvider",
    "ResilientProvider",
    "RetryAfterTooLongError",
    "RetryPolicy",
    "ScriptRule",
    "ScriptedProvider",
    "SingleAttemptProvider",
    "TextSink",
    "TransientProviderError",
    "Usage",
    "check_credentials",
    "load_settings",
    "local_model_installed",
    "open_provider",
    "resolve_model",
    "single_attempt",
    "stream_text_to",
]


def check_credentials(settings: ProviderSettings, name: str) -> None:
    """Raise when provider `name` cannot be reached for want of a key or URL: called before
    a run starts for every provider a `--model` override names, so a missing key is a usage
    error, not a run folder left `aborted` at the first call."""
    row = provider_row(name)
    problem = row.missing(settings.endpoint(name)) if row.missing else None
    if problem:
        raise ProviderConfigError(problem)


def open_provider(settings: ProviderSettings, name: str | None = None) -> Provider:
    """Open the selected provider, or provider `name` (a `--model` override may name another).

    Real providers come wrapped in the retry policy and the concurrency limit; `replay` and
    `scripted` do not, so their recorded or injected failures reach the caller unchanged.
    """
    name = name or settings.provider
    row = provider_row(name)
    check_credentials(settings, name)
    inner = row.opens(settings, settings.endpoint(name))
    if not row.resilient:
        return inner
    return ResilientProvider(
        inner,
        policy=settings.retry,
        max_concurrency=settings.max_concurrency,
        secrets=configured_keys(settings),
    )


def configured_keys(settings: ProviderSettings) -> set[str]:
    """Every API key value the settings hold: redacted from anything a run writes or shows."""
    keys = {settings.api_key or ""} | {e.api_key or "" for e in settings.endpoints.values()}
    return {key for key in keys if key and key != OPENAI_PLACEHOLDER_KEY}

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

OPENAI_PLACEHOLDER_KEY = "not-needed"  # OpenAI-compatible local servers ignore the key


def check_credentials(settings: ProviderSettings, name: str) -> None:
    """Raise when provider `name` cannot be reached for want of a key or URL: called before
    a run starts for every provider a `--model` override names, so a missing key is a usage
    error, not a run folder left `aborted` at the first call."""
    endpoint = settings.endpoint(name)
    if name == "anthropic" and not endpoint.api_key:
        raise ProviderConfigError(
            "anthropic: no API key; export ANTHROPIC_API_KEY=sk-ant-... "
            "(or name another variable with `api_key_env` under [providers.anthropic])"
        )
    if name == "openai" and not endpoint.api_key and not endpoint.base_url:
        raise ProviderConfigError(
            "openai: no API key and no base URL; export OPENAI_API_KEY=sk-... for OpenAI, "
            "or OPENAI_BASE_URL=http://localhost:11434/v1 for an OpenAI-compatible server"
        )


def open_provider(settings: ProviderSettings, name: str | None = None) -> Provider:
    """Open the selected provider, or provider `name` (a `--model` override may name another).

    Real providers come wrapped in the retry policy and the concurrency limit; `replay` and
    `scripted` do not, so their recorded or injected failures reach the caller unchanged.
    """
    name = name or settings.provider
    endpoint = settings.endpoint(name)
    check_credentials(settings, name)
    inner: Provider
    if name == "anthropic":
        from openprose.providers.anthropic import AnthropicProvider

        assert endpoint.api_key is not None  # check_credentials refuses a missing key
        inner = AnthropicProvider(
            api_key=endpoint.api_key,
            base_url=endpoint.base_url,
            timeout=settings.timeout,
            read_timeout=settings.read_timeout,
            max_connections=settings.max_concurrency,
            prompt_cache=settings.prompt_cache,
        )
    elif name == "openai":
        from openprose.providers.openai import OpenAIProvider

        inner = OpenAIProvider(
            api_key=endpoint.api_key or OPENAI_PLACEHOLDER_KEY,
            base_url=endpoint.base_url,
            timeout=settings.timeout,
            read_timeout=settings.read_timeout,
            max_connections=settings.max_concurrency,
        )
    elif name == "local":
        from openprose.providers.local import LocalProvider

        inner = LocalProvider()
    elif name in ("replay", "scripted"):
        if name != settings.provider or settings.path is None:
            raise ProviderConfigError(
                f"{name}: select it with `--provider {name}:FILE`; it cannot serve a "
                f"--model override alone"
            )
        if name == "replay":
            return ReplayProvider.from_file(settings.path)
        return ScriptedProvider.from_file(settings.path)
    else:
        raise ProviderConfigError(
            f"unknown provider {name!r}; choose one of: {', '.join(PROVIDER_NAMES)}"
        )
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

"""Every provider as one row: its name, how it is configured and chosen, and how it opens.

Settings (`settings.py`) read the rows to know the names, which providers have an endpoint
(`[providers.NAME]`, `NAME_BASE_URL`, `NAME_API_KEY`), which take a file (`NAME:PATH`) and
which the environment selects when nothing is named; `open_provider` reads them to check
credentials and open one. Adding a provider is adding a row. A row's `opens` imports its
class when called, so importing this table costs nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from openprose.providers.base import Provider, ProviderConfigError
from openprose.providers.local_model import LOCAL_MODEL_ID
from openprose.providers.setting_values import Endpoint, ProviderSettings

__all__ = ["PROVIDERS", "ProviderRow", "provider_row"]

OPENAI_PLACEHOLDER_KEY = "not-needed"  # OpenAI-compatible local servers ignore the key

# Model ids the standard aliases stand for when nothing else is configured. Anthropic: the
# newest model of each family in the installed SDK's `anthropic.types.Model`. OpenAI: the
# GPT-4.1 tiers, which are not reasoning models, so `max_tokens` bounds the visible answer.
ANTHROPIC_ALIASES = {
    "sonnet": "claude-sonnet-5-5",
    "opus": "claude-opus-5-5",
    "haiku": "claude-haiku-5-5",
}
OPENAI_ALIASES = {"sonnet": "gpt-4.1-mini", "opus": "gpt-4.1", "haiku": "gpt-4.1-nano"}

Opener = Callable[[ProviderSettings, Endpoint], Provider]


@dataclass(frozen=True, slots=True)
class ProviderRow:
    name: str
    opens: Opener
    # Configured by a base URL and an API key ([providers.NAME], NAME_BASE_URL, NAME_API_KEY).
    endpoint: bool = False
    # What `NAME:PATH` names (replay, scripted); None: the provider takes no argument.
    file: str | None = None
    usage: str = ""  # how a user names it in a list of choices (default: the name)
    # When nothing names a provider, rows are asked in order: chosen by the first of these
    # environment variables that is set, or (local) because its model is installed.
    detected_by: tuple[str, ...] = ()
    detected_if_installed: bool = False
    # What is missing before it can be called (a key, a URL), as the error to show, or None.
    missing: Callable[[Endpoint], str | None] | None = None
    resilient: bool = True  # wrapped in the retry policy and the concurrency limit
    aliases: Mapping[str, str] = field(default_factory=dict)  # `sonnet` -> its model id
    only_model: str | None = None  # the one model that serves every alias (local)

    @property
    def shown(self) -> str:
        return self.usage or self.name


def _anthropic_missing(endpoint: Endpoint) -> str | None:
    if endpoint.api_key:
        return None
    return (
        "anthropic: no API key; export ANTHROPIC_API_KEY=sk-ant-... "
        "(or name another variable with `api_key_env` under [providers.anthropic])"
    )


def _openai_missing(endpoint: Endpoint) -> str | None:
    if endpoint.api_key or endpoint.base_url:
        return None
    return (
        "openai: no API key and no base URL; export OPENAI_API_KEY=sk-... for OpenAI, "
        "or OPENAI_BASE_URL=http://localhost:11434/v1 for an OpenAI-compatible server"
    )


def _open_anthropic(settings: ProviderSettings, endpoint: Endpoint) -> Provider:
    from openprose.providers.anthropic import AnthropicProvider

    assert endpoint.api_key is not None  # `missing` refuses a missing key
    return AnthropicProvider(
        api_key=endpoint.api_key,
        base_url=endpoint.base_url,
        timeout=settings.timeout,
        read_timeout=settings.read_timeout,
        max_connections=settings.max_concurrency,
        prompt_cache=settings.prompt_cache,
    )


def _open_openai(settings: ProviderSettings, endpoint: Endpoint) -> Provider:
    from openprose.providers.openai import OpenAIProvider

    return OpenAIProvider(
        api_key=endpoint.api_key or OPENAI_PLACEHOLDER_KEY,
        base_url=endpoint.base_url,
        timeout=settings.timeout,
        read_timeout=settings.read_timeout,
        max_connections=settings.max_concurrency,
    )


def _open_local(settings: ProviderSettings, endpoint: Endpoint) -> Provider:
    from openprose.providers.local import LocalProvider

    return LocalProvider()


def _selected_file(settings: ProviderSettings, name: str) -> Path:
    """The file of `replay` / `scripted`, which serve only when selected with one."""
    if name != settings.provider or settings.path is None:
        raise ProviderConfigError(
            f"{name}: select it with `--provider {name}:FILE`; it cannot serve a "
            f"--model override alone"
        )
    return settings.path


def _open_replay(settings: ProviderSettings, endpoint: Endpoint) -> Provider:
    from openprose.providers.replay import ReplayProvider

    return ReplayProvider.from_file(_selected_file(settings, "replay"))


def _open_scripted(settings: ProviderSettings, endpoint: Endpoint) -> Provider:
    from openprose.providers.scripted import ScriptedProvider

    return ScriptedProvider.from_file(_selected_file(settings, "scripted"))


# In the order the environment is asked when nothing names a provider.
PROVIDERS: dict[str, ProviderRow] = {
    row.name: row
    for row in (
        ProviderRow(
            "anthropic",
            _open_anthropic,
            endpoint=True,
            detected_by=("ANTHROPIC_API_KEY",),
            missing=_anthropic_missing,
            aliases=ANTHROPIC_ALIASES,
        ),
        ProviderRow(
            "openai",
            _open_openai,
            endpoint=True,
            detected_by=("OPENAI_API_KEY", "OPENAI_BASE_URL"),
            missing=_openai_missing,
            aliases=OPENAI_ALIASES,
        ),
        ProviderRow("local", _open_local, detected_if_installed=True, only_model=LOCAL_MODEL_ID),
        ProviderRow(
            "replay",
            _open_replay,
            file="a cassette, run id or run folder",
            usage="replay:CASSETTE_OR_RUN",
            resilient=False,  # recorded failures reach the caller unchanged
        ),
        ProviderRow(
            "scripted",
            _open_scripted,
            file="a rules file",
            usage="scripted:RULES",
            resilient=False,  # injected failures reach the caller unchanged
        ),
    )
}


def provider_row(name: str) -> ProviderRow:
    row = PROVIDERS.get(name)
    if row is None:
        raise ProviderConfigError(
            f"unknown provider {name!r}; choose one of: {', '.join(PROVIDERS)}"
        )
    return row

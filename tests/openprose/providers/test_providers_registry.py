"""The provider registry: every provider is one row, and a new row is a provider that can be
named, configured, chosen from the environment and opened, with no other code touched."""

from __future__ import annotations

from pathlib import Path

import pytest

from openprose.providers import (
    PROVIDER_NAMES,
    ModelRequest,
    ModelResponse,
    Provider,
    ProviderConfigError,
    ResilientProvider,
    check_credentials,
    load_settings,
    open_provider,
    registry,
    resolve_model,
)
from openprose.providers.registry import PROVIDERS, ProviderRow
from openprose.providers.settings import Endpoint, ProviderSettings, unknown_keys


class EchoProvider:
    name = "echo"

    def __init__(self, base_url: str | None) -> None:
        self.base_url = base_url

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse(text=request.messages[-1].content, model=request.model)

    async def aclose(self) -> None:
        pass


def _echo_missing(endpoint: Endpoint) -> str | None:
    return None if endpoint.api_key else "echo: no API key; export ECHO_API_KEY=..."


def _open_echo(settings: ProviderSettings, endpoint: Endpoint) -> Provider:
    return EchoProvider(endpoint.base_url)  # type: ignore[return-value]


ECHO = ProviderRow(
    "echo",
    _open_echo,
    endpoint=True,
    detected_by=("ECHO_API_KEY",),
    missing=_echo_missing,
    aliases={"sonnet": "echo-large"},
)


@pytest.fixture
def with_echo(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registry with one more row, first in the order the environment is asked."""
    monkeypatch.setattr(registry, "PROVIDERS", {"echo": ECHO, **PROVIDERS})


def test_every_provider_name_is_a_row_in_the_registry() -> None:
    assert PROVIDER_NAMES == ("anthropic", "openai", "local", "replay", "scripted")
    assert all(PROVIDERS[name].name == name for name in PROVIDER_NAMES)


@pytest.mark.usefixtures("with_echo")
def test_a_new_row_is_a_provider_that_can_be_chosen_configured_and_opened(
    tmp_path: Path,
) -> None:
    (tmp_path / "prose.toml").write_text('[providers.echo]\nbase_url = "http://echo.test"\n')
    settings = load_settings(tmp_path, env={"ECHO_API_KEY": "k"})
    assert (settings.provider, settings.source) == ("echo", "ECHO_API_KEY")
    assert settings.base_url == "http://echo.test" and settings.api_key == "k"
    assert resolve_model("sonnet", settings) == ("echo", "echo-large")
    assert unknown_keys({"providers": {"echo": {"base_url": "x"}}}, "prose.toml") == []
    provider = open_provider(settings)
    assert isinstance(provider, ResilientProvider)  # the retry policy wraps it, as any row
    assert isinstance(provider.inner, EchoProvider)
    assert provider.inner.base_url == "http://echo.test"


@pytest.mark.usefixtures("with_echo")
def test_a_new_rows_missing_credentials_are_its_own_words(tmp_path: Path) -> None:
    settings = load_settings(tmp_path, provider="echo", env={})
    with pytest.raises(ProviderConfigError, match="echo: no API key; export ECHO_API_KEY"):
        check_credentials(settings, "echo")


def test_an_unknown_provider_lists_the_rows(tmp_path: Path) -> None:
    with pytest.raises(ProviderConfigError) as caught:
        load_settings(tmp_path, provider="antropic", env={})
    message = str(caught.value)
    assert "did you mean" in message and "anthropic" in message
    assert "replay:CASSETTE_OR_RUN, scripted:RULES" in message


def test_file_providers_say_what_file_they_need(tmp_path: Path) -> None:
    with pytest.raises(ProviderConfigError, match="needs a cassette, run id or run folder"):
        load_settings(tmp_path, provider="replay", env={})
    with pytest.raises(ProviderConfigError, match="needs a rules file"):
        load_settings(tmp_path, provider="scripted", env={})

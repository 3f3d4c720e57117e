from __future__ import annotations

from collections.abc import Callable

import pytest

from openprose.providers import ProviderSettings, RetryPolicy
from tests.support import fixtures
from tests.support.fake_llm_server import FakeLLMServer

fake_llm_server = fixtures.fake_llm_server  # the shared loopback fake, per test

# Tiny delays keep the retry tests fast; the policy logic is the same at any scale.
FAST_RETRY = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.05, max_retry_after=2.0)

SettingsFor = Callable[..., ProviderSettings]


@pytest.fixture(params=["anthropic", "openai"])
def api(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=["whole", "streamed"])
def mode(request: pytest.FixtureRequest) -> str:
    """How the answer is read: one JSON body, or server-sent events to a text sink."""
    return str(request.param)


@pytest.fixture
def settings_for(fake_llm_server: FakeLLMServer, api: str) -> SettingsFor:
    """Settings that point the HTTP client of `api` at the loopback fake."""

    def make(**overrides: object) -> ProviderSettings:
        base_url = (
            fake_llm_server.base_url if api == "anthropic" else fake_llm_server.openai_base_url
        )
        fields: dict[str, object] = {
            "provider": api,
            "base_url": base_url,
            "api_key": "test-key-123",
            "timeout": 2.0,
            "retry": FAST_RETRY,
        }
        fields.update(overrides)
        return ProviderSettings(**fields)  # type: ignore[arg-type]

    return make

"""`server_of`: the host and port a provider sends its requests to, for the GenAI spans'
`server.address` / `server.port`, found through the layers wrapped around it."""

from __future__ import annotations

from typing import Any

import pytest

from openprose.providers import ScriptedProvider
from openprose.providers.openai import OpenAIProvider
from openprose.providers.resilient import ResilientProvider, RetryPolicy
from openprose.vm.calls import server_of


class Wrapper:
    """A layer that keeps its provider private (as a recording provider does)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner


@pytest.mark.parametrize(
    ("base_url", "server"),
    [
        ("https://api.openai.com/v1", ("api.openai.com", 443)),
        ("http://127.0.0.1:8080/v1", ("127.0.0.1", 8080)),
        ("http://ollama.local/v1", ("ollama.local", 80)),
    ],
)
def test_the_http_providers_endpoint_is_found_through_its_wrappers(
    base_url: str, server: tuple[str, int]
) -> None:
    provider = OpenAIProvider(api_key="k", base_url=base_url, timeout=5.0)
    assert server_of(provider) == server
    wrapped = ResilientProvider(provider, policy=RetryPolicy(), max_concurrency=4)
    assert server_of(Wrapper(wrapped)) == server


def test_a_provider_that_sends_nothing_over_the_network_has_no_server() -> None:
    assert server_of(ScriptedProvider([], default="ok")) is None
    looped = Wrapper(None)
    looped._inner = looped  # a layer wrapping itself ends the search, not the process
    assert server_of(looped) is None

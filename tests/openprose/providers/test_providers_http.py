"""Anthropic and OpenAI providers through their real SDKs against the loopback fake."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import TypeVar

import pytest

from openprose.providers import (
    Message,
    ModelRequest,
    ProviderConfigError,
    ProviderError,
    ProviderSettings,
    RetryPolicy,
    TransientProviderError,
    open_provider,
)
from tests.support.fake_llm_server import FakeLLMServer, Fault

SettingsFor = Callable[..., ProviderSettings]
E = TypeVar("E", bound=ProviderError)

REQUEST = ModelRequest(
    model="test-model",
    messages=(
        Message("user", "first question"),
        Message("assistant", "an answer"),
        Message("user", "hello fake"),
    ),
    system="You are terse.",
    max_tokens=64,
    temperature=0.2,
)


async def raised_by(settings: ProviderSettings, expected: type[E]) -> E:
    """The error the provider raises for REQUEST (after its retries), checked to be `expected`."""
    provider = open_provider(settings)
    try:
        with pytest.raises(expected) as caught:
            await provider.complete(REQUEST)
    finally:
        await provider.aclose()
    return caught.value


async def test_success_returns_text_usage_finish_reason_and_request_id(
    fake_llm_server: FakeLLMServer, settings_for: SettingsFor, api: str
) -> None:
    provider = open_provider(settings_for())
    try:
        response = await provider.complete(REQUEST)
    finally:
        await provider.aclose()
    assert response.text == "echo: hello fake"
    assert response.provider == api
    assert response.model == "test-model"
    assert response.request_id == "req_fake_1"
    assert response.finish_reason == ("end_turn" if api == "anthropic" else "stop")
    # the fake counts words: 2 + 2 + 2 in the messages, 3 in the system prompt
    assert (response.usage.input_tokens, response.usage.output_tokens) == (9, 3)


async def test_request_is_sent_in_the_api_shape(
    fake_llm_server: FakeLLMServer, settings_for: SettingsFor, api: str
) -> None:
    provider = open_provider(settings_for())
    try:
        await provider.complete(REQUEST)
    finally:
        await provider.aclose()
    body, headers = fake_llm_server.stats.bodies[0], fake_llm_server.stats.headers[0]
    assert headers["authorization"] == "Bearer test-key-123"
    assert body["model"] == "test-model"
    if api == "anthropic":
        assert "temperature" not in body  # the Messages API no longer takes it
        assert body["system"] == "You are terse."
        assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
        assert body["max_tokens"] == 64
    else:
        assert body["messages"][0] == {"role": "system", "content": "You are terse."}
        assert len(body["messages"]) == 4
        # a custom base URL means an OpenAI-compatible server: the classic parameter
        assert body["max_tokens"] == 64 and "max_completion_tokens" not in body
        assert body["temperature"] == 0.2


async def test_truncated_answer_reports_the_length_finish_reason(
    fake_llm_server: FakeLLMServer, settings_for: SettingsFor, api: str
) -> None:
    provider = open_provider(settings_for())
    try:
        response = await provider.complete(
            ModelRequest(model="m", messages=(Message("user", "one two three four"),), max_tokens=2)
        )
    finally:
        await provider.aclose()
    assert response.text == "echo: one"
    assert response.finish_reason == ("max_tokens" if api == "anthropic" else "length")


async def test_429_retry_after_is_honoured(
    fake_llm_server: FakeLLMServer, settings_for: SettingsFor
) -> None:
    fake_llm_server.script(Fault("429", retry_after=0.3))
    provider = open_provider(settings_for())
    try:
        response = await provider.complete(REQUEST)
    finally:
        await provider.aclose()
    assert response.text == "echo: hello fake"
    times = fake_llm_server.stats.attempt_times
    assert len(times) == 2
    # the backoff alone would be <= 0.01 s; the gap shows the server's 0.3 s was obeyed
    assert times[1] - times[0] >= 0.3


async def test_retry_after_beyond_the_cap_is_returned_without_waiting(
    fake_llm_server: FakeLLMServer, settings_for: SettingsFor
) -> None:
    fake_llm_server.script(Fault("429", retry_after=30))
    caught = await raised_by(settings_for(), TransientProviderError)
    assert caught.retry_after == 30
    assert caught.status == 429
    assert fake_llm_server.stats.attempts == 1


async def test_500_is_retried_then_succeeds(
    fake_llm_server: FakeLLMServer, settings_for: SettingsFor
) -> None:
    fake_llm_server.script(Fault("500"), Fault("500"))
    provider = open_provider(settings_for())
    try:
        response = await provider.complete(REQUEST)
    finally:
        await provider.aclose()
    assert response.text == "echo: hello fake"
    assert fake_llm_server.stats.attempts == 3


async def test_timeout_is_retried(
    fake_llm_server: FakeLLMServer, settings_for: SettingsFor
) -> None:
    fake_llm_server.script(Fault("hang", hang_seconds=5))
    provider = open_provider(settings_for(timeout=0.5))
    try:
        response = await provider.complete(REQUEST)
    finally:
        await provider.aclose()
    assert response.text == "echo: hello fake"
    assert fake_llm_server.stats.attempts == 2


async def test_sdk_retries_are_off_so_the_server_sees_exactly_our_attempts(
    fake_llm_server: FakeLLMServer, settings_for: SettingsFor, api: str
) -> None:
    fake_llm_server.script(*[Fault("500")] * 10)
    policy = RetryPolicy(max_attempts=4, base_delay=0.001, max_delay=0.005)
    caught = await raised_by(settings_for(retry=policy), TransientProviderError)
    assert fake_llm_server.stats.attempts == 4
    # each attempt is the SDK's first try: it never retried behind our back
    assert [h["x-stainless-retry-count"] for h in fake_llm_server.stats.headers] == ["0"] * 4
    assert caught.status == 500
    assert api in str(caught) and "test-model" in str(caught)


@pytest.mark.parametrize(
    ("fault", "explanation"),
    [
        (
            "wrong_shape",
            r"no `(content` list of blocks|choices` list with an answer) \(found null\)",
        ),
        ("bad_usage", "usage.(input|prompt)_tokens is 'many', not a token count"),
    ],
)
async def test_malformed_body_is_a_clear_permanent_error(
    fake_llm_server: FakeLLMServer,
    settings_for: SettingsFor,
    api: str,
    fault: str,
    explanation: str,
) -> None:
    fake_llm_server.script(Fault(fault))
    caught = await raised_by(settings_for(), ProviderError)
    assert not isinstance(caught, TransientProviderError)
    message = str(caught)
    assert message.startswith(f"{api} (model test-model): malformed response: ")
    assert re.search(explanation, message), message
    assert "Traceback" not in message and "object has no attribute" not in message
    assert fake_llm_server.stats.attempts == 1  # a broken answer is not worth another try


async def test_a_proxys_html_error_page_is_transient_and_quoted(
    fake_llm_server: FakeLLMServer, settings_for: SettingsFor, api: str
) -> None:
    fake_llm_server.script(Fault("502_html"), Fault("502_html"), Fault("502_html"))
    caught = await raised_by(settings_for(), TransientProviderError)
    assert caught.status == 502
    assert "HTTP 502: <html><h1>502 Bad Gateway</h1></html>" in str(caught)
    assert fake_llm_server.stats.attempts == 3  # FAST_RETRY's max_attempts


async def test_a_compatible_servers_plain_error_text_is_shown(
    fake_llm_server: FakeLLMServer, settings_for: SettingsFor, api: str
) -> None:
    fake_llm_server.script(Fault("404_text"))
    caught = await raised_by(settings_for(), ProviderError)
    assert not isinstance(caught, TransientProviderError | ProviderConfigError)
    assert str(caught) == (
        f"{api} (model test-model): HTTP 404: model 'nope' not found "
        "(check the model id and the provider's base URL)"
    )
    assert fake_llm_server.stats.attempts == 1


async def test_401_is_a_config_error_without_retries(
    fake_llm_server: FakeLLMServer, settings_for: SettingsFor, api: str
) -> None:
    fake_llm_server.script(Fault("401"))
    caught = await raised_by(settings_for(), ProviderConfigError)
    message = str(caught)
    assert "HTTP 401" in message and "invalid api key" in message
    assert ("ANTHROPIC_API_KEY" if api == "anthropic" else "OPENAI_API_KEY") in message
    assert "test-key-123" not in message
    assert fake_llm_server.stats.attempts == 1


async def test_concurrency_limit_is_honoured(settings_for: SettingsFor) -> None:
    async with FakeLLMServer(latency_ms=30) as server:
        base_url = (
            server.base_url if settings_for().provider == "anthropic" else server.openai_base_url
        )
        provider = open_provider(settings_for(base_url=base_url, max_concurrency=3))
        try:
            responses = await asyncio.gather(*(provider.complete(REQUEST) for _ in range(12)))
        finally:
            await provider.aclose()
    assert len(responses) == 12
    assert server.stats.max_in_flight == 3


async def test_connection_refused_is_transient_and_retried(
    settings_for: SettingsFor, unused_tcp_port: int
) -> None:
    provider = open_provider(settings_for(base_url=f"http://127.0.0.1:{unused_tcp_port}"))
    try:
        with pytest.raises(TransientProviderError, match="cannot connect"):
            await provider.complete(REQUEST)
    finally:
        await provider.aclose()


@pytest.mark.parametrize(
    ("base_url", "param"),
    [
        (None, "max_completion_tokens"),
        ("https://api.openai.com/v1", "max_completion_tokens"),  # OPENAI_BASE_URL naming OpenAI
        ("http://localhost:11434/v1", "max_tokens"),  # Ollama and other compatible servers
    ],
)
async def test_openai_token_limit_parameter_follows_the_server(
    base_url: str | None, param: str
) -> None:
    from openprose.providers.openai import OpenAIProvider

    provider = OpenAIProvider(api_key="k", base_url=base_url, timeout=1.0)
    try:
        assert provider._max_tokens_param == param
    finally:
        await provider.aclose()


def test_an_sdk_refusal_is_not_mistaken_for_a_malformed_body() -> None:
    import json

    import openai

    from openprose.providers.sdk_errors import translate_sdk_error

    def translate(exc: Exception) -> str:
        return str(
            translate_sdk_error(
                exc, sdk=openai, provider="openai", model="m", key_hint="K", timeout=1.0
            )
        )

    refused = translate(ValueError("max_tokens is too large for a non-streaming request"))
    assert refused == (
        "openai (model m): the SDK refused the request: "
        "max_tokens is too large for a non-streaming request"
    )
    broken = translate(json.JSONDecodeError("Expecting value", "", 0))
    assert broken.startswith("openai (model m): malformed response: the body is not valid JSON")

"""Anthropic and OpenAI providers (HTTP/1.1 + orjson clients) against the loopback fake.

Every behaviour is checked for both APIs and both ways of reading an answer: one JSON body
(`whole`) and server-sent events handed to a text sink (`streamed`)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import TypeVar

import pytest

from openprose.providers import (
    Message,
    ModelRequest,
    ModelResponse,
    Provider,
    ProviderConfigError,
    ProviderError,
    ProviderSettings,
    RetryPolicy,
    TransientProviderError,
    open_provider,
    stream_text_to,
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


async def ask(provider: Provider, request: ModelRequest, mode: str) -> ModelResponse:
    """`provider.complete`, streamed to a sink in `streamed` mode; the pieces the sink got
    must add up to the answer's text."""
    if mode == "whole":
        return await provider.complete(request)
    pieces: list[str] = []
    with stream_text_to(pieces.append, on_restart=pieces.clear):
        response = await provider.complete(request)
    assert "".join(pieces) == response.text
    assert len(pieces) > 1 or len(response.text.split()) <= 1  # it really came in pieces
    return response


async def answer_of(settings: ProviderSettings, request: ModelRequest, mode: str) -> ModelResponse:
    provider = open_provider(settings)
    try:
        return await ask(provider, request, mode)
    finally:
        await provider.aclose()


async def raised_by(settings: ProviderSettings, expected: type[E], mode: str = "whole") -> E:
    """The error the provider raises for REQUEST (after its retries), checked to be `expected`."""
    provider = open_provider(settings)
    try:
        with pytest.raises(expected) as caught:
            await ask(provider, REQUEST, mode)
    finally:
        await provider.aclose()
    return caught.value


async def test_success_returns_text_usage_finish_reason_and_request_id(
    fake_llm_server: FakeLLMServer, settings_for: SettingsFor, api: str, mode: str
) -> None:
    response = await answer_of(settings_for(), REQUEST, mode)
    assert response.text == "echo: hello fake"
    assert response.provider == api
    assert response.model == "test-model"
    assert response.request_id == "req_fake_1"
    assert response.finish_reason == ("end_turn" if api == "anthropic" else "stop")
    # the fake counts words: 2 + 2 + 2 in the messages, 3 in the system prompt
    assert (response.usage.input_tokens, response.usage.output_tokens) == (9, 3)


async def test_request_is_sent_in_the_api_shape(
    fake_llm_server: FakeLLMServer, settings_for: SettingsFor, api: str, mode: str
) -> None:
    await answer_of(settings_for(), REQUEST, mode)
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
    fake_llm_server: FakeLLMServer, settings_for: SettingsFor, api: str, mode: str
) -> None:
    request = ModelRequest(
        model="m", messages=(Message("user", "one two three four"),), max_tokens=2
    )
    response = await answer_of(settings_for(), request, mode)
    assert response.text == "echo: one"
    assert response.finish_reason == ("max_tokens" if api == "anthropic" else "length")


async def test_429_retry_after_is_honoured(
    fake_llm_server: FakeLLMServer, settings_for: SettingsFor, mode: str
) -> None:
    fake_llm_server.script(Fault("429", retry_after=0.3))
    response = await answer_of(settings_for(), REQUEST, mode)
    assert response.text == "echo: hello fake"
    times = fake_llm_server.stats.attempt_times
    assert len(times) == 2
    # the backoff alone would be <= 0.01 s; the gap shows the server's 0.3 s was obeyed
    assert times[1] - times[0] >= 0.3


async def test_retry_after_beyond_the_cap_is_returned_without_waiting(
    fake_llm_server: FakeLLMServer, settings_for: SettingsFor, mode: str
) -> None:
    fake_llm_server.script(Fault("429", retry_after=30))
    caught = await raised_by(settings_for(), TransientProviderError, mode)
    assert caught.retry_after == 30
    assert caught.status == 429
    assert fake_llm_server.stats.attempts == 1


async def test_500_is_retried_then_succeeds(
    fake_llm_server: FakeLLMServer, settings_for: SettingsFor, mode: str
) -> None:
    fake_llm_server.script(Fault("500"), Fault("500"))
    response = await answer_of(settings_for(), REQUEST, mode)
    assert response.text == "echo: hello fake"
    assert fake_llm_server.stats.attempts == 3


async def test_timeout_is_retried(
    fake_llm_server: FakeLLMServer, settings_for: SettingsFor, mode: str
) -> None:
    fake_llm_server.script(Fault("hang", hang_seconds=5))
    response = await answer_of(settings_for(timeout=0.5), REQUEST, mode)
    assert response.text == "echo: hello fake"
    assert fake_llm_server.stats.attempts == 2


async def test_the_client_never_retries_so_the_server_sees_exactly_our_attempts(
    fake_llm_server: FakeLLMServer, settings_for: SettingsFor, api: str, mode: str
) -> None:
    fake_llm_server.script(*[Fault("500")] * 10)
    policy = RetryPolicy(max_attempts=4, base_delay=0.001, max_delay=0.005)
    caught = await raised_by(settings_for(retry=policy), TransientProviderError, mode)
    assert fake_llm_server.stats.attempts == 4  # max_attempts, and nothing behind our back
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
    mode: str,
    fault: str,
    explanation: str,
) -> None:
    fake_llm_server.script(Fault(fault))
    caught = await raised_by(settings_for(), ProviderError, mode)
    assert not isinstance(caught, TransientProviderError)
    message = str(caught)
    assert message.startswith(f"{api} (model test-model): malformed response: ")
    assert re.search(explanation, message), message
    assert "Traceback" not in message and "object has no attribute" not in message
    assert fake_llm_server.stats.attempts == 1  # a broken answer is not worth another try


async def test_a_proxys_html_error_page_is_transient_and_quoted(
    fake_llm_server: FakeLLMServer, settings_for: SettingsFor, api: str, mode: str
) -> None:
    fake_llm_server.script(Fault("502_html"), Fault("502_html"), Fault("502_html"))
    caught = await raised_by(settings_for(), TransientProviderError, mode)
    assert caught.status == 502
    assert "HTTP 502: <html><h1>502 Bad Gateway</h1></html>" in str(caught)
    assert fake_llm_server.stats.attempts == 3  # FAST_RETRY's max_attempts


async def test_a_compatible_servers_plain_error_text_is_shown(
    fake_llm_server: FakeLLMServer, settings_for: SettingsFor, api: str, mode: str
) -> None:
    fake_llm_server.script(Fault("404_text"))
    caught = await raised_by(settings_for(), ProviderError, mode)
    assert not isinstance(caught, TransientProviderError | ProviderConfigError)
    assert str(caught) == (
        f"{api} (model test-model): HTTP 404: model 'nope' not found "
        "(check the model id and the provider's base URL)"
    )
    assert fake_llm_server.stats.attempts == 1


async def test_401_is_a_config_error_without_retries(
    fake_llm_server: FakeLLMServer, settings_for: SettingsFor, api: str, mode: str
) -> None:
    fake_llm_server.script(Fault("401"))
    caught = await raised_by(settings_for(), ProviderConfigError, mode)
    message = str(caught)
    assert "HTTP 401" in message and "invalid api key" in message
    assert ("ANTHROPIC_API_KEY" if api == "anthropic" else "OPENAI_API_KEY") in message
    assert "test-key-123" not in message
    assert fake_llm_server.stats.attempts == 1


async def test_concurrency_limit_is_honoured(settings_for: SettingsFor, mode: str) -> None:
    async with FakeLLMServer(latency_ms=30) as server:
        base_url = (
            server.base_url if settings_for().provider == "anthropic" else server.openai_base_url
        )
        provider = open_provider(settings_for(base_url=base_url, max_concurrency=3))
        try:
            responses = await asyncio.gather(*(ask(provider, REQUEST, mode) for _ in range(12)))
        finally:
            await provider.aclose()
    assert len(responses) == 12
    assert server.stats.max_in_flight == 3


async def test_connection_refused_is_transient_and_retried(
    settings_for: SettingsFor, unused_tcp_port: int, mode: str
) -> None:
    provider = open_provider(settings_for(base_url=f"http://127.0.0.1:{unused_tcp_port}"))
    try:
        with pytest.raises(TransientProviderError, match="cannot connect") as raised:
            await ask(provider, REQUEST, mode)
    finally:
        await provider.aclose()
    assert "check the base URL (`prose config` shows it) and that the server is up" in str(
        raised.value.note
    )


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


async def test_a_stream_asks_for_events_and_a_whole_request_does_not(
    fake_llm_server: FakeLLMServer, settings_for: SettingsFor, api: str, mode: str
) -> None:
    await answer_of(settings_for(), REQUEST, mode)
    body, headers = fake_llm_server.stats.bodies[0], fake_llm_server.stats.headers[0]
    assert body.get("stream", False) is (mode == "streamed")
    if api == "anthropic":
        assert headers["anthropic-version"] and headers["x-api-key"] == "test-key-123"
    elif mode == "streamed":
        assert body["stream_options"] == {"include_usage": True}  # else no usage comes back


@pytest.mark.parametrize("fault", ["truncated", "stream_cut", "stream_error"])
async def test_an_answer_cut_off_midway_is_transient_and_retried(
    fake_llm_server: FakeLLMServer, settings_for: SettingsFor, api: str, mode: str, fault: str
) -> None:
    fake_llm_server.script(Fault(fault))
    response = await answer_of(settings_for(), REQUEST, mode)
    assert response.text == "echo: hello fake"
    assert fake_llm_server.stats.attempts == 2


@pytest.mark.parametrize(
    ("fault", "explanation"),
    [
        ("truncated", "the connection broke before the answer was complete"),
        ("stream_cut", "the answer stream ended before its closing event"),
        ("stream_error", "the server reported an error mid-stream: (Overloaded|the model crashed)"),
    ],
)
async def test_a_stream_that_keeps_breaking_says_how(
    fake_llm_server: FakeLLMServer,
    settings_for: SettingsFor,
    api: str,
    fault: str,
    explanation: str,
) -> None:
    fake_llm_server.script(*[Fault(fault)] * 3)
    caught = await raised_by(settings_for(), ProviderError, "streamed")
    assert re.search(explanation, str(caught)), str(caught)
    assert str(caught).startswith(f"{api} (model test-model): ")
    assert isinstance(caught, TransientProviderError)
    assert fake_llm_server.stats.attempts == 3  # FAST_RETRY's max_attempts


def test_the_sdk_is_not_needed_to_talk_to_either_api() -> None:
    import subprocess
    import sys

    code = (
        "import sys, openprose.providers.openai, openprose.providers.anthropic\n"
        "print([m for m in ('openai', 'anthropic', 'httpx', 'pydantic', 'aiohttp')"
        " if m in sys.modules])\n"
    )
    output = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert output.strip() == "[]"


@pytest.mark.parametrize(
    ("base_url", "param"),
    [
        (None, "max_completion_tokens"),
        ("https://api.openai.com/v1", "max_completion_tokens"),  # OPENAI_BASE_URL naming OpenAI
        ("http://localhost:11434/v1", "max_tokens"),  # Ollama and other compatible servers
    ],
)
def test_openai_token_limit_parameter_and_url_follow_the_server(
    base_url: str | None, param: str
) -> None:
    from openprose.providers.openai import OpenAIProvider

    provider = OpenAIProvider(api_key="k", base_url=base_url, timeout=1.0)
    body = provider.request_body(REQUEST, stream=False)
    assert param in body and body[param] == 64
    assert provider.url == (base_url or "https://api.openai.com/v1") + "/chat/completions"


def test_anthropic_url_follows_the_base_url() -> None:
    from openprose.providers.anthropic import AnthropicProvider

    assert (
        AnthropicProvider(api_key="k", timeout=1.0).url == "https://api.anthropic.com/v1/messages"
    )
    custom = AnthropicProvider(api_key="k", base_url="http://proxy:8080/", timeout=1.0)
    assert custom.url == "http://proxy:8080/v1/messages"


@pytest.mark.parametrize("base_url", ["localhost:11434/v1", "ftp://example.com", "http://"])
def test_a_base_url_that_is_no_http_url_is_a_config_error(api: str, base_url: str) -> None:
    settings = ProviderSettings(provider=api, base_url=base_url, api_key="k")
    with pytest.raises(ProviderConfigError, match="must be an http:// or https:// URL") as caught:
        open_provider(settings)
    assert repr(base_url) in str(caught.value)


async def test_stream_is_one_streamed_call_with_retries(
    fake_llm_server: FakeLLMServer, settings_for: SettingsFor
) -> None:
    fake_llm_server.script(Fault("stream_cut"), Fault("500"))
    provider = open_provider(settings_for())
    pieces: list[str] = []
    try:
        assert hasattr(provider, "stream")
        response = await provider.stream(REQUEST, pieces.append, pieces.clear)
        again = await provider.complete(REQUEST)  # the sink was for that call only
    finally:
        await provider.aclose()
    assert response.text == again.text == "echo: hello fake"
    # the cut-off first attempt's pieces were dropped when the retry started over
    assert "".join(pieces) == "echo: hello fake"
    assert [body.get("stream", False) for body in fake_llm_server.stats.bodies] == [
        True,
        True,
        True,
        False,
    ]


async def test_one_connection_pool_with_keep_alive_serves_every_call(
    settings_for: SettingsFor, mode: str
) -> None:
    async with FakeLLMServer(latency_ms=20) as server:
        base_url = (
            server.base_url if settings_for().provider == "anthropic" else server.openai_base_url
        )
        provider = open_provider(settings_for(base_url=base_url, max_concurrency=3))
        try:
            for _ in range(5):  # one after another: the same connection again
                await ask(provider, REQUEST, mode)
            assert len(server.stats.connections) == 1
            await asyncio.gather(*(ask(provider, REQUEST, mode) for _ in range(12)))
        finally:
            await provider.aclose()
    assert server.stats.attempts == 17
    assert len(server.stats.connections) <= 3  # never more connections than the limit


async def test_a_server_that_refuses_streaming_is_asked_again_unstreamed(
    fake_llm_server: FakeLLMServer, settings_for: SettingsFor
) -> None:
    fake_llm_server.script(Fault("400"))
    provider = open_provider(settings_for())
    pieces: list[str] = []
    try:
        with stream_text_to(pieces.append):
            first = await provider.complete(REQUEST)
            second = await provider.complete(REQUEST)
    finally:
        await provider.aclose()
    assert first.text == second.text == "echo: hello fake"
    assert pieces == ["echo: hello fake"] * 2  # the watcher still sees each answer, whole
    # streamed, refused; asked whole; and from then on whole only
    assert [b.get("stream", False) for b in fake_llm_server.stats.bodies] == [True, False, False]


async def test_a_400_to_a_plain_request_is_a_permanent_error(
    fake_llm_server: FakeLLMServer, settings_for: SettingsFor, api: str
) -> None:
    fake_llm_server.script(Fault("400"))
    caught = await raised_by(settings_for(), ProviderError)
    assert not isinstance(caught, TransientProviderError)
    assert str(caught) == (
        f"{api} (model test-model): HTTP 400: unrecognized request argument: stream_options"
    )
    assert fake_llm_server.stats.attempts == 1

"""Waits that tell, and numbers that stay bounded: a stalled stream noticed after
`read_timeout`, not the request's whole timeout; a URL scheme that does not match the port
named in the error; token counts and retry settings out of any real range refused with a
clear message; null content with no tool calls a provider error, not an empty answer."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from openprose.providers import (
    Message,
    ModelRequest,
    ProviderConfigError,
    ProviderError,
    TransientProviderError,
    load_settings,
)
from openprose.providers.openai import OpenAIProvider
from tests.support.raw_http_server import LoopbackServer, RawHttpServer, RawRequest, answer
from tests.support.tls_proxy import certificate as _certificate
from tests.support.tls_proxy import server_context as _server_context

REQUEST = ModelRequest(model="m", messages=(Message("user", "hi"),), max_tokens=10)


def _openai(url: str, **options: float) -> OpenAIProvider:
    return OpenAIProvider(api_key="k", base_url=url + "/v1", **options)  # type: ignore[arg-type]


def _chat(message: dict[str, object], usage: dict[str, object] | None = None) -> bytes:
    body = {"choices": [{"message": message, "finish_reason": "stop"}], "usage": usage}
    return answer(json.dumps(body).encode(), headers="content-type: application/json\r\n")


async def test_a_stream_that_stalls_is_noticed_after_the_read_timeout() -> None:
    async def stall(request: RawRequest) -> bool:
        event = b'data: {"choices": [{"delta": {"content": "Hel"}}]}\n\n'
        request.writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"transfer-encoding: chunked\r\n\r\n" + b"%x\r\n%s\r\n" % (len(event), event)
        )
        await asyncio.sleep(30)  # and then nothing
        return False

    pieces: list[str] = []
    async with RawHttpServer(stall) as server:
        provider = _openai(server.url, timeout=30.0, read_timeout=0.3)
        started = time.monotonic()
        with pytest.raises(TransientProviderError) as raised:
            await provider.stream(REQUEST, pieces.append)
        waited = time.monotonic() - started
        await provider.aclose()
    assert pieces == ["Hel"]
    assert waited < 5  # not the request's 30 s
    said = str(raised.value)
    assert "the answer stream stalled: nothing arrived for 0.3 s" in said
    assert "read_timeout in prose.toml" in said


async def test_http_to_a_tls_port_says_to_use_https(tmp_path: Path) -> None:
    async def never_reached(request: RawRequest) -> bool:  # a plain request fails TLS first
        request.writer.write(answer())
        return True

    cert, key = _certificate(tmp_path, "IP:127.0.0.1")
    async with RawHttpServer(never_reached, tls=_server_context(cert, key)) as server:
        plain = server.url.replace("https://", "http://")
        provider = _openai(plain, timeout=5.0)
        with pytest.raises(ProviderError) as raised:
            await provider.complete(REQUEST)
        await provider.aclose()
    assert "https://" in str(raised.value), raised.value


class _PlainRefusal(LoopbackServer):
    """A plain HTTP server given a TLS handshake: it answers 400 and closes."""

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1)
        writer.write(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
        await writer.drain()
        writer.close()


async def test_https_to_a_plain_port_says_to_use_http() -> None:
    async with _PlainRefusal() as server:
        secure = server.url.replace("http://", "https://")
        provider = _openai(secure, timeout=5.0)
        with pytest.raises(ProviderError) as raised:
            await provider.complete(REQUEST)
        await provider.aclose()
    said = str(raised.value)
    assert "does not speak TLS on this port" in said and "must start with http://" in said


@pytest.mark.parametrize("count", [10**30, 1e300, 10**13])
async def test_an_impossible_token_count_is_a_clear_provider_error(count: float) -> None:
    reply = _chat({"role": "assistant", "content": "hi"}, {"prompt_tokens": count})

    async def respond(request: RawRequest) -> bool:
        request.writer.write(reply)
        return True

    async with RawHttpServer(respond) as server:
        provider = _openai(server.url, timeout=5.0)
        with pytest.raises(ProviderError) as raised:
            await provider.complete(REQUEST)
        await provider.aclose()
    assert "usage.prompt_tokens is" in str(raised.value)
    assert "more tokens than any request holds (at most 1,000,000,000,000)" in str(raised.value)


@pytest.mark.parametrize(
    ("message", "said"),
    [
        ({"role": "assistant", "content": None}, "content is null and there are no tool calls"),
        ({"role": "assistant", "content": None, "refusal": "I cannot"}, "the model refused"),
    ],
)
async def test_null_content_without_tool_calls_is_no_answer(
    message: dict[str, object], said: str
) -> None:
    reply = _chat(message)

    async def respond(request: RawRequest) -> bool:
        request.writer.write(reply)
        return True

    async with RawHttpServer(respond) as server:
        provider = _openai(server.url, timeout=5.0)
        with pytest.raises(ProviderError) as raised:
            await provider.complete(REQUEST)
        await provider.aclose()
    assert not isinstance(raised.value, TransientProviderError)  # the same answer again
    assert said in str(raised.value)


@pytest.mark.parametrize(
    ("toml", "said"),
    [
        ("[retry]\nmax_attempts = 1000000\nbase_delay = 0\n", "between 1 and 20"),
        ("[retry]\nmax_attempts = 0\n", "between 1 and 20"),
        ("[retry]\nbase_delay = -1\n", "base_delay must be a number of seconds, 0 or more"),
        ("read_timeout = 0\n", "read_timeout must be a positive number of seconds"),
    ],
)
def test_retry_and_timeout_settings_are_bounded_at_load_time(
    tmp_path: Path, toml: str, said: str
) -> None:
    (tmp_path / "prose.toml").write_text(toml)
    with pytest.raises(ProviderConfigError, match=said) as raised:
        load_settings(tmp_path, provider="openai", env={"OPENAI_API_KEY": "k"})
    assert str(tmp_path / "prose.toml") in str(raised.value)


def test_read_timeout_is_a_setting_no_longer_than_the_timeout(tmp_path: Path) -> None:
    env = {"OPENAI_API_KEY": "k"}
    assert load_settings(tmp_path, provider="openai", env=env).read_timeout == 60.0
    (tmp_path / "prose.toml").write_text("timeout = 20\n")
    assert load_settings(tmp_path, provider="openai", env=env).read_timeout == 20.0
    (tmp_path / "prose.toml").write_text("read_timeout = 5\n")
    settings = load_settings(tmp_path, provider="openai", env=env)
    assert settings.read_timeout == 5.0 and settings.public_dict()["read_timeout"] == 5.0


async def test_a_stream_with_no_content_and_no_tool_calls_is_no_answer() -> None:
    events = [
        b'data: {"choices": [{"delta": {"role": "assistant", "content": null}}]}\n\n',
        b'data: {"choices": [{"delta": {}, "finish_reason": "length"}]}\n\n',
        b"data: [DONE]\n\n",
    ]
    body = b"".join(events)

    async def respond(request: RawRequest) -> bool:
        request.writer.write(answer(body, headers="content-type: text/event-stream\r\n"))
        return True

    async with RawHttpServer(respond) as server:
        provider = _openai(server.url, timeout=5.0)
        with pytest.raises(ProviderError) as raised:
            await provider.stream(REQUEST, lambda _text: None)
        await provider.aclose()
    assert "the token limit was reached before any answer (raise max_tokens)" in str(raised.value)

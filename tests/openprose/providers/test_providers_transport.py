"""What a provider's user sees of the transport: failures of the wire as the contract's
errors, the environment's proxy, a 408 on an idle connection."""

from __future__ import annotations

import asyncio
import zlib
from pathlib import Path

import pytest

from openprose.providers import (
    Provider,
    ProviderSettings,
    RetryPolicy,
    open_provider,
    stream_text_to,
)
from openprose.providers.base import (
    Message,
    ModelRequest,
    ProviderConfigError,
    ProviderError,
    TransientProviderError,
)
from tests.support.raw_http_server import RawHttpServer, RawRequest, answer, respond_with
from tests.support.tls_proxy import ProxyServer, certificate, server_context


def _provider(base_url: str, **overrides: object) -> Provider:
    fields: dict[str, object] = {
        "provider": "openai",
        "base_url": base_url,
        "api_key": "test-key-123",
        "timeout": 2.0,
        "retry": RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02),
    }
    fields.update(overrides)
    return open_provider(ProviderSettings(**fields))  # type: ignore[arg-type]


REQUEST = ModelRequest(model="m", messages=(Message("user", "hi"),), max_tokens=8)


async def test_an_answer_that_is_not_http_is_a_transient_error_that_names_the_cause() -> None:
    async with RawHttpServer(respond_with(b"SSH-2.0-OpenSSH_9.6\r\n", keep=False)) as server:
        provider = _provider(server.url + "/v1")
        with pytest.raises(TransientProviderError) as caught:
            await provider.complete(REQUEST)
        await provider.aclose()
    assert "the server's answer is not valid HTTP: the server's answer does not start like" in str(
        caught.value
    )
    assert "check the base URL" in str(caught.value)
    assert len(server.requests) == 2  # retried, as any transport failure


async def test_a_certificate_the_system_does_not_trust_is_a_permanent_error(tmp_path: Path) -> None:
    cert, key = certificate(tmp_path, "IP:127.0.0.1")
    async with RawHttpServer(respond_with(answer()), tls=server_context(cert, key)) as server:
        provider = _provider(server.url + "/v1")
        with pytest.raises(ProviderError) as caught:
            await provider.complete(REQUEST)
        await provider.aclose()
    assert not isinstance(caught.value, TransientProviderError)
    assert "the TLS connection failed" in str(caught.value)
    assert "check the base URL and the system's certificates" in str(caught.value)


async def test_an_oversized_answer_is_a_permanent_error() -> None:
    reply = b"HTTP/1.1 200 OK\r\nx-big: " + b"a" * 70_000 + b"\r\n\r\n"
    async with RawHttpServer(respond_with(reply, keep=False)) as server:
        provider = _provider(server.url + "/v1")
        with pytest.raises(ProviderError, match="headers are over 65536 bytes") as caught:
            await provider.complete(REQUEST)
        await provider.aclose()
    assert not isinstance(caught.value, TransientProviderError)
    assert len(server.requests) == 1


async def test_the_environments_proxy_carries_the_providers_requests(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    completion = b'{"choices": [{"message": {"content": "proxied"}, "finish_reason": "stop"}]}'
    async with RawHttpServer(respond_with(answer(completion))) as server, ProxyServer() as proxy:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
        monkeypatch.setenv("NO_PROXY", "")
        provider = _provider(server.url + "/v1")
        response = await provider.complete(REQUEST)
        await provider.aclose()
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")  # bypassed: straight to the server
        provider = _provider(server.url + "/v1")
        await provider.complete(REQUEST)
        await provider.aclose()
    assert response.text == "proxied"
    assert len(proxy.seen) == 1 and len(server.requests) == 2


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"api_key": "sk-abc\n"}, "the header 'authorization' holds a character HTTP forbids"),
    ],
)
def test_a_setting_that_would_break_the_request_is_a_config_error(
    overrides: dict[str, object], message: str
) -> None:
    with pytest.raises(ProviderConfigError, match=message):
        _provider("http://127.0.0.1:9/v1", **overrides)


def test_a_proxy_that_is_no_http_proxy_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "socks5://127.0.0.1:1080")
    monkeypatch.setenv("NO_PROXY", "")
    with pytest.raises(ProviderConfigError, match="openai: the proxy 'socks5://127.0.0.1:1080'"):
        _provider("https://api.example.com/v1")


def test_a_provider_serves_one_event_loop_after_another() -> None:
    """A pool belongs to one event loop; a provider used again under a new loop (another
    `asyncio.run`) opens a new pool instead of touching the old loop's connections."""
    from tests.support.fake_llm_server import start_in_subprocess

    base_url, stop = start_in_subprocess()
    try:
        provider = _provider(base_url + "/v1")
        first = asyncio.run(provider.complete(REQUEST))
        second = asyncio.run(provider.complete(REQUEST))
        asyncio.run(provider.aclose())
    finally:
        stop()
    assert first.text == second.text == "echo: hi"


async def test_a_gzipped_chunked_event_stream_reaches_the_watcher_piece_by_piece() -> None:
    """The SSE reader fed by this transport: an OpenAI stream, gzip-compressed and chunked,
    flushed event by event as a compressing proxy sends it."""
    events = [
        b'data: {"choices": [{"index": 0, "delta": {"content": "one "}}]}\n\n',
        b'data: {"choices": [{"index": 0, "delta": {"content": "two"}}]}\n\n',
        b'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}\n\n',
        b'data: {"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 2}}\n\n',
        b"data: [DONE]\n\n",
    ]

    async def respond(request: RawRequest) -> bool:
        writer = request.writer
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"content-encoding: gzip\r\ntransfer-encoding: chunked\r\n\r\n"
        )
        packer = zlib.compressobj(wbits=31)
        for event in events:
            piece = packer.compress(event) + packer.flush(zlib.Z_SYNC_FLUSH)
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            await writer.drain()
            await asyncio.sleep(0.01)
        last = packer.flush()
        writer.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(last), last))
        return True

    pieces: list[str] = []
    async with RawHttpServer(respond) as server:
        provider = _provider(server.url + "/v1")
        with stream_text_to(pieces.append):
            response = await provider.complete(REQUEST)
        await provider.aclose()
    assert pieces == ["one ", "two"] and response.text == "one two"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (1, 2)
    assert server.requests[0].header("accept-encoding") == "gzip, deflate"


# --- 408 on a kept-alive connection -------------------------------------------------------

COMPLETION = (
    b'{"id": "c1", "model": "m", "choices": [{"index": 0, "finish_reason": "stop", '
    b'"message": {"role": "assistant", "content": "fresh"}}], '
    b'"usage": {"prompt_tokens": 1, "completion_tokens": 1}}'
)
TIMED_OUT = b"HTTP/1.1 408 Request Timeout\r\nconnection: close\r\ncontent-length: 0\r\n\r\n"


@pytest.mark.parametrize("streamed", [False, True])
async def test_a_408_sent_on_an_idle_connection_costs_no_attempt(streamed: bool) -> None:
    """Servers (Node, HAProxy, some proxies) send 408 on a kept-alive connection that was
    idle too long, then close it. Whether it arrives while the connection is idle or crosses
    the next request on the wire, the request goes out on a new connection and succeeds at
    once: no attempt of a session's `retry:` is spent and no error reaches the program."""

    async def respond(request: RawRequest) -> bool:
        if request.connection == 1 and request.number == 1:
            request.writer.write(answer(COMPLETION))

            async def idle_timeout() -> None:  # the server's idle timer, while nobody asks
                await asyncio.sleep(0.05)
                request.writer.write(TIMED_OUT)
                request.writer.close()

            asyncio.get_running_loop().create_task(idle_timeout())
            return True
        if request.connection == 2 and request.number == 1:
            request.writer.write(answer(COMPLETION))
            return True  # kept: its timer fires just as the next request arrives
        if request.connection == 2:
            request.writer.write(TIMED_OUT)
            return False
        request.writer.write(answer(COMPLETION))
        return True

    async with RawHttpServer(respond) as server:
        provider = _provider(server.url + "/v1", retry=RetryPolicy(max_attempts=1))
        once = provider.complete_once  # type: ignore[attr-defined]
        ask = (lambda r: provider.stream(r, lambda _: None)) if streamed else once
        assert (await once(REQUEST)).text == "fresh"
        await asyncio.sleep(0.2)  # the 408 arrives while the connection is idle
        assert (await ask(REQUEST)).text == "fresh"  # on connection 2
        answered = await ask(REQUEST)  # crosses the 408 of connection 2's timer
        await provider.aclose()
    assert answered.text == "fresh"
    assert server.connections == 3
    assert [(r.connection, r.number) for r in server.requests] == [(1, 1), (2, 1), (2, 2), (3, 1)]


async def test_a_408_on_a_new_connection_is_a_transient_error() -> None:
    async with RawHttpServer(respond_with(TIMED_OUT, keep=False)) as server:
        provider = _provider(server.url + "/v1", retry=RetryPolicy(max_attempts=1))
        with pytest.raises(TransientProviderError, match="HTTP 408"):
            await provider.complete(REQUEST)
        await provider.aclose()
    assert len(server.requests) == 1  # a server that is slow to read: the policy decides

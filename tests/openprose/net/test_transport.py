"""`net.transport`: the one interface callers speak to. `HttpTransport` against loopback
servers (a pool per origin, a new pool under a new event loop, the environment's proxy read
once per origin); `MockTransport` answering from a function, also behind a provider."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from openprose.net.connection import Response
from openprose.net.errors import CannotConnect
from openprose.net.timeouts import Timeouts
from openprose.net.transport import HttpTransport, MockTransport, Request
from openprose.providers.base import Message, ModelRequest, TransientProviderError
from openprose.providers.openai import OpenAIProvider
from openprose.providers.streaming import stream_text_to
from tests.support.raw_http_server import RawHttpServer, answer, respond_with

TIMEOUTS = Timeouts.overall(5.0)
REQUEST = ModelRequest(model="m", messages=(Message("user", "hi"),), max_tokens=8)


async def test_http_transport_keeps_one_pool_per_origin() -> None:
    async with (
        RawHttpServer(respond_with(answer(b"one"))) as first,
        RawHttpServer(respond_with(answer(b"two"))) as second,
    ):
        transport = HttpTransport()
        to_first = transport.prepare("POST", first.url + "/a", {"x-test": "1"})
        to_second = transport.prepare("GET", second.url + "/b?q=1", {})
        bodies = [
            (await transport.fetch(to_first, b"{}", TIMEOUTS)).body,
            (await transport.fetch(to_second, b"", TIMEOUTS)).body,
            (await transport.fetch(to_first, b"{}", TIMEOUTS)).body,
        ]
        assert transport.pool(first.url) is not transport.pool(second.url)
        await transport.aclose()
    assert bodies == [b"one", b"two", b"one"]
    assert first.connections == 1 and second.connections == 1  # kept alive per origin
    assert first.requests[0].request_line == "POST /a HTTP/1.1"
    assert first.requests[0].header("x-test") == "1"
    assert second.requests[0].request_line == "GET /b?q=1 HTTP/1.1"


def test_http_transport_serves_each_event_loop_with_its_own_pool() -> None:
    transport = HttpTransport()

    async def once() -> bytes:
        async with RawHttpServer(respond_with(answer(b"fine"))) as server:
            prepared = transport.prepare("POST", server.url + "/", {})
            body = (await transport.fetch(prepared, b"", TIMEOUTS)).body
            await transport.aclose()
            return body

    assert asyncio.run(once()) == b"fine"
    assert asyncio.run(once()) == b"fine"  # a pool bound to the finished loop is not reused


def test_http_transport_reads_the_proxy_for_each_origin_once() -> None:
    asked: list[str] = []

    def proxy_for(url: str) -> str | None:
        asked.append(url)
        return None

    transport = HttpTransport(proxy_for=proxy_for)
    transport.prepare("POST", "http://api.test/v1/a", {})
    transport.prepare("POST", "http://api.test/v1/b", {})
    transport.prepare("POST", "https://other.test/", {})
    assert asked == ["http://api.test/v1/a", "https://other.test/"]


def test_http_transport_refuses_what_cannot_be_sent() -> None:
    transport = HttpTransport()
    with pytest.raises(ValueError, match="not an http:// or https:// URL"):
        transport.prepare("POST", "ftp://host/x", {})
    with pytest.raises(ValueError, match="not a URL"):
        transport.prepare("POST", "http://[::1/v1", {})
    with pytest.raises(ValueError, match="forbids"):
        transport.prepare("POST", "http://host/x", {"x": "a\r\nb"})
    with pytest.raises(ValueError, match="proxy"):
        HttpTransport(proxy_for=lambda url: "socks5://127.0.0.1:1").prepare("GET", "http://h/", {})


async def test_mock_transport_answers_from_its_handler_whole_and_streamed() -> None:
    def handler(request: Request, body: bytes) -> Response:
        return Response(200, {"content-type": "text/plain"}, body.upper() + request.url.encode())

    transport = MockTransport(handler, piece_size=3)
    prepared = transport.prepare("POST", "http://mock.test/x", {"a": "b"})
    whole = await transport.fetch(prepared, b"abc", TIMEOUTS)
    async with transport.stream(prepared, b"def", TIMEOUTS) as streamed:
        pieces = [piece async for piece in streamed]
    await transport.aclose()
    assert whole.body == b"ABChttp://mock.test/x"
    assert b"".join(pieces) == b"DEFhttp://mock.test/x" and pieces[0] == b"DEF"
    assert [body for _, body in transport.sent] == [b"abc", b"def"]
    assert transport.sent[0][0] == Request("POST", "http://mock.test/x", {"a": "b"})
    assert transport.closed


COMPLETION = {
    "id": "c1",
    "model": "m",
    "choices": [{"index": 0, "finish_reason": "stop", "message": {"content": "mocked"}}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1},
}


async def test_a_provider_speaks_to_whatever_transport_it_is_given() -> None:
    seen: list[dict[str, object]] = []

    async def handler(request: Request, body: bytes) -> Response:
        seen.append(orjson.loads(body))
        return Response(200, {"content-type": "application/json"}, orjson.dumps(COMPLETION))

    provider = OpenAIProvider(
        api_key="k", base_url="http://mock.test/v1", timeout=5, transport=MockTransport(handler)
    )
    response = await provider.complete(REQUEST)
    await provider.aclose()
    assert response.text == "mocked" and response.usage.input_tokens == 3
    assert seen[0]["messages"] == [{"role": "user", "content": "hi"}]


async def test_a_provider_streams_through_a_mock_transport_piece_by_piece() -> None:
    events = [
        b'data: {"choices": [{"index": 0, "delta": {"content": "one "}}]}\n\n',
        b'data: {"choices": [{"index": 0, "delta": {"content": "two"}}]}\n\n',
        b'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}\n\n',
        b'data: {"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 2}}\n\n',
        b"data: [DONE]\n\n",
    ]
    transport = MockTransport(
        lambda request, body: Response(
            200, {"content-type": "text/event-stream"}, b"".join(events)
        ),
        piece_size=7,
    )
    provider = OpenAIProvider(
        api_key="k", base_url="http://mock.test/v1", timeout=5, transport=transport
    )
    heard: list[str] = []
    with stream_text_to(heard.append):
        response = await provider.complete(REQUEST)
    assert response.text == "one two" and "".join(heard) == "one two"
    assert orjson.loads(transport.sent[0][1])["stream"] is True


async def test_a_transport_failure_from_a_mock_is_the_contracts_error() -> None:
    def handler(request: Request, body: bytes) -> Response:
        raise CannotConnect("mock.test:80 (refused)")

    provider = OpenAIProvider(
        api_key="k", base_url="http://mock.test/v1", timeout=5, transport=MockTransport(handler)
    )
    with pytest.raises(TransientProviderError, match="cannot connect to the server: mock.test"):
        await provider.complete(REQUEST)

"""The one interface callers speak HTTP through, the real transport, and a mock for tests.

As httpx separates its client from its transports: a caller `prepare`s a request once (the
head is encoded once, not per call), then `fetch`es a whole answer or `stream`s one, bounded
by `Timeouts`. Every failure is one of `net.errors` or a `TimeoutError` (`TimedOut` says
which limit ran out). `HttpTransport` keeps one `ConnectionPool` per origin, with the proxy the
environment names for it; `MockTransport` answers from a function, with no socket at all.
"""

from __future__ import annotations

import asyncio
import inspect
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import urlsplit

from openprose.net.connection import Response
from openprose.net.endpoints import env_proxy
from openprose.net.errors import AnswerTooLarge
from openprose.net.parser import MAX_BODY_BYTES, MAX_HEAD_BYTES
from openprose.net.pool import ConnectionPool, PreparedRequest
from openprose.net.timeouts import Timeouts

__all__ = [
    "HttpTransport",
    "MockTransport",
    "Prepared",
    "Request",
    "Response",
    "StreamedAnswer",
    "Transport",
]


@dataclass(frozen=True, slots=True)
class Request:
    """What a caller asks for (the body goes with each call)."""

    method: str
    url: str
    headers: Mapping[str, str] = field(default_factory=dict)


class Prepared(Protocol):
    """A request made ready to send many times; what it holds is the transport's business."""

    @property
    def request(self) -> Request: ...


class StreamedAnswer(Protocol):
    """An answer whose head has arrived; its body is read with `async for piece in answer`
    or `await answer.read()`."""

    @property
    def status(self) -> int: ...

    @property
    def headers(self) -> dict[str, str]: ...

    def __aiter__(self) -> AsyncIterator[bytes]: ...

    async def read(self, limit: int = MAX_BODY_BYTES) -> bytes: ...


class Transport(Protocol):
    def prepare(self, method: str, url: str, headers: Mapping[str, str]) -> Prepared:
        """Ready a request; ValueError for a URL or header that cannot be sent."""
        ...

    async def fetch(self, prepared: Prepared, body: bytes, timeouts: Timeouts) -> Response: ...

    def stream(
        self, prepared: Prepared, body: bytes, timeouts: Timeouts
    ) -> AbstractAsyncContextManager[StreamedAnswer]: ...

    async def aclose(self) -> None: ...


# --- the real one ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _HttpPrepared:
    request: Request
    origin: str
    head: PreparedRequest


class HttpTransport:
    """HTTP/1.1 with keep-alive: one `ConnectionPool` per origin, each with at most
    `max_connections` (0: no cap) and the proxy `proxy_for(url)` names (by default the
    environment's HTTPS_PROXY / HTTP_PROXY / NO_PROXY, read once per origin).

    A pool belongs to the event loop that first used it: under another loop (another
    `asyncio.run`) the origin gets a new pool and the old one is dropped."""

    def __init__(
        self,
        *,
        max_connections: int = 0,
        proxy_for: Callable[[str], str | None] = env_proxy,
        ssl_context: Callable[[], ssl.SSLContext] | None = None,
        max_head: int = MAX_HEAD_BYTES,
        max_body: int = MAX_BODY_BYTES,
    ) -> None:
        self._max_connections = max_connections
        self._proxy_for = proxy_for
        self._ssl_context = ssl_context
        self._max_head = max_head
        self._max_body = max_body
        self._pools: dict[str, ConnectionPool] = {}

    def prepare(self, method: str, url: str, headers: Mapping[str, str]) -> _HttpPrepared:
        try:
            parts = urlsplit(url)
            origin = f"{parts.scheme}://{parts.netloc}"
        except ValueError as exc:  # `http://[::1/v1`: an unclosed IPv6 bracket
            raise ValueError(f"not a URL: {url!r} ({exc})") from None
        pool = self._pools.get(origin) or self._new_pool(origin, url)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        head = pool.prepare(method, target, dict(headers))
        return _HttpPrepared(Request(method, url, headers), origin, head)

    async def fetch(self, prepared: Prepared, body: bytes, timeouts: Timeouts) -> Response:
        ready = _http(prepared)
        loop = asyncio.get_running_loop()
        return await self._pool(ready, loop).fetch_on(loop, ready.head, body, timeouts)

    def stream(
        self, prepared: Prepared, body: bytes, timeouts: Timeouts
    ) -> AbstractAsyncContextManager[StreamedAnswer]:
        ready = _http(prepared)
        return self._pool(ready).stream(ready.head, body, timeouts)

    async def aclose(self) -> None:
        loop = asyncio.get_running_loop()
        pools, self._pools = self._pools, {}
        for pool in pools.values():
            if pool.loop is loop:
                await pool.aclose()  # a pool of another (finished) loop is only dropped

    def pool(self, url: str) -> ConnectionPool | None:
        """The pool serving `url`'s origin, if one was made (for tests and figures)."""
        parts = urlsplit(url)
        return self._pools.get(f"{parts.scheme}://{parts.netloc}")

    def _pool(
        self, ready: _HttpPrepared, loop: asyncio.AbstractEventLoop | None = None
    ) -> ConnectionPool:
        """The pool of `ready`'s origin for the running loop (`loop`, when the caller has it)."""
        pool = self._pools.get(ready.origin)
        if (
            pool is None
            or pool.loop is not None
            and pool.loop is not (loop or asyncio.get_running_loop())
        ):
            pool = self._new_pool(ready.origin, ready.request.url)
        return pool

    def _new_pool(self, origin: str, url: str) -> ConnectionPool:
        pool = self._pools[origin] = ConnectionPool(
            origin,
            max_connections=self._max_connections,
            proxy=self._proxy_for(url),
            ssl_context=self._ssl_context,
            max_head=self._max_head,
            max_body=self._max_body,
        )
        return pool


def _http(prepared: Prepared) -> _HttpPrepared:
    if not isinstance(prepared, _HttpPrepared):
        raise TypeError("a request prepared by another transport")
    return prepared


# --- the mock --------------------------------------------------------------------------------


Handler = Callable[[Request, bytes], Response | Awaitable[Response]]


@dataclass(frozen=True, slots=True)
class _MockPrepared:
    request: Request


class _MockStream:
    def __init__(self, response: Response, piece_size: int | None) -> None:
        self.status = response.status
        self.headers = response.headers
        body = response.body
        size = piece_size or max(1, len(body))
        self._pieces = [body[i : i + size] for i in range(0, len(body), size)]

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self._pieces:
            await asyncio.sleep(0)  # a piece at a time, as from a socket
            yield piece

    async def read(self, limit: int = MAX_BODY_BYTES) -> bytes:
        body = b"".join(self._pieces)
        if len(body) > limit:
            raise AnswerTooLarge(f"the answer's body is over the {limit} byte limit")
        return body


class MockTransport:
    """Answers every request with `handler(request, body)` (a `Response`, or an awaitable of
    one; raising one of `net.errors` or `TimeoutError` fails the call as the network would).
    A streamed answer's body arrives in pieces of `piece_size` bytes (default: one piece).
    `sent` keeps every (request, body) in order."""

    def __init__(self, handler: Handler, *, piece_size: int | None = None) -> None:
        self._handler = handler
        self._piece_size = piece_size
        self.sent: list[tuple[Request, bytes]] = []
        self.closed = False

    def prepare(self, method: str, url: str, headers: Mapping[str, str]) -> _MockPrepared:
        return _MockPrepared(Request(method, url, dict(headers)))

    async def fetch(self, prepared: Prepared, body: bytes, timeouts: Timeouts) -> Response:
        self.sent.append((prepared.request, body))
        answer = self._handler(prepared.request, body)
        return await answer if inspect.isawaitable(answer) else answer

    def stream(
        self, prepared: Prepared, body: bytes, timeouts: Timeouts
    ) -> AbstractAsyncContextManager[StreamedAnswer]:
        return self._stream(prepared, body, timeouts)

    @asynccontextmanager
    async def _stream(
        self, prepared: Prepared, body: bytes, timeouts: Timeouts
    ) -> AsyncIterator[StreamedAnswer]:
        yield _MockStream(await self.fetch(prepared, body, timeouts), self._piece_size)

    async def aclose(self) -> None:
        self.closed = True

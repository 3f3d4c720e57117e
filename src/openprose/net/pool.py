"""Keep-alive connections to one origin, shared by every request to it.

A `ConnectionPool` opens connections through its `Connector`, keeps the idle ones for
`KEEPALIVE_S` (less when the server's `keep-alive: timeout=N` says so), caps how many are
open (`max_connections`, 0 = no cap) and queues requests beyond the cap in arrival order. A
request's head is encoded once (`prepare`) and sent with its body in one write. `fetch` reads
a whole answer, `stream` hands its body over piece by piece; both are bounded by `Timeouts`.

Why not aiohttp's `ClientSession`: measured on this project's machine, it costs ~100 µs of CPU
per request (URL and header objects, cookie jar, tracing hooks, its stream reader), this
~35 µs; at 10,000 calls that is most of what `prose run` costs beyond the calls themselves.
"""

from __future__ import annotations

import asyncio
import ssl
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from urllib.parse import urlsplit

from openprose.net.connect import DNS_TTL_S, Connector, HostCache
from openprose.net.connection import (
    Connection,
    Exchange,
    Response,
    StaleConnection,
    StreamedResponse,
    WholeAnswer,
)
from openprose.net.endpoints import parse_proxy
from openprose.net.errors import CannotConnect, ConnectionBroke
from openprose.net.heads import encode_head
from openprose.net.parser import MAX_BODY_BYTES, MAX_HEAD_BYTES, ResponseParser
from openprose.net.timeouts import TimedOut, Timeouts

__all__ = ["KEEPALIVE_S", "ConnectionPool", "PreparedRequest", "StreamContext"]

# An idle connection is dropped after this, before the common servers drop it themselves
# (uvicorn, Node and Ollama after 5 s): a request sent on a connection the server is closing
# fails (and is then retried once, see `ConnectionPool.fetch`).
KEEPALIVE_S = 4.0
DRAIN_S = 1.0  # how long the unread end of a stream may take before its connection is closed


@dataclass(frozen=True, slots=True)
class PreparedRequest:
    """A request head encoded once: everything but `content-length` and the body."""

    head: bytes


class ConnectionPool:
    """Keep-alive connections to one origin, `max_connections` at most (0: no cap).

    Belongs to the event loop that first uses it. Requests beyond the cap wait in arrival
    order for a connection to come back."""

    def __init__(
        self,
        origin: str,
        *,
        max_connections: int = 0,
        proxy: str | None = None,
        keepalive_s: float = KEEPALIVE_S,
        ssl_context: Callable[[], ssl.SSLContext] | None = None,
        max_head: int = MAX_HEAD_BYTES,
        max_body: int = MAX_BODY_BYTES,
        dns_ttl_s: float = DNS_TTL_S,
    ) -> None:
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http:// or https:// URL with a host: {origin!r}")
        self.tls = parts.scheme == "https"
        self.host = parts.hostname
        default_port = 443 if self.tls else 80
        self.port = parts.port or default_port
        host_text = f"[{self.host}]" if ":" in self.host else self.host
        self.authority = host_text if self.port == default_port else f"{host_text}:{self.port}"
        self._origin_prefix = f"{parts.scheme}://{self.authority}"
        self._proxy = parse_proxy(proxy) if proxy else None
        self.connector = Connector(
            self.host,
            self.port,
            tls=self.tls,
            proxy=self._proxy,
            ssl_context=ssl_context,
            max_head=max_head,
            dns_ttl_s=dns_ttl_s,
        )
        self.max_connections = max_connections
        self.keepalive_s = keepalive_s
        self.max_head = max_head
        self.max_body = max_body
        self._idle: deque[Connection] = deque()  # oldest first
        self._waiters: deque[asyncio.Future[Connection | None]] = deque()
        self._open = 0  # connections open or opening, busy or idle
        self._sweeper: asyncio.TimerHandle | None = None
        self._watches: _Watches | None = None  # made in the pool's loop, at its first exchange
        self._closed = False
        self.loop: asyncio.AbstractEventLoop | None = None

    @property
    def host_cache(self) -> HostCache:
        return self.connector.host_cache

    @property
    def connections_made(self) -> int:
        return self.connector.connections_made

    def prepare(self, method: str, path: str, headers: dict[str, str]) -> PreparedRequest:
        """Encode a request head once; raises ValueError for a header that would break it."""
        target = path or "/"
        if self._proxy is not None and not self.tls:
            target = self._origin_prefix + target  # absolute form, for the proxy
        fields = {"accept-encoding": "gzip, deflate", **headers}
        if self._proxy is not None and not self.tls and self._proxy.authorization:
            fields["proxy-authorization"] = self._proxy.authorization
        own = (f"{method} {target} HTTP/1.1", f"host: {self.authority}")
        return PreparedRequest(encode_head(own, fields))

    # --- requests ---

    async def fetch(self, request: PreparedRequest, body: bytes, timeouts: Timeouts) -> Response:
        """Send one request and read its whole answer within `timeouts`.

        A request that fails on a REUSED connection before any byte of the answer arrived
        is sent once more on a new connection: the server closed that idle connection while
        the request was on its way (a close and a request cross on the wire), so it never
        saw the request. A fresh connection that fails the same way is not retried."""
        return await self.fetch_on(asyncio.get_running_loop(), request, body, timeouts)

    async def fetch_on(
        self,
        loop: asyncio.AbstractEventLoop,
        request: PreparedRequest,
        body: bytes,
        timeouts: Timeouts,
    ) -> Response:
        """`fetch`, for a caller that has the running `loop` at hand (asking for it costs a
        `getpid` on CPython 3.11)."""
        self._bind(loop)
        now = loop.time()
        deadline = None if timeouts.total is None else now + timeouts.total
        connect_by = _earliest(deadline, timeouts.connect, now)
        data = request.head + b"content-length: %d\r\n\r\n" % len(body) + body
        connection = self._take_idle(loop) or await self._acquire(connect_by)
        try:
            return await self._exchange(connection, data, deadline, timeouts)
        except StaleConnection:
            pass
        connection = await self._open_in_slot(connect_by)
        return await self._exchange(connection, data, deadline, timeouts)

    def stream(self, request: PreparedRequest, body: bytes, timeouts: Timeouts) -> StreamContext:
        """`async with pool.stream(...) as answer:` the answer once its head arrived; its body
        is read with `async for piece in answer`. Connecting (and waiting for a free
        connection) is bounded by `timeouts.connect`, the wait for the head by
        `timeouts.first_byte`, every wait for body bytes by `timeouts.read`; `total` does
        not apply (a stream may run as long as it keeps talking)."""
        data = request.head + b"content-length: %d\r\n\r\n" % len(body) + body
        return StreamContext(self, data, timeouts)

    async def aclose(self) -> None:
        self._closed = True
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        if self._watches is not None:
            self._watches.close()
        while self._idle:
            self._idle.pop().close()
            self._open -= 1
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_exception(CannotConnect("the connection pool was closed"))

    # --- internals ---

    def _bind(self, loop: asyncio.AbstractEventLoop) -> asyncio.AbstractEventLoop:
        """`loop`, the running one, if this pool serves it."""
        if self.loop is None:
            self.loop = loop
        elif self.loop is not loop:
            raise RuntimeError("a connection pool serves the event loop that first used it")
        if self._closed:
            raise CannotConnect("the connection pool was closed")
        return loop

    async def _exchange(
        self, connection: Connection, data: bytes, deadline: float | None, timeouts: Timeouts
    ) -> Response:
        loop = self.loop
        assert loop is not None
        future: asyncio.Future[Response] = loop.create_future()
        answer = WholeAnswer(future)
        parser = ResponseParser(answer, max_head=self.max_head, max_body=self.max_body)
        watch = _Watch(loop.time(), connection, parser, future, deadline, timeouts)
        watches = self._watches
        if watches is None:
            watches = self._watches = _Watches(loop)
        watches.add(watch)
        try:
            self._send(connection, answer, parser, data)
            response = await future
        except BaseException as failure:
            self._after_failure(connection, failure)
            raise
        finally:
            watches.remove(watch)
        if response.status == 408 and connection.served:
            self._timed_out_idle(connection)
        if connection.end():
            self._release(connection)
        else:
            self._discard(connection)
        return response

    @staticmethod
    def _send(
        connection: Connection, exchange: Exchange, parser: ResponseParser, data: bytes
    ) -> None:
        if connection.alive:
            connection.begin(exchange, parser, data)
        else:  # the server closed it between being picked and now
            connection.exchange = exchange
            connection.parser = parser
            connection.connection_lost(None)

    def _timed_out_idle(self, connection: Connection) -> None:
        """A 408 on a REUSED connection is the server's idle timeout, sent as the request
        crossed it on the wire (Node, HAProxy and proxies answer an idle connection so before
        closing it): the request was never read, so it is sent once more on a new
        connection (`StaleConnection`), as for a close that crossed it."""
        connection.exchange = None
        connection.parser = None
        connection.close()
        raise StaleConnection

    def _after_failure(self, connection: Connection, failure: BaseException) -> None:
        """Drop a connection whose exchange failed. One that had served answers before and
        broke before any byte of this answer is stale (see `fetch`): its slot is kept for
        the one retry, which `StaleConnection` asks for."""
        connection.exchange = None
        connection.parser = None
        if isinstance(failure, ConnectionBroke) and failure.before_answer and connection.served:
            connection.close()
            raise StaleConnection from failure
        self._discard(connection)

    def _take_idle(self, loop: asyncio.AbstractEventLoop) -> Connection | None:
        idle = self._idle
        if not idle:
            return None
        now = loop.time()
        while idle:
            connection = idle.pop()  # the most recently used: the warmest
            if connection.idle_until > now and connection.alive:
                return connection
            connection.close()
            self._open -= 1
        return None

    async def _acquire(self, deadline: float | None) -> Connection:
        """A connection for one request: an idle one, a new one, or one handed back."""
        assert self.loop is not None
        connection = self._take_idle(self.loop)
        if connection is not None:
            return connection
        if self.max_connections and self._open >= self.max_connections:
            waiter: asyncio.Future[Connection | None] = self.loop.create_future()
            self._waiters.append(waiter)
            try:
                async with asyncio.timeout_at(deadline):
                    handed = await waiter
            except BaseException:
                if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                    # handed a connection or a slot just as we gave up: pass it on
                    late = waiter.result()
                    if late is None:
                        self._free_slot()
                    else:
                        self._release(late)
                else:
                    waiter.cancel()
                raise
            if handed is not None:
                return handed
            # a slot was freed for us: open a connection in it
        else:
            self._open += 1
        return await self._open_in_slot(deadline)

    async def _open_in_slot(self, deadline: float | None) -> Connection:
        """A new connection in a slot already counted in `_open` (freed if it fails)."""
        try:
            return await self._connect(deadline)
        except BaseException:
            self._free_slot()
            raise

    def _release(self, connection: Connection) -> None:
        """Back to the pool: to the first waiter, else idle."""
        if self._closed or not connection.alive:
            self._discard(connection)
            return
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(connection)
                return
        loop = self.loop
        assert loop is not None
        keep = self.keepalive_s
        if connection.keep_for is not None:  # the server's `keep-alive: timeout=N`, less 1 s
            keep = min(keep, connection.keep_for - 1.0)
            if keep <= 0:
                self._discard(connection)
                return
        connection.idle_until = loop.time() + keep
        self._idle.append(connection)
        if self._sweeper is None:
            self._sweeper = loop.call_at(connection.idle_until, self._sweep)

    def _discard(self, connection: Connection) -> None:
        connection.close()
        self._free_slot()

    def _free_slot(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the slot passes to the waiter
                return
        self._open -= 1

    def _sweep(self) -> None:
        """Close the connections idle past their time (`_take_idle` never reuses them; this
        frees their sockets), and come back when the next one's time is up."""
        self._sweeper = None
        loop = self.loop
        assert loop is not None
        now = loop.time()
        kept = [c for c in self._idle if c.idle_until > now and c.alive]
        for connection in self._idle:
            if connection.idle_until <= now or not connection.alive:
                connection.close()
                self._open -= 1
        self._idle = deque(kept)
        if kept and not self._closed:
            self._sweeper = loop.call_at(min(c.idle_until for c in kept), self._sweep)

    async def _connect(self, deadline: float | None) -> Connection:
        assert self.loop is not None
        return await self.connector.open(self.loop, deadline)


class StreamContext:
    def __init__(self, pool: ConnectionPool, data: bytes, timeouts: Timeouts) -> None:
        self._pool = pool
        self._data = data
        self._timeouts = timeouts
        self._answer: StreamedResponse | None = None

    async def __aenter__(self) -> StreamedResponse:
        pool = self._pool
        loop = pool._bind(asyncio.get_running_loop())
        deadline = _earliest(None, self._timeouts.connect, loop.time())
        connection = pool._take_idle(loop) or await pool._acquire(deadline)
        try:
            return await self._send(connection)
        except StaleConnection:
            pass
        # as in `fetch`: the server closed this kept-alive connection meanwhile; once more
        return await self._send(await pool._open_in_slot(deadline))

    async def _send(self, connection: Connection) -> StreamedResponse:
        pool = self._pool
        answer = StreamedResponse(connection, self._timeouts.read)
        parser = ResponseParser(answer, max_head=pool.max_head, max_body=None)
        try:
            pool._send(connection, answer, parser, self._data)
            await answer._head(self._timeouts.first_byte)
        except BaseException as failure:
            pool._after_failure(connection, failure)
            raise
        if answer.status == 408 and connection.served:
            pool._timed_out_idle(connection)
        self._answer = answer
        return answer

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        answer = self._answer
        if answer is None:
            return
        pool = self._pool
        connection = answer._connection
        # Only an answer read to its end leaves its connection fit for another request.
        if exc is None and answer.complete:
            if connection.end():
                pool._release(connection)
            else:
                pool._discard(connection)
        elif exc is None and answer._failure is None and connection.alive:
            # The reader stopped at the stream's closing event; the body's own end (the
            # last chunk) is usually on its way: wait for it a little, off the caller's time.
            assert pool.loop is not None
            timer = pool.loop.call_later(DRAIN_S, connection.fail, ConnectionBroke("drain"))

            def drained(clean: bool) -> None:
                timer.cancel()
                if clean and connection.end():
                    pool._release(connection)
                else:
                    connection.exchange = None
                    connection.parser = None
                    pool._discard(connection)

            answer.drain(drained)
        else:
            connection.exchange = None
            connection.parser = None
            pool._discard(connection)


def _earliest(deadline: float | None, seconds: float | None, now: float) -> float | None:
    """The earlier of `deadline` and `seconds` from `now` (None: no limit)."""
    if seconds is None:
        return deadline
    return now + seconds if deadline is None else min(deadline, now + seconds)


class _Watch:
    """The timeouts of one whole-answer exchange: the head must arrive within `first_byte`
    of sending, then no silence may last `read`, and all of it ends by the total `deadline`.
    `due` is the earliest moment one of them could run out; the pool looks at the watch
    then (`_Watches`) and it says when to look again (a lazy check): nothing is done per
    byte but noting when bytes came."""

    __slots__ = (
        "_connection",
        "_deadline",
        "_first_byte",
        "_future",
        "_parser",
        "_read",
        "_timeouts",
        "due",
    )

    def __init__(
        self,
        now: float,
        connection: Connection,
        parser: ResponseParser,
        future: asyncio.Future[Response],
        deadline: float | None,
        timeouts: Timeouts,
    ) -> None:
        self._connection = connection
        self._parser = parser
        self._future = future
        self._deadline = deadline
        self._timeouts = timeouts
        self._read = timeouts.read
        self._first_byte = _earliest(deadline, timeouts.first_byte, now)
        self.due = _earliest(self._first_byte, self._read, now)

    def check(self, now: float) -> float | None:
        """At `now`, fail the exchange if one of its timeouts ran out; else the next
        moment to look again (None: never, no timeout is left to run out)."""
        if self._deadline is not None and now >= self._deadline:
            assert self._timeouts.total is not None
            self._expire(TimedOut("total", self._timeouts.total))
            return None
        if self._parser.head is None:
            if self._first_byte is not None and now >= self._first_byte:
                assert self._timeouts.first_byte is not None
                self._expire(TimedOut("first_byte", self._timeouts.first_byte))
                return None
            # looked at again after `read` at the latest: the head may arrive meanwhile,
            # and from then on a silence of `read` is what counts
            return _earliest(self._first_byte, self._read, now)
        if self._read is None:  # the head arrived: from now on only the total counts
            return self._deadline
        quiet_until = self._connection.last_data + self._read
        if now >= quiet_until:
            self._expire(TimedOut("read", self._read))
            return None
        return quiet_until if self._deadline is None else min(quiet_until, self._deadline)

    def _expire(self, failure: TimedOut) -> None:
        """Fail the exchange (unless it ended meanwhile); nothing is left to watch."""
        if not self._future.done():
            self._connection.exchange = None
            self._connection.close()
            self._future.set_exception(failure)


class _Watches:
    """The watches of a pool's exchanges in flight, on one timer for them all, set for the
    earliest moment one of them is due to be looked at. An exchange that ends in time only
    leaves the table: the timer stays as it is and, when it fires, looks at the watches
    then due and is set again for the earliest left. A fan-out of exchanges with the same
    timeouts so costs a timer per timeout's length, not one per exchange (whose making,
    heap order and cancelling cost about as much as the rest of the exchange's Python)."""

    __slots__ = ("_at", "_due", "_loop", "_timer")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._due: dict[_Watch, float] = {}  # each watch: when to look at it next
        self._timer: asyncio.TimerHandle | None = None
        self._at = 0.0  # when `_timer` fires

    def add(self, watch: _Watch) -> None:
        due = watch.due
        if due is None:
            return  # no timeout at all
        self._due[watch] = due
        if self._timer is None or due < self._at:
            self._arm(due)

    def remove(self, watch: _Watch) -> None:
        self._due.pop(watch, None)

    def close(self) -> None:
        """Stop the timer if no exchange is watched (those in flight keep their timeouts)."""
        if not self._due and self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _arm(self, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._at = when
        self._timer = self._loop.call_at(when, self._fire)

    def _fire(self) -> None:
        self._timer = None
        now = self._loop.time()
        table = self._due
        for watch in [w for w, due in table.items() if due <= now]:
            later = watch.check(now)
            if later is None:
                del table[watch]
            else:
                table[watch] = later
        if table:
            self._arm(min(table.values()))

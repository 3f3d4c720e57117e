"""One keep-alive connection and the exchange under way on it: the bytes that arrive go to
the answer's parser, and the parser's head, body and end go to the exchange, which is a whole
answer settling a future (`WholeAnswer`) or a body handed over as it arrives
(`StreamedResponse`, with back-pressure on the socket)."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from time import monotonic

from openprose.net.errors import AnswerTooLarge, ConnectionBroke, HttpFailure
from openprose.net.parser import MAX_BODY_BYTES, ResponseHead, ResponseParser
from openprose.net.timeouts import TimedOut
from openprose.slots_init import install_slots_init

__all__ = [
    "STREAM_BUFFER_BYTES",
    "Connection",
    "Exchange",
    "Response",
    "StaleConnection",
    "StreamedResponse",
    "WholeAnswer",
    "idle_timeout",
]

STREAM_BUFFER_BYTES = 1024 * 1024  # a stream's unread bytes above which reading pauses


class Connection(asyncio.Protocol):
    """A connection and the exchange under way on it (one at a time)."""

    __slots__ = (
        "closed",
        "exchange",
        "idle_until",
        "keep_for",
        "last_data",
        "parser",
        "served",
        "transport",
    )

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser: ResponseParser | None = None
        self.exchange: Exchange | None = None
        self.closed = False
        self.served = 0  # answers read completely on it
        self.idle_until = 0.0  # while idle: not to be used from then on
        self.keep_for: float | None = None  # how long the server says it keeps it idle
        self.last_data = 0.0  # when bytes last arrived (the loop's clock: monotonic)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.last_data = monotonic()
        parser = self.parser
        if parser is None:  # bytes nobody asked for: the connection cannot be trusted
            self.close()
            return
        try:
            parser.feed(data)
        except HttpFailure as failure:
            self.fail(failure)

    def eof_received(self) -> bool | None:
        return None  # close; connection_lost tells the exchange

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        parser = self.parser
        if parser is None or parser.done:
            return
        try:
            parser.feed_eof()
        except ConnectionBroke as failure:
            if exc is not None and not failure.before_answer:
                failure = ConnectionBroke(f"{failure} ({exc})")
            self.fail(failure)
        except HttpFailure as failure:
            self.fail(failure)

    def begin(self, exchange: Exchange, parser: ResponseParser, data: bytes) -> None:
        self.exchange = exchange
        self.parser = parser
        assert self.transport is not None
        self.transport.write(data)

    def end(self) -> bool:
        """The exchange is over; True when the connection can serve another one."""
        parser = self.parser
        self.exchange = None
        self.parser = None
        reusable = (
            parser is not None
            and parser.done
            and not parser.extra
            and parser.head is not None
            and parser.head.keep_alive
            and not self.closed
        )
        if reusable:
            self.served += 1
            assert parser is not None and parser.head is not None
            hint = parser.head.headers.get("keep-alive")
            self.keep_for = None if hint is None else idle_timeout(hint)
        return reusable

    def fail(self, failure: BaseException) -> None:
        exchange = self.exchange
        self.close()
        if exchange is not None:
            exchange.fail(failure)

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()  # unsent bytes do not matter: the exchange is over

    @property
    def alive(self) -> bool:
        return not self.closed and self.transport is not None and not self.transport.is_closing()


class StaleConnection(Exception):
    """A kept-alive connection the server had closed: the request is worth one retry."""


class Exchange:
    __slots__ = ()

    def fail(self, failure: BaseException) -> None:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    headers: dict[str, str]  # lower-case names
    body: bytes


# one an answer: past a fan-out's first answers, set through its slots (see slots_init)
install_slots_init(Response, after=256)


class WholeAnswer(Exchange):
    """Collects one answer and settles a future with it."""

    __slots__ = ("future", "head", "pieces")

    def __init__(self, future: asyncio.Future[Response]) -> None:
        self.future = future
        self.head: ResponseHead | None = None
        self.pieces: list[bytes] = []

    def on_head(self, head: ResponseHead) -> None:
        self.head = head

    def on_body(self, piece: bytes) -> None:
        self.pieces.append(piece)

    def on_end(self) -> None:
        if not self.future.done():
            assert self.head is not None
            pieces = self.pieces
            body = pieces[0] if len(pieces) == 1 else b"".join(pieces)
            self.future.set_result(Response(self.head.status, self.head.headers, body))

    def fail(self, failure: BaseException) -> None:
        if not self.future.done():
            self.future.set_exception(failure)


class StreamedResponse(Exchange):
    """An answer whose body is read as it arrives: `status` and `headers` first, then
    `async for piece in answer` (or `await answer.read()`). Each wait for the head or a
    piece is bounded by the read timeout."""

    def __init__(self, connection: Connection, read_timeout: float | None) -> None:
        self._connection = connection
        self._read_timeout = read_timeout
        self._pieces: deque[bytes] = deque()
        self._buffered = 0
        self._paused = False
        self._ended = False
        self._failure: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._drained: Callable[[bool], None] | None = None  # see `drain`
        self.head: ResponseHead | None = None

    @property
    def status(self) -> int:
        assert self.head is not None
        return self.head.status

    @property
    def headers(self) -> dict[str, str]:
        assert self.head is not None
        return self.head.headers

    # sink side (the connection)
    def on_head(self, head: ResponseHead) -> None:
        self.head = head
        self._wake()

    def on_body(self, piece: bytes) -> None:
        if self._drained is not None:
            return
        self._pieces.append(piece)
        self._buffered += len(piece)
        if self._buffered > STREAM_BUFFER_BYTES and not self._paused:
            transport = self._connection.transport
            if transport is not None and not self._connection.closed:
                self._paused = True
                transport.pause_reading()
        self._wake()

    def on_end(self) -> None:
        self._ended = True
        if self._drained is not None:
            self._drained(True)
        self._wake()

    def fail(self, failure: BaseException) -> None:
        self._failure = failure
        if self._drained is not None:
            self._drained(False)
        self._wake()

    def drain(self, drained: Callable[[bool], None]) -> None:
        """Let the rest of the body arrive unread; `drained(True)` once it has (the
        connection may serve again), `drained(False)` if it broke."""
        self._drained = drained
        self._pieces.clear()
        self._buffered = 0
        if self._paused:
            self._paused = False
            transport = self._connection.transport
            if transport is not None and not self._connection.closed:
                transport.resume_reading()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # reader side
    async def _wait(self, timeout: float | None, which: str) -> None:
        waiter = self._waiter = asyncio.get_running_loop().create_future()
        try:
            async with asyncio.timeout(timeout):
                await waiter
        except TimeoutError:
            assert timeout is not None
            raise TimedOut(which, timeout) from None
        finally:
            self._waiter = None

    async def _head(self, timeout: float | None) -> None:
        """Until the answer's head arrived, each wait bounded by `timeout` (a server may
        think before it answers: longer than the silence allowed once it streams)."""
        while self.head is None:
            if self._failure is not None:
                raise self._failure
            await self._wait(timeout, "first_byte")

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._pieces_as_they_come()

    async def _pieces_as_they_come(self) -> AsyncIterator[bytes]:
        while True:
            if self._pieces:
                piece = self._pieces.popleft()
                self._buffered -= len(piece)
                if self._paused and self._buffered <= STREAM_BUFFER_BYTES // 2:
                    self._paused = False
                    transport = self._connection.transport
                    if transport is not None and not self._connection.closed:
                        transport.resume_reading()
                yield piece
                continue
            if self._failure is not None:
                raise self._failure
            if self._ended:
                return
            await self._wait(self._read_timeout, "read")

    async def read(self, limit: int = MAX_BODY_BYTES) -> bytes:
        """The rest of the body, whole (an error answer's, or one that is not a stream)."""
        pieces: list[bytes] = []
        size = 0
        async for piece in self:
            size += len(piece)
            if size > limit:
                raise AnswerTooLarge(f"the answer's body is over the {limit} byte limit")
            pieces.append(piece)
        return b"".join(pieces)

    @property
    def complete(self) -> bool:
        return self._ended and not self._pieces and self._failure is None


def idle_timeout(hint: str) -> float | None:
    """The `timeout=N` of a `keep-alive` header (seconds the server keeps an idle
    connection), or None."""
    for part in hint.split(","):
        name, _, value = part.strip().partition("=")
        if name.strip().lower() == "timeout":
            try:
                return float(value.strip())
            except ValueError:
                return None
    return None

"""HTTP/1.1 on the wire for the hosted providers: keep-alive connections on asyncio protocols.

A `ConnectionPool` serves one origin (scheme, host, port) for one provider: it opens
connections (TCP, TLS through `ssl.create_default_context()`, or through an http:// or
https:// proxy; the host's addresses looked up once per `DNS_TTL_S` by its `HostCache`),
keeps the idle ones for `KEEPALIVE_S` (less when the server's `keep-alive: timeout=N` says so), caps how many are open (`max_connections`, 0 = no cap)
and queues requests beyond the cap. A request's head is encoded once (`prepare`) and sent
with its body in one `transport.write`; the answer is read by `ResponseParser`, which needs no
I/O and so is tested on any split of the bytes: content-length, chunked and read-until-close
bodies, gzip/deflate content-encoding, 1xx answers skipped, limits on head and body size.

`fetch` reads a whole answer under one total timeout; `stream` hands the body over piece by
piece, with a connect timeout and a timeout on each silence. Every failure is one of the
`HttpFailure` classes below (or `TimeoutError`); `http_errors.transport_error` turns them into
the provider contract's errors.

Why not aiohttp's `ClientSession`: measured on this project's machine, it costs ~100 µs of CPU
per request (URL and header objects, cookie jar, tracing hooks, its stream reader), this ~35 µs;
at 10,000 calls that is most of what `prose run` costs beyond the calls themselves.
"""

from __future__ import annotations

import asyncio
import base64
import os
import re
import socket
import ssl
import zlib
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Protocol
from urllib.parse import unquote, urlsplit

import aiohappyeyeballs

__all__ = [
    "DNS_TTL_S",
    "KEEPALIVE_S",
    "MAX_BODY_BYTES",
    "MAX_HEAD_BYTES",
    "AddressInfo",
    "AnswerTooLarge",
    "CannotConnect",
    "ConnectionBroke",
    "ConnectionPool",
    "HostCache",
    "HttpFailure",
    "NotHttp",
    "PreparedRequest",
    "Response",
    "ResponseHead",
    "ResponseParser",
    "StreamedResponse",
    "TlsFailure",
]

# An idle connection is dropped after this, before the common servers drop it themselves
# (uvicorn, Node and Ollama after 5 s): a request sent on a connection the server is closing
# fails (and is then retried once, see `ConnectionPool.fetch`).
KEEPALIVE_S = 4.0
MAX_HEAD_BYTES = 64 * 1024  # status line and headers (and a chunked body's trailers)
MAX_BODY_BYTES = 64 * 1024 * 1024  # a whole answer, after decompression
STREAM_BUFFER_BYTES = 1024 * 1024  # a stream's unread bytes above which reading pauses
DRAIN_S = 1.0  # how long the unread end of a stream may take before its connection is closed
HAPPY_EYEBALLS_S = 0.25
# A host's addresses are looked up again after this (aiohttp's default `ttl_dns_cache`): long
# enough that a run's first burst of connections makes one lookup, short enough to follow a
# hosted API moving its addresses.
DNS_TTL_S = 10.0
_DECOMPRESS_STEP = 256 * 1024  # inflate at most this much per call (a zip bomb stops early)
_NO_BODY_STATUSES = frozenset({204, 304})


# --- failures ---------------------------------------------------------------------------


class HttpFailure(Exception):
    """An exchange that did not produce a complete answer."""


class CannotConnect(HttpFailure):
    """No connection could be made (name lookup, refused, unreachable, proxy refused)."""


class TlsFailure(HttpFailure):
    """The TLS handshake failed: a certificate not trusted or not for this host."""


class ConnectionBroke(HttpFailure):
    """The connection closed or was reset before the answer was complete."""

    def __init__(self, message: str, *, before_answer: bool = False) -> None:
        super().__init__(message)
        self.before_answer = before_answer  # no byte of the answer had arrived


class NotHttp(HttpFailure):
    """The bytes the server sent are not an HTTP/1.x answer this client can read."""


class AnswerTooLarge(HttpFailure):
    """The answer's head or body is over its limit."""


# --- reading answers ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ResponseHead:
    status: int
    reason: str
    headers: dict[str, str]  # lower-case names; repeated headers joined with ", "
    keep_alive: bool  # the connection may serve another request after this answer


class ResponseSink(Protocol):
    def on_head(self, head: ResponseHead) -> None: ...

    def on_body(self, piece: bytes) -> None: ...

    def on_end(self) -> None: ...


# parser states
_HEAD, _LENGTH, _CHUNK_SIZE, _CHUNK_DATA, _CHUNK_END, _TRAILERS, _UNTIL_CLOSE, _DONE = range(8)


class ResponseParser:
    """One HTTP/1.x answer from bytes arriving in pieces of any size.

    `feed` each piece as it arrives and `feed_eof` when the connection closes; the sink gets
    the head (after any 1xx answers, which are skipped), the body in pieces (decompressed),
    and the end. Raises `NotHttp`, `AnswerTooLarge` or `ConnectionBroke`. `extra` holds bytes
    that arrived after the end (a server that sends them cannot be trusted with another
    request)."""

    __slots__ = (
        "_body_bytes",
        "_buffer",
        "_decoder",
        "_left",
        "_no_body",
        "_sink",
        "_state",
        "extra",
        "head",
        "max_body",
        "max_head",
        "started",
    )

    def __init__(
        self,
        sink: ResponseSink,
        *,
        no_body: bool = False,
        max_head: int = MAX_HEAD_BYTES,
        max_body: int | None = MAX_BODY_BYTES,
    ) -> None:
        self._sink = sink
        self._no_body = no_body  # the answer to CONNECT: a 2xx has no body
        self.max_head = max_head
        self.max_body = max_body  # None: no limit (a stream is read as it arrives)
        self._state = _HEAD
        self._buffer = bytearray()  # a line (or head) whose end has not arrived
        self._left = 0
        self._body_bytes = 0
        self._decoder: _Decoder | None = None
        self.head: ResponseHead | None = None
        self.started = False  # any byte of the answer arrived
        self.extra = b""

    @property
    def done(self) -> bool:
        return self._state == _DONE

    def feed(self, data: bytes) -> None:
        if not data:
            return
        self.started = True
        if self._state == _DONE:
            self.extra += data
            return
        if self._buffer:
            if self._state in (_HEAD, _TRAILERS):
                if not self._more_lines(data):
                    return  # a head still arriving: kept, not copied again
                data = bytes(self._buffer)
            else:
                data = bytes(self._buffer) + data
            self._buffer.clear()
        while data:
            state = self._state
            if state == _LENGTH:
                if len(data) < self._left:
                    self._left -= len(data)
                    self._body(data)
                    return
                piece, data = data[: self._left], data[self._left :]
                self._left = 0
                self._body(piece)
                self._finish(data)
                return
            if state == _HEAD:
                data = self._read_head(data)
            elif state == _UNTIL_CLOSE:
                self._body(data)
                return
            elif state == _CHUNK_DATA:
                if len(data) <= self._left:
                    self._left -= len(data)
                    self._body(data)
                    if not self._left:
                        self._state = _CHUNK_END
                    return
                piece, data = data[: self._left], data[self._left :]
                self._left = 0
                self._state = _CHUNK_END
                self._body(piece)
            elif state == _CHUNK_SIZE:
                data = self._read_chunk_size(data)
            elif state == _CHUNK_END:
                if len(data) < 2 and data in (b"\r", b""):
                    self._buffer += data
                    return
                if data.startswith(b"\r\n"):
                    data = data[2:]
                elif data.startswith(b"\n"):
                    data = data[1:]
                else:
                    raise NotHttp("a chunk of the chunked body does not end with a line break")
                self._state = _CHUNK_SIZE
            elif state == _TRAILERS:
                data = self._read_trailers(data)
            else:  # _DONE
                self.extra += data
                return

    def feed_eof(self) -> None:
        """The connection closed: the end of a read-until-close body, else an answer cut off."""
        state = self._state
        if state == _DONE:
            return
        if state == _UNTIL_CLOSE:
            self._finish(b"")
            return
        if not self.started:
            raise ConnectionBroke(
                "the server closed the connection without answering", before_answer=True
            )
        if state == _HEAD:
            raise ConnectionBroke("the connection closed in the middle of the answer's headers")
        raise ConnectionBroke(
            "the connection closed before the whole answer body arrived"
            + (f" ({self._left} of its bytes missing)" if state == _LENGTH else "")
        )

    # --- internals ---

    def _more_lines(self, data: bytes) -> bool:
        """Add to a head (or trailers) held back; True once its blank line has arrived.
        The search goes on from where the last one ended, so a head arriving a byte at a
        time costs what it costs in one piece."""
        buffer = self._buffer
        start = max(0, len(buffer) - 2)
        buffer += data
        if buffer.find(b"\n\r\n", start) >= 0 or buffer.find(b"\n\n", start) >= 0:
            return True
        if self._state == _TRAILERS and buffer.startswith((b"\r\n", b"\n")):
            return True  # no trailers: the blank line comes first
        if len(buffer) > self.max_head:
            what = "headers" if self._state == _HEAD else "trailers"
            raise AnswerTooLarge(f"the answer's {what} are over {self.max_head} bytes")
        if self._state == _HEAD and not _could_be_http(bytes(buffer[:5])):
            raise _not_http(bytes(buffer))
        return False

    def _read_head(self, data: bytes) -> bytes:
        end = _blank_line(data)
        if end < 0:
            if len(data) > self.max_head:
                raise AnswerTooLarge(f"the answer's headers are over {self.max_head} bytes")
            if not _could_be_http(data):
                raise _not_http(data)
            self._buffer += data
            return b""
        block, data = data[:end], data[end:].removeprefix(b"\r\n").removeprefix(b"\n")
        if len(block) > self.max_head:
            raise AnswerTooLarge(f"the answer's headers are over {self.max_head} bytes")
        head = _parse_head(block)
        if 100 <= head.status < 200:
            if head.status == 101:
                raise NotHttp("the server switched protocols (HTTP 101), which was not asked for")
            return data  # an interim answer (100 Continue, 103 Early Hints): the real one follows
        self.head = head
        headers = head.headers
        self._sink.on_head(head)
        encoding = headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("identity", ""):
            self._decoder = _Decoder(encoding)
        if self._no_body and 200 <= head.status < 300 or head.status in _NO_BODY_STATUSES:
            self._finish(data)
            return b""
        transfer = headers.get("transfer-encoding")
        if transfer is not None:
            codings = [c.strip().lower() for c in transfer.split(",") if c.strip()]
            if codings != ["chunked"]:
                raise NotHttp(f"transfer-encoding {transfer!r} is not supported")
            self._state = _CHUNK_SIZE
            return data
        length = headers.get("content-length")
        if length is None:
            self._state = _UNTIL_CLOSE
            return data
        self._left = _content_length(length)
        if self.max_body is not None and self._left > self.max_body and self._decoder is None:
            raise AnswerTooLarge(
                f"the answer's body is {self._left} bytes, over the {self.max_body} byte limit"
            )
        if not self._left:
            self._finish(data)
            return b""
        self._state = _LENGTH
        return data

    def _read_chunk_size(self, data: bytes) -> bytes:
        end = data.find(b"\n")
        if end < 0:
            if len(data) > 1024:
                raise NotHttp("a chunk size line of the chunked body is over 1024 bytes")
            self._buffer += data
            return b""
        line = data[:end].rstrip(b"\r").split(b";", 1)[0].strip()
        hexadecimal = 0 < len(line) <= 16 and all(c in b"0123456789abcdefABCDEF" for c in line)
        size = int(line, 16) if hexadecimal else -1
        if size < 0:
            raise NotHttp(f"a chunk size of the chunked body is not a hex number: {_quoted(line)}")
        data = data[end + 1 :]
        if size == 0:
            self._state = _TRAILERS
        else:
            self._left = size
            self._state = _CHUNK_DATA
        return data

    def _read_trailers(self, data: bytes) -> bytes:
        if data.startswith((b"\r\n", b"\n")):  # no trailers
            self._finish(data[2 if data[0] == 13 else 1 :])
            return b""
        if data == b"\r":
            self._buffer += data
            return b""
        end = _blank_line(data)
        if end < 0:
            if len(data) > self.max_head:
                raise AnswerTooLarge(f"the answer's trailers are over {self.max_head} bytes")
            self._buffer += data
            return b""
        self._finish(data[end:].removeprefix(b"\r\n").removeprefix(b"\n"))
        return b""

    def _body(self, piece: bytes) -> None:
        if self._decoder is not None:
            for out in self._decoder.decode(piece):
                self._deliver(out)
        else:
            self._deliver(piece)

    def _deliver(self, piece: bytes) -> None:
        if not piece:
            return
        self._body_bytes += len(piece)
        if self.max_body is not None and self._body_bytes > self.max_body:
            raise AnswerTooLarge(f"the answer's body is over the {self.max_body} byte limit")
        self._sink.on_body(piece)

    def _finish(self, rest: bytes) -> None:
        if self._decoder is not None:
            for out in self._decoder.end():
                self._deliver(out)
        self._state = _DONE
        self.extra = rest
        self._sink.on_end()


def _blank_line(data: bytes) -> int:
    """Where the blank line that ends a head starts (after the last header's line break),
    or -1. CRLF is the rule; bare LF is accepted as most clients do."""
    crlf = data.find(b"\n\r\n")
    lf = data.find(b"\n\n")
    if crlf < 0:
        return lf if lf < 0 else lf + 1
    if lf < 0 or crlf < lf:
        return crlf + 1
    return lf + 1


def _could_be_http(data: bytes) -> bool:
    """Whether a head still arriving may yet be an HTTP answer (refuse noise early)."""
    start = data[:5]
    return b"HTTP/".startswith(start) or start == b"HTTP/"


# One well-formed header line: a token, a colon, the value without surrounding blanks.
_HEADER_LINE = re.compile(
    r"^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*((?:[^\r\n]*[^ \t\r\n])?)[ \t]*\r?$", re.MULTILINE
)


# The first bytes of a TLS record: an alert (0x15) or a handshake (0x16), version 3.x.
_TLS_RECORDS = (b"\x15\x03", b"\x16\x03")


def _not_http(data: bytes) -> NotHttp:
    """What the server sent instead of HTTP; TLS named as such (an http:// URL to a port
    that speaks TLS gets a TLS alert back)."""
    if data.startswith(_TLS_RECORDS):
        return NotHttp(
            "the server answered in TLS, not plain HTTP: the base URL must start with https://"
        )
    return NotHttp(f"the server's answer does not start like HTTP: {_quoted(data)}")


def _parse_head(block: bytes) -> ResponseHead:
    text = block.decode("latin-1").rstrip("\r\n")
    status_line, _, fields = text.partition("\n")
    version, _, rest = status_line.rstrip("\r").partition(" ")
    code, _, reason = rest.partition(" ")
    if version[:7] != "HTTP/1." or len(version) != 8 or len(code) != 3 or not code.isdigit():
        shown = _quoted(status_line.encode("latin-1"))
        raise NotHttp(f"the server's answer is not HTTP/1.x: {shown}")
    pairs = _HEADER_LINE.findall(fields)
    headers = {name.lower(): value for name, value in pairs}
    if len(headers) != len(pairs) or (fields and len(pairs) != fields.count("\n") + 1):
        headers = _unusual_headers(fields)  # repeated names, folded or malformed lines
    tokens = headers.get("connection", "").lower()
    if version == "HTTP/1.1":
        keep_alive = "close" not in tokens
    else:
        keep_alive = "keep-alive" in tokens
    return ResponseHead(int(code), reason, headers, keep_alive)


def _unusual_headers(fields: str) -> dict[str, str]:
    """Header lines the one-pass reading could not take: repeated names are joined with
    ", ", an obsolete folded line continues the one before it, a malformed line is refused."""
    headers: dict[str, str] = {}
    last = ""
    for raw in fields.split("\n"):
        line = raw.rstrip("\r")
        if not line:
            continue
        if line[:1] in (" ", "\t"):  # an obsolete folded continuation line
            if not last:
                raise NotHttp("the answer's first header line starts with a space")
            headers[last] += " " + line.strip()
            continue
        match = _HEADER_LINE.match(line)
        if match is None:
            raise NotHttp(
                f"a header line of the answer is malformed: {_quoted(line.encode('latin-1'))}"
            )
        key, value = match.group(1).lower(), match.group(2)
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
        last = key
    return headers


def _content_length(value: str) -> int:
    # Repeated headers arrive joined ("12, 12"): equal values are one length.
    values = {v.strip() for v in value.split(",")}
    if len(values) != 1:
        raise NotHttp(f"the answer has conflicting content-length values: {value!r}")
    (length,) = values
    if not length.isdigit() or len(length) > 18:
        raise NotHttp(f"the answer's content-length is not a byte count: {value!r}")
    return int(length)


def _quoted(data: bytes | bytearray) -> str:
    text = repr(bytes(data[:80]))[1:]
    return text + ("..." if len(data) > 80 else "")


class _Decoder:
    """gzip or deflate content-encoding, inflated in bounded steps."""

    __slots__ = ("_inflate", "_started", "encoding")

    def __init__(self, encoding: str) -> None:
        if encoding in ("gzip", "x-gzip"):
            wbits = 16 + zlib.MAX_WBITS
        elif encoding == "deflate":
            wbits = zlib.MAX_WBITS
        else:
            raise NotHttp(f"the answer's content-encoding {encoding!r} is not supported")
        self.encoding = encoding
        self._inflate = zlib.decompressobj(wbits)
        self._started = False

    def decode(self, data: bytes) -> list[bytes]:
        if not self._started and self.encoding == "deflate" and data:
            # "deflate" should be zlib-wrapped; some servers send the raw stream.
            self._started = True
            if data[0] & 0x0F != 8 or len(data) > 1 and (data[0] << 8 | data[1]) % 31:
                self._inflate = zlib.decompressobj(-zlib.MAX_WBITS)
        self._started = True
        out: list[bytes] = []
        try:
            while data:
                out.append(self._inflate.decompress(data, _DECOMPRESS_STEP))
                data = self._inflate.unconsumed_tail
        except zlib.error as exc:
            raise NotHttp(f"the answer's {self.encoding} body cannot be inflated ({exc})") from None
        return out

    def end(self) -> list[bytes]:
        if not self._started:
            return []  # an empty body
        if not self._inflate.eof:
            raise NotHttp(f"the answer's {self.encoding} body stops short of its end")
        return []


# --- one connection -------------------------------------------------------------------------


class _Connection(asyncio.Protocol):
    """A connection and the exchange under way on it (one at a time)."""

    __slots__ = ("closed", "exchange", "idle_until", "keep_for", "parser", "served", "transport")

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser: ResponseParser | None = None
        self.exchange: _Exchange | None = None
        self.closed = False
        self.served = 0  # answers read completely on it
        self.idle_until = 0.0  # while idle: not to be used from then on
        self.keep_for: float | None = None  # how long the server says it keeps it idle

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
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

    def begin(self, exchange: _Exchange, parser: ResponseParser, data: bytes) -> None:
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
            self.keep_for = None if hint is None else _idle_timeout(hint)
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


class _StaleConnection(Exception):
    """A kept-alive connection the server had closed: the request is worth one retry."""


class _Exchange:
    __slots__ = ()

    def fail(self, failure: BaseException) -> None:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    headers: dict[str, str]  # lower-case names
    body: bytes


class _WholeAnswer(_Exchange):
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


class StreamedResponse(_Exchange):
    """An answer whose body is read as it arrives: `status` and `headers` first, then
    `async for piece in answer` (or `await answer.read()`). Each wait for the head or a
    piece is bounded by the read timeout."""

    def __init__(self, connection: _Connection, read_timeout: float | None) -> None:
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
    async def _wait(self, timeout: float | None) -> None:
        waiter = self._waiter = asyncio.get_running_loop().create_future()
        try:
            async with asyncio.timeout(timeout):
                await waiter
        finally:
            self._waiter = None

    async def _head(self, timeout: float | None) -> None:
        """Until the answer's head arrived, each wait bounded by `timeout` (a server may
        think before it answers: longer than the silence allowed once it streams)."""
        while self.head is None:
            if self._failure is not None:
                raise self._failure
            await self._wait(timeout)

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
            await self._wait(self._read_timeout)

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


# --- the pool -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PreparedRequest:
    """A request head encoded once: everything but `content-length` and the body."""

    head: bytes


@dataclass(frozen=True, slots=True)
class _Proxy:
    host: str
    port: int
    authorization: str | None  # a Proxy-Authorization value, from the proxy URL's user info
    tls: bool = False  # an https:// proxy URL: TLS to the proxy itself


AddressInfo = aiohappyeyeballs.AddrInfoType  # one answer of `getaddrinfo`


class HostCache:
    """The addresses `getaddrinfo` gave for each (host, port), kept for `ttl_s` seconds.

    Many connections opened at once to a host share one lookup: the first asks, the others
    wait for its answer. A failed lookup is not kept (the next connection asks again), and
    `forget` drops a host whose addresses all refused a connection."""

    def __init__(self, ttl_s: float = DNS_TTL_S) -> None:
        self.ttl_s = ttl_s
        self._answers: dict[tuple[str, int], tuple[float, list[AddressInfo]]] = {}
        self._pending: dict[tuple[str, int], asyncio.Task[list[AddressInfo]]] = {}

    async def addresses(
        self, loop: asyncio.AbstractEventLoop, host: str, port: int
    ) -> list[AddressInfo]:
        key = (host, port)
        kept = self._answers.get(key)
        if kept is not None and kept[0] > loop.time():
            return kept[1]
        lookup = self._pending.get(key)
        if lookup is None:
            lookup = self._pending[key] = loop.create_task(self._look_up(loop, host, port))
        # shielded: a caller that times out does not cancel the lookup the others wait for
        return await asyncio.shield(lookup)

    def forget(self, host: str, port: int) -> None:
        self._answers.pop((host, port), None)

    async def _look_up(
        self, loop: asyncio.AbstractEventLoop, host: str, port: int
    ) -> list[AddressInfo]:
        try:
            answers: list[AddressInfo] = list(
                await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            )
            if not answers:
                raise OSError(f"the name {host!r} has no address")
            self._answers[(host, port)] = (loop.time() + self.ttl_s, answers)
            return answers
        finally:
            del self._pending[(host, port)]


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
        self._proxy = _parse_proxy(proxy) if proxy else None
        self._make_ssl_context = ssl_context or _default_ssl_context
        self._ssl_context: ssl.SSLContext | None = None
        self.max_connections = max_connections
        self.keepalive_s = keepalive_s
        self.max_head = max_head
        self.max_body = max_body
        self._idle: deque[_Connection] = deque()  # oldest first
        self._waiters: deque[asyncio.Future[_Connection | None]] = deque()
        self._open = 0  # connections open or opening, busy or idle
        self._sweeper: asyncio.TimerHandle | None = None
        self._closed = False
        self.loop: asyncio.AbstractEventLoop | None = None
        self.connections_made = 0
        self.host_cache = HostCache(dns_ttl_s)  # the origin's (or the proxy's) addresses

    def prepare(self, method: str, path: str, headers: dict[str, str]) -> PreparedRequest:
        """Encode a request head once; raises ValueError for a header that would break it."""
        target = path or "/"
        if self._proxy is not None and not self.tls:
            target = self._origin_prefix + target  # absolute form, for the proxy
        lines = [f"{method} {target} HTTP/1.1", f"host: {self.authority}"]
        fields = {"accept-encoding": "gzip, deflate", **headers}
        if self._proxy is not None and not self.tls and self._proxy.authorization:
            fields["proxy-authorization"] = self._proxy.authorization
        for name, value in fields.items():
            if not name or any(c in name for c in " :\r\n\t") or any(c in value for c in "\r\n\0"):
                raise ValueError(f"the header {name!r} holds a character HTTP forbids there")
            lines.append(f"{name}: {value}")
        try:
            return PreparedRequest(("\r\n".join(lines) + "\r\n").encode("latin-1"))
        except UnicodeEncodeError:
            raise ValueError("a request header holds a character outside Latin-1") from None

    # --- requests ---

    async def fetch(self, request: PreparedRequest, body: bytes, *, timeout: float) -> Response:
        """Send one request and read its whole answer, all within `timeout` seconds.

        A request that fails on a REUSED connection before any byte of the answer arrived
        is sent once more on a new connection: the server closed that idle connection while
        the request was on its way (a close and a request cross on the wire), so it never
        saw the request. A fresh connection that fails the same way is not retried."""
        loop = self._bind()
        deadline = loop.time() + timeout
        data = request.head + b"content-length: %d\r\n\r\n" % len(body) + body
        connection = self._take_idle(loop) or await self._acquire(deadline)
        try:
            return await self._exchange(connection, data, deadline)
        except _StaleConnection:
            pass
        return await self._exchange(await self._open_in_slot(deadline), data, deadline)

    def stream(
        self,
        request: PreparedRequest,
        body: bytes,
        *,
        connect_timeout: float | None,
        read_timeout: float | None,
        head_timeout: float | None = None,
    ) -> _StreamContext:
        """`async with pool.stream(...) as answer:` the answer once its head arrived; its body
        is read with `async for piece in answer`. Connecting (and waiting for a free
        connection) is bounded by `connect_timeout`, the wait for the head by `head_timeout`
        (default: `read_timeout`), every wait for body bytes by `read_timeout`."""
        data = request.head + b"content-length: %d\r\n\r\n" % len(body) + body
        head = read_timeout if head_timeout is None else head_timeout
        return _StreamContext(self, data, connect_timeout, read_timeout, head)

    async def aclose(self) -> None:
        self._closed = True
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        while self._idle:
            self._idle.pop().close()
            self._open -= 1
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_exception(CannotConnect("the connection pool was closed"))

    # --- internals ---

    def _bind(self) -> asyncio.AbstractEventLoop:
        loop = asyncio.get_running_loop()
        if self.loop is None:
            self.loop = loop
        elif self.loop is not loop:
            raise RuntimeError("a connection pool serves the event loop that first used it")
        if self._closed:
            raise CannotConnect("the connection pool was closed")
        return loop

    async def _exchange(self, connection: _Connection, data: bytes, deadline: float) -> Response:
        loop = self.loop
        assert loop is not None
        future: asyncio.Future[Response] = loop.create_future()
        answer = _WholeAnswer(future)
        parser = ResponseParser(answer, max_head=self.max_head, max_body=self.max_body)
        timer = loop.call_at(deadline, _time_out, connection, future)
        try:
            self._send(connection, answer, parser, data)
            response = await future
        except BaseException as failure:
            self._after_failure(connection, failure)
            raise
        finally:
            timer.cancel()
        if response.status == 408 and connection.served:
            self._timed_out_idle(connection)
        if connection.end():
            self._release(connection)
        else:
            self._discard(connection)
        return response

    @staticmethod
    def _send(
        connection: _Connection, exchange: _Exchange, parser: ResponseParser, data: bytes
    ) -> None:
        if connection.alive:
            connection.begin(exchange, parser, data)
        else:  # the server closed it between being picked and now
            connection.exchange = exchange
            connection.parser = parser
            connection.connection_lost(None)

    def _timed_out_idle(self, connection: _Connection) -> None:
        """A 408 on a REUSED connection is the server's idle timeout, sent as the request
        crossed it on the wire (Node, HAProxy and proxies answer an idle connection so before
        closing it): the request was never read, so it is sent once more on a new
        connection (`_StaleConnection`), as for a close that crossed it."""
        connection.exchange = None
        connection.parser = None
        connection.close()
        raise _StaleConnection

    def _after_failure(self, connection: _Connection, failure: BaseException) -> None:
        """Drop a connection whose exchange failed. One that had served answers before and
        broke before any byte of this answer is stale (see `fetch`): its slot is kept for
        the one retry, which `_StaleConnection` asks for."""
        connection.exchange = None
        connection.parser = None
        if isinstance(failure, ConnectionBroke) and failure.before_answer and connection.served:
            connection.close()
            raise _StaleConnection from failure
        self._discard(connection)

    def _take_idle(self, loop: asyncio.AbstractEventLoop) -> _Connection | None:
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

    async def _acquire(self, deadline: float | None) -> _Connection:
        """A connection for one request: an idle one, a new one, or one handed back."""
        assert self.loop is not None
        connection = self._take_idle(self.loop)
        if connection is not None:
            return connection
        if self.max_connections and self._open >= self.max_connections:
            waiter: asyncio.Future[_Connection | None] = self.loop.create_future()
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

    async def _open_in_slot(self, deadline: float | None) -> _Connection:
        """A new connection in a slot already counted in `_open` (freed if it fails)."""
        try:
            return await self._connect(deadline)
        except BaseException:
            self._free_slot()
            raise

    def _release(self, connection: _Connection) -> None:
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

    def _discard(self, connection: _Connection) -> None:
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

    def _ssl(self) -> ssl.SSLContext:
        if self._ssl_context is None:
            self._ssl_context = self._make_ssl_context()
        return self._ssl_context

    async def _connect(self, deadline: float | None) -> _Connection:
        loop = self.loop
        assert loop is not None
        proxy = self._proxy
        host, port = (proxy.host, proxy.port) if proxy else (self.host, self.port)
        # the first TLS handshake: with the origin, or with an https:// proxy
        first_tls = proxy.tls if proxy is not None else self.tls
        tls_peer = f"the proxy {host}:{port}" if proxy is not None else f"{host}:{port}"
        try:
            async with asyncio.timeout_at(deadline):
                addresses = await self.host_cache.addresses(loop, host, port)
                try:
                    # a host with IPv6 and IPv4 addresses: the next address is tried after
                    # 250 ms, not after a dead route's whole timeout (RFC 8305), as asyncio's
                    # own `create_connection` does when it looks the host up itself
                    sock = await aiohappyeyeballs.start_connection(
                        addresses, happy_eyeballs_delay=HAPPY_EYEBALLS_S, loop=loop
                    )
                except OSError:
                    self.host_cache.forget(host, port)  # perhaps moved: look it up again
                    raise
                transport, connection = await loop.create_connection(
                    _Connection,
                    sock=sock,
                    ssl=self._ssl() if first_tls else None,
                    server_hostname=host if first_tls else None,
                )
                if self.tls and proxy is not None:
                    tls_peer = f"{self.host}:{self.port}"
                    await self._tunnel(connection, proxy)
                    # through an https:// proxy this is TLS inside TLS (asyncio can since 3.11)
                    tls_transport = await loop.start_tls(
                        transport, connection, self._ssl(), server_hostname=self.host
                    )
                    if tls_transport is None:
                        raise CannotConnect("the TLS connection through the proxy closed")
                    connection.transport = tls_transport
        except (ssl.SSLError, ssl.CertificateError) as exc:
            if _plain_http_answer(exc):
                raise TlsFailure(
                    f"{tls_peer}: the server does not speak TLS on this port (it answered "
                    f"in plain text): the base URL must start with http://"
                ) from None
            raise TlsFailure(f"{tls_peer}: {exc}") from None
        except ConnectionBroke as exc:
            raise CannotConnect(f"the proxy {host}:{port} closed the tunnel: {exc}") from None
        except TimeoutError:  # an OSError too: asyncio's would read "(TimeoutError)"
            raise CannotConnect(f"{host}:{port} (no connection within the timeout)") from None
        except socket.gaierror as exc:
            raise CannotConnect(f"{host}:{port} ({exc.strerror or exc})") from None
        except OSError as exc:
            # asyncio words a refusal "Connect call failed (address)": say what the OS says
            reason = os.strerror(exc.errno) if exc.errno else str(exc) or type(exc).__name__
            raise CannotConnect(f"{host}:{port} ({reason})") from None
        self.connections_made += 1
        return connection

    async def _tunnel(self, connection: _Connection, proxy: _Proxy) -> None:
        """Ask an HTTP proxy for a tunnel to the origin (CONNECT); TLS then runs inside it."""
        loop = self.loop
        assert loop is not None
        lines = [f"CONNECT {self.host}:{self.port} HTTP/1.1", f"host: {self.host}:{self.port}"]
        if proxy.authorization:
            lines.append(f"proxy-authorization: {proxy.authorization}")
        future: asyncio.Future[Response] = loop.create_future()
        answer = _WholeAnswer(future)
        parser = ResponseParser(answer, no_body=True, max_head=self.max_head)
        connection.begin(answer, parser, ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        try:
            response = await future
        except BaseException:
            connection.close()
            raise
        connection.exchange = None
        connection.parser = None
        if not 200 <= response.status < 300 or parser.extra:
            connection.close()
            raise CannotConnect(
                f"the proxy {proxy.host}:{proxy.port} refused a tunnel to "
                f"{self.host}:{self.port}: HTTP {response.status}"
            )


def _idle_timeout(hint: str) -> float | None:
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


def _plain_http_answer(error: Exception) -> bool:
    """Whether a TLS handshake failed because plain text came back (OpenSSL reads an HTTP
    status line as a record of an unknown version)."""
    reason = str(getattr(error, "reason", "") or error).upper()
    return any(mark in reason for mark in ("WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE"))


def _time_out(connection: _Connection, future: asyncio.Future[Response]) -> None:
    if not future.done():
        connection.exchange = None
        connection.close()
        future.set_exception(TimeoutError())


class _StreamContext:
    def __init__(
        self,
        pool: ConnectionPool,
        data: bytes,
        connect_timeout: float | None,
        read_timeout: float | None,
        head_timeout: float | None,
    ) -> None:
        self._pool = pool
        self._data = data
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._head_timeout = head_timeout
        self._answer: StreamedResponse | None = None

    async def __aenter__(self) -> StreamedResponse:
        pool = self._pool
        loop = pool._bind()
        deadline = None if self._connect_timeout is None else loop.time() + self._connect_timeout
        connection = pool._take_idle(loop) or await pool._acquire(deadline)
        try:
            return await self._send(connection)
        except _StaleConnection:
            pass
        # as in `fetch`: the server closed this kept-alive connection meanwhile; once more
        return await self._send(await pool._open_in_slot(deadline))

    async def _send(self, connection: _Connection) -> StreamedResponse:
        pool = self._pool
        answer = StreamedResponse(connection, self._read_timeout)
        parser = ResponseParser(answer, max_head=pool.max_head, max_body=None)
        try:
            pool._send(connection, answer, parser, self._data)
            await answer._head(self._head_timeout)
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


def _default_ssl_context() -> ssl.SSLContext:
    """The system's trust store (honouring SSL_CERT_FILE / SSL_CERT_DIR), hostname checked."""
    context = ssl.create_default_context()
    context.set_alpn_protocols(["http/1.1"])
    return context


def _parse_proxy(url: str) -> _Proxy:
    parts = urlsplit(url if "://" in url else f"http://{url}")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            f"the proxy {url!r} is not an http:// or https:// proxy URL with a host "
            "(SOCKS proxies are not supported)"
        )
    authorization = None
    if parts.username is not None:
        credentials = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        authorization = "Basic " + base64.b64encode(credentials.encode()).decode("ascii")
    tls = parts.scheme == "https"
    return _Proxy(parts.hostname, parts.port or (443 if tls else 80), authorization, tls)

"""One HTTP/1.x answer read from bytes arriving in pieces of any size, on llhttp.

llhttp (Node's parser, through `httptools`, which uvicorn uses) does the framing: status
line, header lines, content-length, chunked bodies and their trailers, read-until-close,
1xx interim answers. It is fuzzed by its own community, which a hand-written parser here
was not. What this module adds is the client's policy: limits on head and body size,
gzip/deflate content-encoding inflated in bounded steps, keep-alive decided from the version
and `connection` header, and every failure worded for a person (`NotHttp`, `AnswerTooLarge`,
`ConnectionBroke`). It needs no I/O, so it is tested on any split of the bytes.

It imports neither `typing` nor `dataclasses`: the trace export helper, which starts
without them, reads its collector's answers with it too (`net.blocking`).
"""

from __future__ import annotations

import zlib

import httptools

from openprose.net.errors import AnswerTooLarge, ConnectionBroke, NotHttp

TYPE_CHECKING = False  # `typing` is not imported at run time (see above)
if TYPE_CHECKING:
    from typing import Protocol

    class ResponseSink(Protocol):
        def on_head(self, head: ResponseHead) -> None: ...

        def on_body(self, piece: bytes) -> None: ...

        def on_end(self) -> None: ...


__all__ = [
    "MAX_BODY_BYTES",
    "MAX_HEAD_BYTES",
    "ResponseHead",
    "ResponseParser",
]

MAX_HEAD_BYTES = 64 * 1024  # status line and headers (and a chunked body's trailers)
MAX_BODY_BYTES = 64 * 1024 * 1024  # a whole answer, after decompression
# Framing a chunked body may add beyond its data: a chunk-size line with extensions. More
# than this per chunk (beyond one head's worth of trailers) is a flood, not an answer.
CHUNK_FRAMING_BYTES = 1024
_DECOMPRESS_STEP = 256 * 1024  # inflate at most this much per call (a zip bomb stops early)
_NO_BODY_STATUSES = frozenset({204, 304})
# The first bytes of a TLS record: an alert (0x15) or a handshake (0x16), version 3.x.
_TLS_RECORDS = (b"\x15\x03", b"\x16\x03")


class ResponseHead:
    """An answer's status line and headers (a plain class: see the module's docstring)."""

    __slots__ = ("headers", "keep_alive", "reason", "status")

    def __init__(self, status: int, reason: str, headers: dict[str, str], keep_alive: bool) -> None:
        self.status = status
        self.reason = reason
        self.headers = headers  # lower-case names; repeated headers joined with ", "
        self.keep_alive = keep_alive  # the connection may serve another request after this

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ResponseHead) and (
            (self.status, self.reason, self.headers, self.keep_alive)
            == (other.status, other.reason, other.headers, other.keep_alive)
        )

    __hash__ = None  # type: ignore[assignment]  # mutable headers: not hashable

    def __repr__(self) -> str:
        return (
            f"ResponseHead(status={self.status!r}, reason={self.reason!r}, "
            f"headers={self.headers!r}, keep_alive={self.keep_alive!r})"
        )


class _HeadOnly(Exception):
    """Raised inside llhttp's callback to stop at a head that has no body after it."""


class ResponseParser:
    """`feed` each piece as it arrives and `feed_eof` when the connection closes; the sink
    gets the head (after any 1xx answers, which are skipped), the body in pieces
    (decompressed), and the end. Raises `NotHttp`, `AnswerTooLarge` or `ConnectionBroke`.
    `extra` is True when bytes arrived after the end (a server that sends them cannot be
    trusted with another request).

    The `on_*` methods without a leading underscore are llhttp's callbacks (httptools finds
    them by name); they are not for callers."""

    __slots__ = (
        "_body_bytes",
        "_chunks",
        "_decoder",
        "_first",
        "_head_bytes",
        "_head_data",
        "_headers",
        "_left",
        "_llhttp",
        "_no_body",
        "_reason",
        "_sink",
        "_until_close",
        "_wire_body",
        "_wire_bytes",
        "done",
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
        self._llhttp: httptools.HttpResponseParser | None = httptools.HttpResponseParser(self)
        # Bare LF line breaks are accepted, as most clients do; nothing else is relaxed.
        self._llhttp.set_dangerous_leniencies(lenient_optional_cr_before_lf=True)
        self._headers: dict[str, str] = {}
        self._reason = ""
        self._first = b""  # the answer's first bytes, to say what came instead of HTTP
        self._head_data = b""  # a CONNECT answer's bytes (see `no_body`)
        self._head_bytes = 0  # bytes fed before the (final) head was complete
        self._wire_bytes = 0  # bytes fed after it
        self._wire_body = 0  # body bytes among them, before decompression
        self._chunks = 0
        self._left = -1  # bytes of a content-length body still to come (-1: no length)
        self._until_close = False
        self._body_bytes = 0
        self._decoder: _Decoder | None = None
        self.head: ResponseHead | None = None
        self.started = False  # any byte of the answer arrived
        self.done = False
        self.extra = False

    def feed(self, data: bytes) -> None:
        if not data:
            return
        if self.done:
            self.extra = True
            return
        if not self.started:
            self.started = True
            self._first = data[:80]
        elif len(self._first) < 80:
            self._first += data[: 80 - len(self._first)]
        if self.head is None:
            if self._no_body:
                self._head_data += data  # to tell where a body-less head ends
            if len(data) <= self.max_head - self._head_bytes:  # within the head's allowance
                self._head_bytes += len(data)
                self._feed(data)
            else:
                self._feed_head(data)
        else:
            self._wire_bytes += len(data)
            self._feed(data)
            if self._wire_bytes > self._framing_allowance():
                raise AnswerTooLarge(
                    f"the answer's chunk framing and trailers are over {self.max_head} bytes"
                )

    def feed_eof(self) -> None:
        """The connection closed: the end of a read-until-close body, else an answer cut off."""
        self._llhttp = None  # nothing more can arrive (and see `_feed`)
        if self.done:
            return
        if self._until_close:
            self._finish()
            return
        if not self.started:
            raise ConnectionBroke(
                "the server closed the connection without answering", before_answer=True
            )
        if self.head is None:
            raise ConnectionBroke("the connection closed in the middle of the answer's headers")
        raise ConnectionBroke(
            "the connection closed before the whole answer body arrived"
            + (f" ({self._left} of its bytes missing)" if self._left > 0 else "")
        )

    # --- feeding llhttp ---

    def _feed_head(self, data: bytes) -> None:
        """Feed no more than the head's allowance (which `data` is over) until the head is
        complete, so a head that never ends is refused at its limit, not held whole."""
        allowance = self.max_head - self._head_bytes
        self._head_bytes += allowance
        self._feed(data[:allowance])
        if self.head is None and not self.done:
            raise AnswerTooLarge(f"the answer's headers are over {self.max_head} bytes")
        self.feed(data[allowance:])

    def _feed(self, data: bytes) -> None:
        """`data` through llhttp, its failures said in words (after one, nothing more is
        parsed)."""
        llhttp = self._llhttp
        if llhttp is None:  # a failure was raised before: nothing more is parsed
            raise NotHttp("the answer was refused already")
        try:
            llhttp.feed_data(data)
        except (httptools.HttpParserError, httptools.HttpParserUpgrade) as error:
            self._llhttp = None
            self._failed(error)
        except BaseException:
            self._llhttp = None
            raise
        if self.done:
            # llhttp's object holds our methods and we hold it: let go at the end, so both
            # are freed by reference counting, not left to the cyclic garbage collector
            self._llhttp = None

    def _failed(self, error: httptools.HttpParserError | httptools.HttpParserUpgrade) -> None:
        """What llhttp raised, said in words; returns when it was no failure (a head
        without a body, bytes after the end)."""
        if isinstance(error, httptools.HttpParserCallbackError):
            # one of the callbacks below raised: httptools keeps it as the context
            raised = error.__context__
            if isinstance(raised, _HeadOnly):
                self.extra = _blank_line(self._head_data) < len(self._head_data)
                return
            if isinstance(raised, Exception):  # ours (NotHttp, AnswerTooLarge) or a sink's
                raise raised from None
            raise self._failure(str(error)) from None
        if isinstance(error, httptools.HttpParserUpgrade):
            raise NotHttp("the server switched protocols, which was not asked for") from None
        if self.done:  # bytes after the end: not parsed, only noted
            self.extra = True
            return
        raise self._failure(str(error)) from None

    def _framing_allowance(self) -> int:
        """What may arrive after the head: the body's own bytes, one head's worth of
        trailers, and a chunk-size line per chunk."""
        return self._wire_body + self.max_head + CHUNK_FRAMING_BYTES * self._chunks

    # --- llhttp's callbacks ---

    def on_status(self, reason: bytes) -> None:
        self._reason += reason.decode("latin-1")

    def on_header(self, name: bytes, value: bytes) -> None:
        key = name.decode("latin-1").lower()
        text = value.decode("latin-1").rstrip(" \t")
        headers = self._headers
        headers[key] = f"{headers[key]}, {text}" if key in headers else text

    def on_headers_complete(self) -> None:
        llhttp = self._llhttp
        assert llhttp is not None  # called from inside it
        status = llhttp.get_status_code()
        headers, self._headers = self._headers, {}
        reason, self._reason = self._reason, ""
        if 100 <= status < 200:
            if status == 101:
                raise NotHttp("the server switched protocols (HTTP 101), which was not asked for")
            return  # an interim answer (100 Continue, 103 Early Hints): the real one follows
        tokens = headers.get("connection", "").lower()
        if llhttp.get_http_version() == "1.1":
            keep_alive = "close" not in tokens
        else:
            keep_alive = "keep-alive" in tokens
        head = self.head = ResponseHead(status, reason, headers, keep_alive)
        self._sink.on_head(head)
        encoding = headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("identity", ""):
            self._decoder = _Decoder(encoding)
        if self._no_body and 200 <= status < 300:
            self._finish()
            raise _HeadOnly
        if status in _NO_BODY_STATUSES:
            return  # llhttp knows these have no body; its end follows
        transfer = headers.get("transfer-encoding")
        if transfer is not None:
            codings = [c.strip().lower() for c in transfer.split(",") if c.strip()]
            if codings != ["chunked"]:
                raise NotHttp(f"transfer-encoding {transfer!r} is not supported")
            return
        length = headers.get("content-length")
        if length is None:
            self._until_close = True
            return
        self._left = int(length)  # llhttp has checked it is one number
        if self.max_body is not None and self._left > self.max_body and self._decoder is None:
            raise AnswerTooLarge(
                f"the answer's body is {self._left} bytes, over the {self.max_body} byte limit"
            )

    def on_chunk_header(self) -> None:
        self._chunks += 1

    def on_body(self, piece: bytes) -> None:
        self._wire_body += len(piece)
        if self._left > 0:
            self._left -= len(piece)
        if self._decoder is not None:
            for out in self._decoder.decode(piece):
                self._deliver(out)
        else:
            self._deliver(piece)

    def on_message_complete(self) -> None:
        if self.head is None:
            return  # the end of an interim answer
        if self.done:
            self.extra = True  # a second answer nobody asked for
            return
        self._finish()

    # --- internals ---

    def _deliver(self, piece: bytes) -> None:
        if not piece:
            return
        self._body_bytes += len(piece)
        if self.max_body is not None and self._body_bytes > self.max_body:
            raise AnswerTooLarge(f"the answer's body is over the {self.max_body} byte limit")
        self._sink.on_body(piece)

    def _finish(self) -> None:
        if self._decoder is not None:
            self._decoder.end()
        self.done = True
        self._sink.on_end()

    def _failure(self, reason: str) -> NotHttp:
        """llhttp's reason, said in terms of the part of the answer that was wrong."""
        if self.head is None and not _could_be_http(self._first):
            return _not_http(self._first)
        lowered = reason.lower()
        if "content-length" in lowered:
            return NotHttp(f"the answer's content-length is not one byte count ({reason})")
        if "chunk" in lowered:
            return NotHttp(f"the chunked body is malformed ({reason})")
        if self.head is None and ("header" in lowered or "value" in lowered):
            return NotHttp(f"a header line of the answer is malformed ({reason})")
        if self.head is None:
            line = self._first.split(b"\n", 1)[0]
            return NotHttp(f"the server's answer is not HTTP/1.x: {_quoted(line)} ({reason})")
        return NotHttp(f"the answer is malformed ({reason})")


def _blank_line(data: bytes) -> int:
    """Where the bytes after a head's blank line start (len(data) when there are none)."""
    crlf, lf = data.find(b"\r\n\r\n"), data.find(b"\n\n")
    ends = [i + 4 for i in (crlf,) if i >= 0] + [i + 2 for i in (lf,) if i >= 0]
    return min(ends, default=len(data))


def _could_be_http(data: bytes) -> bool:
    """Whether an answer's first bytes may yet be an HTTP answer."""
    start = data[:5]
    return b"HTTP/".startswith(start) or start == b"HTTP/"


def _not_http(data: bytes) -> NotHttp:
    """What the server sent instead of HTTP; TLS named as such (an http:// URL to a port
    that speaks TLS gets a TLS alert back)."""
    if data.startswith(_TLS_RECORDS):
        return NotHttp(
            "the server answered in TLS, not plain HTTP: the base URL must start with https://"
        )
    return NotHttp(f"the server's answer does not start like HTTP: {_quoted(data)}")


def _quoted(data: bytes) -> str:
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
        if not self._started and self.encoding == "deflate" and data and _raw_deflate(data):
            # "deflate" should be zlib-wrapped; some servers send the raw stream.
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

    def end(self) -> None:
        if self._started and not self._inflate.eof:
            raise NotHttp(f"the answer's {self.encoding} body stops short of its end")


def _raw_deflate(data: bytes) -> bool:
    """Whether a deflate body lacks the zlib header (method 8, header checksum)."""
    return data[0] & 0x0F != 8 or len(data) > 1 and (data[0] << 8 | data[1]) % 31 != 0

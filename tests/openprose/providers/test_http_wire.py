"""The providers' HTTP/1.1 client (`http_wire`) against raw loopback servers the tests start,
which write exactly the bytes each test chooses: framing, encodings, keep-alive, failures,
TLS, proxies; and the response parser on any split of the bytes (hypothesis)."""

from __future__ import annotations

import asyncio
import gzip
import shutil
import socket
import ssl
import subprocess
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openprose.providers import (
    Provider,
    ProviderSettings,
    RetryPolicy,
    open_provider,
    stream_text_to,
)
from openprose.providers import http_wire as wire
from openprose.providers.base import (
    Message,
    ModelRequest,
    ProviderConfigError,
    ProviderError,
    TransientProviderError,
)
from openprose.providers.http_wire import (
    AnswerTooLarge,
    CannotConnect,
    ConnectionBroke,
    ConnectionPool,
    HttpFailure,
    NotHttp,
    ResponseHead,
    ResponseParser,
    TlsFailure,
)
from tests.support.raw_http_server import (
    LoopbackServer,
    RawHttpServer,
    RawRequest,
    Respond,
    answer,
)

HEADERS = {"content-type": "application/json", "authorization": "Bearer k"}


def respond_with(*replies: bytes, keep: bool = True):  # type: ignore[no-untyped-def]
    """A server that answers its n-th request with replies[n] (the last one repeats)."""
    count = 0

    async def respond(request: RawRequest) -> bool:
        nonlocal count
        request.writer.write(replies[min(count, len(replies) - 1)])
        count += 1
        return keep

    return respond


async def fetch(pool: ConnectionPool, body: bytes = b"{}", timeout: float = 5.0) -> wire.Response:
    request = pool.prepare("POST", "/v1/chat/completions", HEADERS)
    return await pool.fetch(request, body, timeout=timeout)


async def fetch_from(server: RawHttpServer, **options: object) -> wire.Response:
    pool = ConnectionPool(server.url, **options)  # type: ignore[arg-type]
    try:
        return await fetch(pool)
    finally:
        await pool.aclose()


# --- what is sent -------------------------------------------------------------------------


async def test_one_request_is_sent_with_its_head_encoded_once() -> None:
    async with RawHttpServer(respond_with(answer(b'{"ok": 1}'))) as server:
        response = await fetch_from(server)
    assert (response.status, response.body) == (200, b'{"ok": 1}')
    sent = server.requests[0]
    assert sent.request_line == "POST /v1/chat/completions HTTP/1.1"
    assert sent.header("host") == f"127.0.0.1:{server.port}"  # a port that is not the default
    assert sent.header("accept-encoding") == "gzip, deflate"
    assert sent.header("authorization") == "Bearer k"
    assert sent.header("content-length") == "2" and sent.body == b"{}"


def test_the_host_header_leaves_out_a_default_port() -> None:
    assert ConnectionPool("https://api.example.com").authority == "api.example.com"
    assert ConnectionPool("http://api.example.com:80").authority == "api.example.com"
    assert ConnectionPool("http://api.example.com:8080").authority == "api.example.com:8080"
    assert ConnectionPool("http://[::1]:8080").authority == "[::1]:8080"


@pytest.mark.parametrize("value", ["key\r\nx-injected: 1", "key\n", "k\0"])
def test_a_header_that_would_break_the_request_is_refused(value: str) -> None:
    with pytest.raises(ValueError, match="authorization"):
        ConnectionPool("http://127.0.0.1").prepare("POST", "/", {"authorization": value})


# --- framing and encodings ------------------------------------------------------------------


async def test_a_chunked_body_with_extensions_and_trailers() -> None:
    reply = (
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
        b"5;name=value\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nx-trailer: 1\r\n\r\n"
    )
    async with RawHttpServer(respond_with(reply)) as server:
        pool = ConnectionPool(server.url)
        first = await fetch(pool)
        second = await fetch(pool)  # the chunked end left the connection usable
        await pool.aclose()
    assert first.body == second.body == b"hello world"
    assert server.connections == 1


@pytest.mark.parametrize(
    ("encoding", "compress"),
    [
        ("gzip", gzip.compress),
        ("deflate", zlib.compress),
        # "deflate" is meant zlib-wrapped; some servers send the raw stream
        (
            "deflate",
            lambda data: zlib.compress(data, wbits=-15),
        ),
    ],
)
async def test_a_compressed_body_is_inflated(encoding: str, compress: object) -> None:
    text = b'{"answer": "' + b"many words " * 500 + b'"}'
    packed = compress(text)  # type: ignore[operator]
    reply = answer(packed, headers=f"content-encoding: {encoding}\r\n")
    async with RawHttpServer(respond_with(reply)) as server:
        response = await fetch_from(server)
    assert response.body == text


async def test_a_chunked_gzip_body_is_inflated_as_it_arrives() -> None:
    packed = gzip.compress(b"data: one\n\ndata: two\n\n")
    chunks = b"".join(
        b"%x\r\n%s\r\n" % (len(packed[i : i + 7]), packed[i : i + 7])
        for i in range(0, len(packed), 7)
    )
    reply = (
        b"HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ntransfer-encoding: chunked\r\n\r\n"
        + chunks
        + b"0\r\n\r\n"
    )
    async with RawHttpServer(respond_with(reply)) as server:
        response = await fetch_from(server)
    assert response.body == b"data: one\n\ndata: two\n\n"


async def test_a_body_that_runs_until_the_server_closes() -> None:
    async with RawHttpServer(
        respond_with(b"HTTP/1.1 200 OK\r\n\r\nall of it", keep=False)
    ) as server:
        pool = ConnectionPool(server.url)
        assert (await fetch(pool)).body == b"all of it"
        assert (await fetch(pool)).body == b"all of it"  # that connection was not reused
        await pool.aclose()
    assert server.connections == 2


async def test_interim_1xx_answers_are_skipped() -> None:
    reply = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: x\r\n\r\n" + answer(
        b"real"
    )
    async with RawHttpServer(respond_with(reply)) as server:
        response = await fetch_from(server)
    assert (response.status, response.body) == (200, b"real")


async def test_an_error_status_comes_back_with_its_headers_and_body() -> None:
    reply = answer(
        b"<html>busy</html>", status="429 Too Many Requests", headers="Retry-After: 3\r\n"
    )
    async with RawHttpServer(respond_with(reply)) as server:
        response = await fetch_from(server)
    assert response.status == 429
    assert response.headers["retry-after"] == "3"  # names are lower-cased
    assert response.body == b"<html>busy</html>"


# --- connections --------------------------------------------------------------------------


async def test_keep_alive_reuses_one_connection_and_the_cap_bounds_them() -> None:
    in_flight = peak = 0

    async def respond(request: RawRequest) -> bool:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.02)
        in_flight -= 1
        request.writer.write(answer(b"ok"))
        return True

    async with RawHttpServer(respond) as server:
        pool = ConnectionPool(server.url, max_connections=3)
        for _ in range(5):
            await fetch(pool)
        assert server.connections == 1
        answers = await asyncio.gather(*(fetch(pool) for _ in range(20)))
        await pool.aclose()
    assert [a.body for a in answers] == [b"ok"] * 20
    assert server.connections <= 3 and peak == 3


async def test_connection_close_is_honoured() -> None:
    reply = answer(b"ok", headers="connection: close\r\n")
    async with RawHttpServer(respond_with(reply)) as server:  # the server keeps it open
        pool = ConnectionPool(server.url)
        await fetch(pool)
        await fetch(pool)
        await pool.aclose()
    assert server.connections == 2


async def test_an_idle_connection_is_dropped_after_the_keep_alive_time() -> None:
    async with RawHttpServer(respond_with(answer())) as server:
        pool = ConnectionPool(server.url, keepalive_s=0.1)
        await fetch(pool)
        await asyncio.sleep(0.25)
        assert not pool._idle and pool._open == 0  # swept
        await fetch(pool)
        await pool.aclose()
    assert server.connections == 2


async def test_the_servers_keep_alive_timeout_shortens_the_idle_time() -> None:
    reply = answer(headers="keep-alive: timeout=1.3, max=100\r\n")  # kept idle 0.3 s here
    async with RawHttpServer(respond_with(reply)) as server:
        pool = ConnectionPool(server.url)
        await fetch(pool)
        await fetch(pool)  # at once: the same connection
        assert server.connections == 1
        await asyncio.sleep(0.5)
        assert not pool._idle  # swept before the server would drop it
        await fetch(pool)
        await pool.aclose()
    assert server.connections == 2
    async with RawHttpServer(respond_with(answer(headers="keep-alive: timeout=1\r\n"))) as server:
        pool = ConnectionPool(server.url)
        await fetch(pool)
        await fetch(pool)  # a server keeping idle connections 1 s or less: none is kept
        await pool.aclose()
    assert server.connections == 2


async def test_a_kept_connection_the_server_closed_meanwhile_is_retried_once_fresh() -> None:
    async def respond(request: RawRequest) -> bool:
        if request.connection == 1 and request.number == 2:
            return False  # closes without answering: it had closed as the request came
        request.writer.write(answer(b"fine"))
        return True

    async with RawHttpServer(respond) as server:
        pool = ConnectionPool(server.url)
        await fetch(pool)
        response = await fetch(pool)
        await pool.aclose()
    assert response.body == b"fine"
    assert server.connections == 2 and len(server.requests) == 3


async def test_a_fresh_connection_that_breaks_is_not_retried() -> None:
    async with RawHttpServer(respond_with(b"", keep=False)) as server:
        with pytest.raises(ConnectionBroke, match="closed the connection without answering"):
            await fetch_from(server)
    assert len(server.requests) == 1


async def test_a_kept_connection_that_breaks_mid_answer_is_not_retried() -> None:
    async def respond(request: RawRequest) -> bool:
        if request.number == 2:
            request.writer.write(b"HTTP/1.1 200 OK\r\ncontent-len")
            return False
        request.writer.write(answer())
        return True

    async with RawHttpServer(respond) as server:
        pool = ConnectionPool(server.url)
        await fetch(pool)
        with pytest.raises(ConnectionBroke, match="middle of the answer's headers"):
            await fetch(pool)
        await pool.aclose()
    assert len(server.requests) == 2  # the server may have acted on it: not sent again


async def test_a_refused_connection_says_where() -> None:
    async with RawHttpServer(respond_with(answer())) as server:
        url = server.url
    with pytest.raises(CannotConnect, match=r"127\.0\.0\.1:\d+ \(.*refused"):
        await fetch(ConnectionPool(url))


# --- broken answers -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "failure", "message"),
    [
        (
            b'HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n{"cut',
            ConnectionBroke,
            "95 of its bytes missing",
        ),
        (b"SSH-2.0-OpenSSH_9.6\r\n", NotHttp, "does not start like HTTP"),
        (b"HTTP/1.1 2OO OK\r\n\r\n", NotHttp, "not HTTP/1.x"),
        (
            b"HTTP/1.1 200 OK\r\nbad header line\r\n\r\n",
            NotHttp,
            "header line of the answer is malformed",
        ),
        (
            b"HTTP/1.1 200 OK\r\ncontent-length: 2, 3\r\n\r\nok",
            NotHttp,
            "conflicting content-length",
        ),
        (
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
            NotHttp,
            "not a hex number",
        ),
        (
            b"HTTP/1.1 200 OK\r\ncontent-encoding: br\r\ncontent-length: 1\r\n\r\nx",
            NotHttp,
            "'br' is not supported",
        ),
        (
            b"HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ncontent-length: 4\r\n\r\nnope",
            NotHttp,
            "cannot be inflated",
        ),
        (
            b"HTTP/1.1 200 OK\r\nx-big: " + b"a" * 70_000 + b"\r\n\r\n",
            AnswerTooLarge,
            "headers are over 65536",
        ),
    ],
)
async def test_a_broken_answer_is_a_clear_failure(
    reply: bytes, failure: type[HttpFailure], message: str
) -> None:
    async with RawHttpServer(respond_with(reply, keep=False)) as server:
        with pytest.raises(failure, match=message):
            await fetch_from(server)


async def test_a_body_over_the_limit_is_refused() -> None:
    async with RawHttpServer(respond_with(answer(b"x" * 2000))) as server:
        with pytest.raises(AnswerTooLarge, match="2000 bytes, over the 1000 byte limit"):
            await fetch_from(server, max_body=1000)
    bomb = gzip.compress(b"\0" * 5_000_000)
    async with RawHttpServer(
        respond_with(answer(bomb, headers="content-encoding: gzip\r\n"))
    ) as server:
        with pytest.raises(AnswerTooLarge, match="over the 1000000 byte limit"):
            await fetch_from(server, max_body=1_000_000)


async def test_a_silent_server_times_out_and_the_slot_is_freed() -> None:
    async def respond(request: RawRequest) -> bool:
        await asyncio.sleep(5)
        return False

    async with RawHttpServer(respond) as server:
        pool = ConnectionPool(server.url, max_connections=1)
        started = asyncio.get_running_loop().time()
        with pytest.raises(TimeoutError):
            await fetch(pool, timeout=0.2)
        assert asyncio.get_running_loop().time() - started < 1.0
        assert pool._open == 0
        await pool.aclose()


async def test_a_request_waiting_for_a_capped_pool_times_out_too() -> None:
    release = asyncio.Event()

    async def respond(request: RawRequest) -> bool:
        await release.wait()
        request.writer.write(answer())
        return True

    async with RawHttpServer(respond) as server:
        pool = ConnectionPool(server.url, max_connections=1)
        busy = asyncio.ensure_future(fetch(pool))
        await asyncio.sleep(0.05)
        with pytest.raises(TimeoutError):
            await fetch(pool, timeout=0.1)  # never got the one connection
        release.set()
        assert (await busy).body == b"ok"
        assert (await fetch(pool)).body == b"ok"  # the cap still lets requests through
        await pool.aclose()
    assert server.connections == 1


# --- streams ------------------------------------------------------------------------------


async def test_a_stream_hands_over_pieces_as_they_arrive() -> None:
    async def respond(request: RawRequest) -> bool:
        writer = request.writer
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
        )
        for word in (b"one ", b"two ", b"three"):
            writer.write(b"%x\r\n%s\r\n" % (len(word), word))
            await writer.drain()
            await asyncio.sleep(0.02)
        writer.write(b"0\r\n\r\n")
        return True

    read, connections = await _stream_twice(respond)
    assert read == [[b"one ", b"two ", b"three"]] * 2
    assert connections == 1  # a stream read to its end leaves its connection usable


async def test_a_stream_left_at_its_closing_event_still_frees_its_connection() -> None:
    async def respond(request: RawRequest) -> bool:
        writer = request.writer
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nlast!\r\n")
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.write(b"0\r\n\r\n")  # the body's end comes after the reader stopped
        return True

    read, connections = await _stream_twice(respond, first_piece_only=True)
    assert read == [[b"last!"]] * 2
    assert connections == 1


async def _stream_twice(
    respond: Respond, *, first_piece_only: bool = False
) -> tuple[list[list[bytes]], int]:
    """Two streams, one after the other, from one pool: the pieces read from each (all, or
    the first only), and how many connections the server saw."""
    read: list[list[bytes]] = []
    async with RawHttpServer(respond) as server:
        pool = ConnectionPool(server.url)
        request = pool.prepare("POST", "/", HEADERS)
        for _ in range(2):
            pieces: list[bytes] = []
            async with pool.stream(request, b"{}", connect_timeout=1, read_timeout=1) as streamed:
                assert streamed.status == 200
                async for piece in streamed:
                    pieces.append(piece)
                    if first_piece_only:
                        break
            read.append(pieces)
            await asyncio.sleep(0.1)  # time for a stream left unread to finish arriving
        await pool.aclose()
    return read, server.connections


async def test_a_stream_that_falls_silent_times_out() -> None:
    async def respond(request: RawRequest) -> bool:
        request.writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n")
        await asyncio.sleep(5)
        return False

    async with RawHttpServer(respond) as server:
        pool = ConnectionPool(server.url)
        request = pool.prepare("POST", "/", HEADERS)
        pieces: list[bytes] = []
        with pytest.raises(TimeoutError):
            async with pool.stream(request, b"{}", connect_timeout=1, read_timeout=0.2) as streamed:
                async for piece in streamed:
                    pieces.append(piece)
        assert pieces == [b"abc"] and pool._open == 0
        await pool.aclose()


# --- looking hosts up ----------------------------------------------------------------------


class _Resolver:
    """Stands in for the event loop's `getaddrinfo`: names `api.test` (any port) as the
    addresses `answers` gives for each call in turn (a callable may raise), after a pause
    long enough for concurrent lookups to overlap; records every call."""

    def __init__(self, *answers: object) -> None:
        self.calls: list[tuple[str, int]] = []
        self._answers = list(answers)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", self._getaddrinfo)

    async def _getaddrinfo(self, host: str, port: int, **_: object) -> list[wire.AddressInfo]:
        self.calls.append((host, port))
        await asyncio.sleep(0.05)
        answer = self._answers[min(len(self.calls), len(self._answers)) - 1]
        if callable(answer):
            answer = answer(port)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", address) for address in answer]


async def test_connections_opened_at_once_share_one_lookup(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def slow(request: RawRequest) -> bool:
        await asyncio.sleep(0.1)  # all 50 in flight at once: 50 connections
        request.writer.write(answer())
        return True

    async with RawHttpServer(slow) as server:
        resolver = _Resolver(lambda port: [("127.0.0.1", port)])
        resolver.install(monkeypatch)
        pool = ConnectionPool(f"http://api.test:{server.port}")
        answers = await asyncio.gather(*(fetch(pool) for _ in range(50)))
        await pool.aclose()
    assert [a.body for a in answers] == [b"ok"] * 50
    assert server.connections == 50
    assert resolver.calls == [("api.test", server.port)]
    assert server.requests[0].header("host") == f"api.test:{server.port}"


async def test_a_request_that_gives_up_waiting_for_a_lookup_leaves_it_to_the_others(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with RawHttpServer(respond_with(answer())) as server:
        resolver = _Resolver(lambda port: [("127.0.0.1", port)])  # answers after 50 ms
        resolver.install(monkeypatch)
        pool = ConnectionPool(f"http://api.test:{server.port}")
        impatient, patient = await asyncio.gather(
            fetch(pool, timeout=0.01), fetch(pool), return_exceptions=True
        )
        await pool.aclose()
    assert isinstance(impatient, CannotConnect)
    assert str(impatient) == f"api.test:{server.port} (no connection within the timeout)"
    assert isinstance(patient, wire.Response) and patient.body == b"ok"
    assert len(resolver.calls) == 1


async def test_a_looked_up_address_is_kept_for_its_time_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with RawHttpServer(respond_with(answer(), keep=False)) as server:
        resolver = _Resolver(lambda port: [("127.0.0.1", port)])
        resolver.install(monkeypatch)
        pool = ConnectionPool(f"http://api.test:{server.port}", dns_ttl_s=0.3)
        await fetch(pool)
        await fetch(pool)  # a new connection (the server closed the first), same lookup
        assert len(resolver.calls) == 1
        await asyncio.sleep(0.4)
        await fetch(pool)
        await pool.aclose()
    assert server.connections == 3
    assert len(resolver.calls) == 2


async def _closed_port() -> int:
    """A loopback port nothing listens on any more: connecting to it is refused."""
    async with RawHttpServer(respond_with(answer())) as gone:
        return gone.port


def _unknown_name(port: int) -> list[tuple[str, int]]:
    raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")


@pytest.mark.parametrize(
    ("failure", "message"),
    [
        ("lookup", r"^api\.test:\d+ \(Name or service not known\)$"),
        ("connect", r"^api\.test:\d+ \(Connection refused\)$"),  # the host moved
    ],
)
async def test_after_a_failure_the_next_connection_looks_the_host_up_again(
    failure: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _unknown_name if failure == "lookup" else [("127.0.0.1", await _closed_port())]
    async with RawHttpServer(respond_with(answer())) as server:
        resolver = _Resolver(first, lambda port: [("127.0.0.1", port)])
        resolver.install(monkeypatch)
        pool = ConnectionPool(f"http://api.test:{server.port}")
        with pytest.raises(CannotConnect, match=message):
            await fetch(pool)
        assert (await fetch(pool)).body == b"ok"
        await pool.aclose()
    assert len(resolver.calls) == 2


async def test_the_next_address_is_tried_when_one_refuses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dead_port = await _closed_port()
    async with RawHttpServer(respond_with(answer(b"second"))) as server:
        resolver = _Resolver([("127.0.0.1", dead_port), ("127.0.0.1", server.port)])
        resolver.install(monkeypatch)
        pool = ConnectionPool(f"http://api.test:{server.port}")
        assert (await fetch(pool)).body == b"second"
        await pool.aclose()
    assert server.connections == 1


# --- TLS and proxies ----------------------------------------------------------------------


def _certificate(folder: Path, names: str) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is not installed: no test certificate can be made")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "1",
            "-subj",
            "/CN=test",
            "-addext",
            f"subjectAltName={names}",
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


def _server_context(cert: Path, key: Path) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return context


async def test_https_to_a_server_the_trust_store_vouches_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = _certificate(tmp_path, "DNS:localhost,IP:127.0.0.1")
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # how a user adds a CA to the system's store
    async with RawHttpServer(
        respond_with(answer(b"secret")), tls=_server_context(cert, key)
    ) as server:
        pool = ConnectionPool(server.url)
        assert (await fetch(pool)).body == b"secret"
        assert (await fetch(pool)).body == b"secret"
        await pool.aclose()
    assert server.connections == 1
    assert server.requests[0].header("host") == f"127.0.0.1:{server.port}"


async def test_https_refuses_a_certificate_for_another_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = _certificate(tmp_path, "DNS:other.example")
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # trusted, but not for 127.0.0.1
    async with RawHttpServer(respond_with(answer()), tls=_server_context(cert, key)) as server:
        with pytest.raises(TlsFailure, match="127.0.0.1"):
            await fetch_from(server)
    assert not server.requests


async def test_https_refuses_a_certificate_nobody_vouches_for(tmp_path: Path) -> None:
    cert, key = _certificate(tmp_path, "IP:127.0.0.1")  # not in the system's store
    async with RawHttpServer(respond_with(answer()), tls=_server_context(cert, key)) as server:
        with pytest.raises(TlsFailure, match="certificate verify failed"):
            await fetch_from(server)


class _Proxy(LoopbackServer):
    """A loopback HTTP proxy: forwards absolute-form requests and tunnels CONNECT. With
    `tls`, clients speak TLS to the proxy itself (an https:// proxy URL)."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        super().__init__(tls=tls)
        self.seen: list[bytes] = []

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        self.seen.append(head)
        method, target, _ = head.split(b"\r\n", 1)[0].split(b" ")
        if method == b"CONNECT":
            address, _, port_text = target.decode().rpartition(":")
            upstream_reader, upstream_writer = await asyncio.open_connection(
                address, int(port_text)
            )
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            url = target.decode().removeprefix("http://")
            authority, _, path = url.partition("/")
            host, _, port = authority.rpartition(":")
            upstream_reader, upstream_writer = await asyncio.open_connection(host, int(port))
            upstream_writer.write(head.replace(target, b"/" + path.encode(), 1))

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            try:
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            except ConnectionError:
                pass
            finally:
                sink.close()

        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))


async def test_http_through_a_proxy_in_absolute_form_with_its_credentials() -> None:
    async with RawHttpServer(respond_with(answer(b"via proxy"))) as server, _Proxy() as proxy:
        pool = ConnectionPool(server.url, proxy=f"http://user:p%40ss@127.0.0.1:{proxy.port}")
        assert (await fetch(pool)).body == b"via proxy"
        await pool.aclose()
    line, *headers = proxy.seen[0].decode().split("\r\n")
    assert line == f"POST {server.url}/v1/chat/completions HTTP/1.1"
    assert "proxy-authorization: Basic dXNlcjpwQHNz" in headers  # user:p@ss


async def test_a_proxy_that_refuses_the_tunnel_says_so() -> None:
    reply = answer(b"", status="407 Proxy Authentication Required")
    async with RawHttpServer(respond_with(reply)) as proxy:
        pool = ConnectionPool("https://api.example.com", proxy=proxy.url)
        with pytest.raises(
            CannotConnect, match="refused a tunnel to api.example.com:443: HTTP 407"
        ):
            await fetch(pool)


@pytest.mark.parametrize("scheme", ["http", "https"])  # an https:// proxy: TLS inside TLS
async def test_https_through_a_proxy_tunnel(
    scheme: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = _certificate(tmp_path, "IP:127.0.0.1")
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    context = _server_context(cert, key)
    async with (
        RawHttpServer(respond_with(answer(b"tunnelled")), tls=context) as server,
        _Proxy(tls=context if scheme == "https" else None) as proxy,
    ):
        pool = ConnectionPool(server.url, proxy=f"{scheme}://user:pw@127.0.0.1:{proxy.port}")
        assert (await fetch(pool)).body == b"tunnelled"
        assert (await fetch(pool)).body == b"tunnelled"  # the tunnel is kept alive
        await pool.aclose()
    assert len(proxy.seen) == 1 and server.connections == 1
    line, *headers = proxy.seen[0].decode().split("\r\n")
    assert line == f"CONNECT 127.0.0.1:{server.port} HTTP/1.1"
    assert "proxy-authorization: Basic dXNlcjpwdw==" in headers  # user:pw
    assert server.requests[0].request_line == "POST /v1/chat/completions HTTP/1.1"


async def test_http_through_an_https_proxy_in_absolute_form(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = _certificate(tmp_path, "IP:127.0.0.1")
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    async with (
        RawHttpServer(respond_with(answer(b"via tls proxy"))) as server,
        _Proxy(tls=_server_context(cert, key)) as proxy,
    ):
        pool = ConnectionPool(server.url, proxy=proxy.url)
        assert (await fetch(pool)).body == b"via tls proxy"
        await pool.aclose()
    assert proxy.seen[0].startswith(f"POST {server.url}/v1/chat/completions ".encode())


async def test_an_https_proxy_with_an_untrusted_certificate_is_named(tmp_path: Path) -> None:
    cert, key = _certificate(tmp_path, "IP:127.0.0.1")  # not in the system's store
    async with _Proxy(tls=_server_context(cert, key)) as proxy:
        pool = ConnectionPool("https://api.example.com", proxy=proxy.url)
        with pytest.raises(TlsFailure, match=r"the proxy 127\.0\.0\.1:\d+: .*verify failed"):
            await fetch(pool)
        await pool.aclose()
    assert not proxy.seen


def test_only_http_and_https_proxies_are_supported() -> None:
    with pytest.raises(ValueError, match="not an http:// or https:// proxy URL"):
        ConnectionPool("https://api.example.com", proxy="socks5://127.0.0.1:1080")


# --- the parser on any bytes (hypothesis) ------------------------------------------------------


class _Collected:
    def __init__(self) -> None:
        self.head: ResponseHead | None = None
        self.body = b""
        self.ended = False

    def on_head(self, head: ResponseHead) -> None:
        self.head = head

    def on_body(self, piece: bytes) -> None:
        self.body += piece

    def on_end(self) -> None:
        self.ended = True


def _parse(pieces: list[bytes], *, eof: bool = True) -> _Collected:
    collected = _Collected()
    parser = ResponseParser(collected, max_body=1_000_000)
    for piece in pieces:
        parser.feed(piece)
    if eof:
        parser.feed_eof()
    return collected


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


VALID_ANSWERS = [
    answer(b'{"choices": []}', headers="x-request-id: r1\r\n"),
    b"HTTP/1.1 100 Continue\r\n\r\n" + answer(b"after continue"),
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n10;x=y\r\n0123456789abcdef\r\n0\r\nt: 1\r\n\r\n",
    answer(gzip.compress(b"inflated " * 50), headers="content-encoding: gzip\r\n"),
    b"HTTP/1.0 200 OK\r\n\r\nuntil the end",
    b"HTTP/1.1 204 No Content\r\n\r\n",
    b"HTTP/1.1 200 OK\ncontent-length: 3\n\nbare",  # bare LF line breaks
]


@settings(max_examples=300, deadline=None)
@given(
    which=st.integers(0, len(VALID_ANSWERS) - 1), cuts=st.lists(st.integers(0, 10_000), max_size=12)
)
def test_any_split_of_a_valid_answer_parses_the_same(which: int, cuts: list[int]) -> None:
    data = VALID_ANSWERS[which]
    whole = _parse([data])
    split = _parse(_split(data, cuts))
    assert whole.ended and split.ended
    assert split.head == whole.head and split.body == whole.body


@pytest.mark.parametrize("data", VALID_ANSWERS)
def test_an_answer_arriving_a_byte_at_a_time_parses_the_same(data: bytes) -> None:
    whole = _parse([data])
    trickled = _parse([data[i : i + 1] for i in range(len(data))])
    assert trickled.ended and (trickled.head, trickled.body) == (whole.head, whole.body)


def test_a_head_trickling_in_is_refused_at_its_limit() -> None:
    parser = ResponseParser(_Collected(), max_head=1000)
    parser.feed(b"HTTP/1.1 200 OK\r\n")
    with pytest.raises(AnswerTooLarge, match="headers are over 1000 bytes"):
        for _ in range(2000):
            parser.feed(b"x")


def test_header_lines_are_read_as_a_mature_client_reads_them() -> None:
    head = _parse(
        [
            b"HTTP/1.1 200 OK\r\nX-A: 1\r\nx-a: 2\r\nEmpty:\r\nSpaced: \t v w  \r\n",
            b"Folded: one\r\n two\r\nLatin: caf\xe9\xa0\r\ncontent-length: 0\r\n\r\n",
        ]
    ).head
    assert head is not None and head.keep_alive
    assert head.headers == {
        "x-a": "1, 2",  # a repeated header, joined
        "empty": "",
        "spaced": "v w",
        "folded": "one two",  # an obsolete folded line continues the one before
        "latin": "caf\xe9\xa0",
        "content-length": "0",
    }
    assert not _parse([b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"]).head.keep_alive  # type: ignore[union-attr]
    assert not _parse([b"HTTP/1.0 200 OK\r\ncontent-length: 0\r\n\r\n"]).head.keep_alive  # type: ignore[union-attr]


def test_the_valid_answers_parse_to_what_was_sent() -> None:
    assert _parse([VALID_ANSWERS[2]]).body == b"abc0123456789abcdef"
    assert _parse([VALID_ANSWERS[3]]).body == b"inflated " * 50
    assert _parse([VALID_ANSWERS[6]]).body == b"bar"


@settings(max_examples=500, deadline=None)
@given(
    data=st.one_of(
        st.binary(max_size=300),
        st.sampled_from(VALID_ANSWERS).flatmap(
            lambda valid: st.tuples(st.integers(0, len(valid)), st.binary(max_size=20)).map(
                lambda cut: valid[: cut[0]] + cut[1]
            )
        ),
    ),
    cuts=st.lists(st.integers(0, 400), max_size=6),
)
def test_arbitrary_bytes_only_ever_give_the_contracts_failures(
    data: bytes, cuts: list[int]
) -> None:
    try:
        _parse(_split(data, cuts))
    except HttpFailure:
        pass


# --- what a provider user sees ------------------------------------------------------------


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
    cert, key = _certificate(tmp_path, "IP:127.0.0.1")
    async with RawHttpServer(respond_with(answer()), tls=_server_context(cert, key)) as server:
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
    async with RawHttpServer(respond_with(answer(completion))) as server, _Proxy() as proxy:
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

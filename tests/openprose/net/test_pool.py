"""`net.pool` against raw loopback servers the tests start, which write exactly the bytes
each test chooses: what is sent, framing, encodings, keep-alive, failures, streams, timeouts."""

from __future__ import annotations

import asyncio
import gzip
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openprose.net.errors import (
    AnswerTooLarge,
    CannotConnect,
    ConnectionBroke,
    HttpFailure,
    NotHttp,
)
from openprose.net.pool import ConnectionPool
from openprose.net.timeouts import TimedOut, Timeouts
from tests.support.pool_calls import HEADERS, fetch, fetch_from
from tests.support.raw_http_server import (
    RawHttpServer,
    RawRequest,
    Respond,
    answer,
    respond_with,
)

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
            "content-length is not one byte count",
        ),
        (
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
            NotHttp,
            "chunked body is malformed .Invalid character in chunk size",
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
            async with pool.stream(
                request, b"{}", Timeouts(connect=1, first_byte=1, read=1)
            ) as streamed:
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
            async with pool.stream(
                request, b"{}", Timeouts(connect=1, first_byte=0.2, read=0.2)
            ) as streamed:
                async for piece in streamed:
                    pieces.append(piece)
        assert pieces == [b"abc"] and pool._open == 0
        await pool.aclose()


# --- any bytes on the wire (hypothesis): an answer or one clear failure, never a hang ---------

_WIRE_VALID = [
    answer(b'{"ok": 1}'),
    b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    b"HTTP/1.1 100 Continue\r\n\r\n" + answer(b"after"),
]


@settings(max_examples=40, deadline=None)
@given(
    reply=st.one_of(
        st.binary(max_size=120),
        st.sampled_from(_WIRE_VALID).flatmap(
            lambda valid: st.tuples(st.integers(0, len(valid)), st.binary(max_size=12)).map(
                lambda cut: valid[: cut[0]] + cut[1]
            )
        ),
    ),
    keep=st.booleans(),
)
def test_any_bytes_on_the_wire_end_in_an_answer_or_a_clear_failure(
    reply: bytes, keep: bool
) -> None:
    async def exchange() -> None:
        async with RawHttpServer(respond_with(reply, keep=keep)) as server:
            pool = ConnectionPool(server.url)
            request = pool.prepare("POST", "/v1/x", HEADERS)
            try:
                async with asyncio.timeout(5):  # a hang fails here, not in our timeouts
                    await pool.fetch(request, b"{}", Timeouts(total=1, first_byte=0.2, read=0.1))
            except HttpFailure as failure:
                assert str(failure)
            except TimeoutError as failure:
                assert isinstance(failure, TimedOut), "hung past every timeout"
            finally:
                await pool.aclose()

    asyncio.run(exchange())


def test_a_pool_serves_only_the_loop_that_first_used_it_whoever_names_the_loop() -> None:
    async def answer(request: RawRequest) -> bool:
        request.writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        return True

    async def first(pool: ConnectionPool) -> bytes:
        request = pool.prepare("POST", "/v1/x", HEADERS)
        loop = asyncio.get_running_loop()  # named by the caller, as HttpTransport does
        return (await pool.fetch_on(loop, request, b"{}", Timeouts(total=5))).body

    async def again(pool: ConnectionPool) -> None:
        request = pool.prepare("POST", "/v1/x", HEADERS)
        with pytest.raises(RuntimeError, match="serves the event loop that first used it"):
            await pool.fetch(request, b"{}", Timeouts(total=5))
        with pytest.raises(RuntimeError, match="serves the event loop that first used it"):
            await pool.fetch_on(asyncio.get_running_loop(), request, b"{}", Timeouts(total=5))

    async def both() -> None:
        async with RawHttpServer(answer) as server:
            pool = ConnectionPool(server.url)
            assert await first(pool) == b"ok"
            # another loop, in another thread, while the first still runs
            await asyncio.to_thread(asyncio.run, again(pool))
            await pool.aclose()

    asyncio.run(both())

"""`net.blocking`: the loop-less client the trace export helper sends with, against loopback
servers (run in this test's event loop; the client in a thread): keep-alive, the answer's
framing and limits through the shared parser, every failure one of `net.errors` or a
`TimeoutError`, the deadline kept, proxies (absolute form, CONNECT tunnels), TLS."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openprose.net.blocking import BlockingAnswer, BlockingClient
from openprose.net.errors import (
    AnswerTooLarge,
    CannotConnect,
    ConnectionBroke,
    HttpFailure,
    NotHttp,
    TlsFailure,
)
from tests.support.raw_http_server import RawHttpServer, RawRequest, answer, respond_with
from tests.support.tls_proxy import ProxyServer, certificate, server_context

HEADERS = {"content-type": "application/x-protobuf"}


async def _send(
    client: BlockingClient, body: bytes = b"spans", timeout: float = 5
) -> BlockingAnswer:
    return await asyncio.to_thread(client.send, body, timeout)


async def test_requests_share_one_kept_alive_connection() -> None:
    async with RawHttpServer(respond_with(answer(b"first"), answer(b"second"))) as server:
        client = BlockingClient("POST", f"{server.url}/v1/traces?x=1", HEADERS)
        one, two = await _send(client, b"a"), await _send(client, b"bc")
        client.close()
    assert (one.head.status, one.body, two.body) == (200, b"first", b"second")
    assert server.connections == 1 and client.connections_made == 1
    first = server.requests[0]
    assert first.request_line == "POST /v1/traces?x=1 HTTP/1.1"
    assert first.header("host") == f"127.0.0.1:{server.port}"
    assert first.header("content-type") == "application/x-protobuf"
    assert (first.body, server.requests[1].body) == (b"a", b"bc")


async def test_a_chunked_answer_that_closes_the_connection_is_read_and_not_reused() -> None:
    reply = (
        b"HTTP/1.1 503 Busy\r\ntransfer-encoding: chunked\r\nconnection: close\r\n"
        b"retry-after: 2\r\n\r\n3\r\nbus\r\n1\r\ny\r\n0\r\n\r\n"
    )
    async with RawHttpServer(respond_with(reply, keep=False)) as server:
        client = BlockingClient("POST", server.url, HEADERS)
        first, second = await _send(client), await _send(client)
    assert (first.head.status, first.head.reason, first.body) == (503, "Busy", b"busy")
    assert first.head.headers["retry-after"] == "2"
    assert second.head.status == 503 and server.connections == 2


async def test_a_kept_connection_the_server_closed_fails_as_broken_before_the_answer() -> None:
    async with RawHttpServer(respond_with(answer(b"once"), keep=False)) as server:
        client = BlockingClient("POST", server.url, {"connection": "keep-alive"})
        assert (await _send(client)).body == b"once"
        await asyncio.sleep(0.05)  # the server has closed its end
        with pytest.raises(ConnectionBroke) as caught:
            await _send(client)
        assert caught.value.before_answer  # the caller may send again at once
        assert (await _send(client)).body == b"once"  # on a new connection
    assert client.connections_made == 2


@pytest.mark.parametrize(
    ("reply", "failure", "words"),
    [
        (b"SSH-2.0-OpenSSH\r\n", NotHttp, "does not start like HTTP"),
        (b"HTTP/1.1 200 OK\r\ncontent-length: x\r\n\r\n", NotHttp, "content-length"),
        (b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc", ConnectionBroke, "7 of its bytes"),
        (b"HTTP/1.1 200 OK\r\n" + b"x-flood: y\r\n" * 10_000, AnswerTooLarge, "headers are over"),
    ],
)
async def test_a_bad_answer_is_one_clear_failure(
    reply: bytes, failure: type[Exception], words: str
) -> None:
    async with RawHttpServer(respond_with(reply, keep=False)) as server:
        client = BlockingClient("POST", server.url, HEADERS)
        with pytest.raises(failure, match=words):
            await _send(client)


async def test_a_silent_server_meets_the_deadline_with_the_time_it_was_given() -> None:
    async def silent(request: RawRequest) -> bool:
        await asyncio.sleep(3)
        return False

    async with RawHttpServer(silent) as server:
        client = BlockingClient("POST", server.url, HEADERS)
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            await _send(client, timeout=0.3)
        took = time.monotonic() - started
    assert 0.25 < took < 2


def test_a_port_nobody_listens_on_cannot_connect_and_keeps_the_os_reason() -> None:
    client = BlockingClient("POST", "http://127.0.0.1:9/v1/traces", HEADERS)
    with pytest.raises(CannotConnect, match=r"127\.0\.0\.1:9 \(") as caught:
        client.send(b"", 2)
    assert isinstance(caught.value.__cause__, ConnectionRefusedError)


@pytest.mark.parametrize(
    ("url", "headers", "proxy", "words"),
    [
        ("ftp://collector/v1", {}, None, "not an http:// or https:// URL"),
        ("http://[::1/v1", {}, None, "not a URL"),
        ("http://collector/v1", {"x-bad": "a\r\nb"}, None, "character HTTP forbids"),
        ("http://collector/v1", {"x-key": "\u732b"}, None, "outside Latin-1"),
        ("http://collector/v1", {}, "socks5://127.0.0.1:1080", "SOCKS"),
        ("https://collector/v1", {}, "https://127.0.0.1:3128", "TLS inside TLS"),
    ],
)
def test_what_cannot_be_sent_is_refused_when_the_client_is_made(
    url: str, headers: dict[str, str], proxy: str | None, words: str
) -> None:
    with pytest.raises(ValueError, match=words):
        BlockingClient("POST", url, headers, proxy=proxy)


async def test_http_through_a_proxy_in_absolute_form_with_its_credentials() -> None:
    async with RawHttpServer(respond_with(answer(b"via proxy"))) as server, ProxyServer() as proxy:
        client = BlockingClient(
            "POST",
            f"{server.url}/v1/traces",
            HEADERS,
            proxy=f"http://u:p%40ss@127.0.0.1:{proxy.port}",
        )
        assert (await _send(client)).body == b"via proxy"
        client.close()
    line, *headers = proxy.seen[0].decode().split("\r\n")
    assert line == f"POST {server.url}/v1/traces HTTP/1.1"
    assert "proxy-authorization: Basic dTpwQHNz" in headers  # u:p@ss


async def test_https_through_a_proxy_tunnel_and_an_untrusted_certificate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = certificate(tmp_path, "IP:127.0.0.1")
    context = server_context(cert, key)
    async with (
        RawHttpServer(respond_with(answer(b"tunnelled")), tls=context) as server,
        ProxyServer() as proxy,
    ):
        untrusted = BlockingClient("POST", server.url, HEADERS, proxy=proxy.url)
        with pytest.raises(TlsFailure, match=r"127\.0\.0\.1:\d+: .*verify failed"):
            await _send(untrusted)
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))
        client = BlockingClient("POST", f"{server.url}/v1/traces", HEADERS, proxy=proxy.url)
        assert (await _send(client)).body == b"tunnelled"
        assert (await _send(client)).body == b"tunnelled"  # the tunnel is kept alive
        client.close()
    assert proxy.seen[-1].startswith(f"CONNECT 127.0.0.1:{server.port} HTTP/1.1".encode())
    assert server.requests[-1].request_line == "POST /v1/traces HTTP/1.1"


async def test_a_proxy_that_refuses_the_tunnel_says_so() -> None:
    reply = answer(b"", status="407 Proxy Authentication Required")
    async with RawHttpServer(respond_with(reply)) as proxy:
        client = BlockingClient("POST", "https://collector.example:4318/v1", {}, proxy=proxy.url)
        with pytest.raises(
            CannotConnect, match="refused a tunnel to collector.example:4318: HTTP 407"
        ):
            await _send(client)


def test_importing_it_loads_no_event_loop_nor_dataclasses() -> None:
    """The trace export helper starts with this module; it must stay cheap to import."""
    code = (
        "import sys, openprose.net.blocking; "
        "print(sorted(m for m in ('asyncio', 'dataclasses', 'ssl', 'urllib.request') "
        "if m in sys.modules))"
    )
    shown = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert shown.strip() == "[]"


def _answer_once(listener: socket.socket, reply: bytes, close: bool) -> None:
    """Accept one connection, read its request, write `reply`; then close, or hold the
    connection open until the client lets go."""
    conn, _ = listener.accept()
    with conn:
        seen = b""
        while b"\r\n\r\n" not in seen:
            seen += conn.recv(65536)
        conn.sendall(reply)
        if not close:
            with_nothing_more = conn.recv(65536)
            assert not with_nothing_more  # the client never sends twice on a broken answer


_VALID = answer(b"0123456789")


@settings(max_examples=40, deadline=None)
@given(
    reply=st.one_of(
        st.binary(max_size=200),
        st.integers(0, len(_VALID)).map(lambda cut: _VALID[:cut]),
        st.tuples(st.binary(max_size=8), st.binary(max_size=8)).map(
            lambda ends: (
                b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
                + ends[0]
                + b"\r\nabc\r\n"
                + ends[1]
            )
        ),
    ),
    close=st.booleans(),
)
def test_any_bytes_from_a_server_give_an_answer_or_one_clear_failure_in_time(
    reply: bytes, close: bool
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        server = threading.Thread(target=_answer_once, args=(listener, reply, close))
        server.start()
        client = BlockingClient("POST", f"http://127.0.0.1:{port}/v1/traces", HEADERS)
        started = time.monotonic()
        try:
            client.send(b"spans", 0.3)
        except HttpFailure as failure:
            assert str(failure)  # a message a person can read
        except TimeoutError:
            assert not close  # only a server that holds the connection open runs out the time
        finally:
            client.close()
            server.join(5)
        assert time.monotonic() - started < 2.5

"""`net.connect`: host lookups, TLS and proxies, against loopback servers and proxies."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from openprose.net import connect as connect_module
from openprose.net.connection import Response
from openprose.net.errors import (
    CannotConnect,
    TlsFailure,
)
from openprose.net.pool import ConnectionPool
from tests.support.pool_calls import fetch, fetch_from
from tests.support.raw_http_server import (
    RawHttpServer,
    RawRequest,
    answer,
    respond_with,
)
from tests.support.tls_proxy import ProxyServer, certificate, server_context

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

    async def _getaddrinfo(
        self, host: str, port: int, **_: object
    ) -> list[connect_module.AddressInfo]:
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
    assert isinstance(patient, Response) and patient.body == b"ok"
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


async def test_https_to_a_server_the_trust_store_vouches_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = certificate(tmp_path, "DNS:localhost,IP:127.0.0.1")
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # how a user adds a CA to the system's store
    async with RawHttpServer(
        respond_with(answer(b"secret")), tls=server_context(cert, key)
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
    cert, key = certificate(tmp_path, "DNS:other.example")
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # trusted, but not for 127.0.0.1
    async with RawHttpServer(respond_with(answer()), tls=server_context(cert, key)) as server:
        with pytest.raises(TlsFailure, match="127.0.0.1"):
            await fetch_from(server)
    assert not server.requests


async def test_https_refuses_a_certificate_nobody_vouches_for(tmp_path: Path) -> None:
    cert, key = certificate(tmp_path, "IP:127.0.0.1")  # not in the system's store
    async with RawHttpServer(respond_with(answer()), tls=server_context(cert, key)) as server:
        with pytest.raises(TlsFailure, match="certificate verify failed"):
            await fetch_from(server)


async def test_http_through_a_proxy_in_absolute_form_with_its_credentials() -> None:
    async with RawHttpServer(respond_with(answer(b"via proxy"))) as server, ProxyServer() as proxy:
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
    cert, key = certificate(tmp_path, "IP:127.0.0.1")
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    context = server_context(cert, key)
    async with (
        RawHttpServer(respond_with(answer(b"tunnelled")), tls=context) as server,
        ProxyServer(tls=context if scheme == "https" else None) as proxy,
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
    cert, key = certificate(tmp_path, "IP:127.0.0.1")
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    async with (
        RawHttpServer(respond_with(answer(b"via tls proxy"))) as server,
        ProxyServer(tls=server_context(cert, key)) as proxy,
    ):
        pool = ConnectionPool(server.url, proxy=proxy.url)
        assert (await fetch(pool)).body == b"via tls proxy"
        await pool.aclose()
    assert proxy.seen[0].startswith(f"POST {server.url}/v1/chat/completions ".encode())


async def test_an_https_proxy_with_an_untrusted_certificate_is_named(tmp_path: Path) -> None:
    cert, key = certificate(tmp_path, "IP:127.0.0.1")  # not in the system's store
    async with ProxyServer(tls=server_context(cert, key)) as proxy:
        pool = ConnectionPool("https://api.example.com", proxy=proxy.url)
        with pytest.raises(TlsFailure, match=r"the proxy 127\.0\.0\.1:\d+: .*verify failed"):
            await fetch(pool)
        await pool.aclose()
    assert not proxy.seen


def test_only_http_and_https_proxies_are_supported() -> None:
    with pytest.raises(ValueError, match="not an http:// or https:// proxy URL"):
        ConnectionPool("https://api.example.com", proxy="socks5://127.0.0.1:1080")

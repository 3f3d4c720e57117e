"""Opening a connection to one origin: the host's addresses (looked up once per
`DNS_TTL_S`, shared by the connections opened at once), happy eyeballs between them, TLS
through the system's trust store, and http:// or https:// proxies (a CONNECT tunnel for an
https origin, TLS inside TLS through an https:// proxy). Every failure leaves as
`CannotConnect` or `TlsFailure`, saying which peer and why.
"""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
from collections.abc import Callable

import aiohappyeyeballs

from openprose.net.connection import Connection, Response, WholeAnswer
from openprose.net.endpoints import Proxy, default_ssl_context
from openprose.net.errors import CannotConnect, ConnectionBroke, TlsFailure
from openprose.net.parser import ResponseParser

__all__ = [
    "DNS_TTL_S",
    "AddressInfo",
    "Connector",
    "HostCache",
]

HAPPY_EYEBALLS_S = 0.25
# A host's addresses are looked up again after this (aiohttp's default `ttl_dns_cache`): long
# enough that a run's first burst of connections makes one lookup, short enough to follow a
# hosted API moving its addresses.
DNS_TTL_S = 10.0


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


class Connector:
    """Opens connections to one origin (`host`, `port`, TLS or not), through `proxy` if
    one is given. Belongs to one event loop, as the pool that uses it."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        tls: bool,
        proxy: Proxy | None,
        ssl_context: Callable[[], ssl.SSLContext] | None,
        max_head: int,
        dns_ttl_s: float,
    ) -> None:
        self.host = host
        self.port = port
        self.tls = tls
        self._proxy = proxy
        self._make_ssl_context = ssl_context or default_ssl_context
        self._ssl_context: ssl.SSLContext | None = None
        self.max_head = max_head
        self.host_cache = HostCache(dns_ttl_s)  # the origin's (or the proxy's) addresses
        self.connections_made = 0

    async def open(self, loop: asyncio.AbstractEventLoop, deadline: float | None) -> Connection:
        """A new connection, opened before `deadline` (loop time; None: no limit)."""
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
                    Connection,
                    sock=sock,
                    ssl=self._ssl() if first_tls else None,
                    server_hostname=host if first_tls else None,
                )
                if self.tls and proxy is not None:
                    tls_peer = f"{self.host}:{self.port}"
                    await self._tunnel(loop, connection, proxy)
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

    async def _tunnel(
        self, loop: asyncio.AbstractEventLoop, connection: Connection, proxy: Proxy
    ) -> None:
        """Ask an HTTP proxy for a tunnel to the origin (CONNECT); TLS then runs inside it."""
        lines = [f"CONNECT {self.host}:{self.port} HTTP/1.1", f"host: {self.host}:{self.port}"]
        if proxy.authorization:
            lines.append(f"proxy-authorization: {proxy.authorization}")
        future: asyncio.Future[Response] = loop.create_future()
        answer = WholeAnswer(future)
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

    def _ssl(self) -> ssl.SSLContext:
        if self._ssl_context is None:
            self._ssl_context = self._make_ssl_context()
        return self._ssl_context


def _plain_http_answer(error: Exception) -> bool:
    """Whether a TLS handshake failed because plain text came back (OpenSSL reads an HTTP
    status line as a record of an unknown version)."""
    reason = str(getattr(error, "reason", "") or error).upper()
    return any(mark in reason for mark in ("WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE"))

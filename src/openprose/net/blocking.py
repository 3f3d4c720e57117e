"""HTTP/1.1 without an event loop, for a caller that sends one request at a time to one URL:
the trace export helper (`telemetry.otlp_http`).

The same pieces as the async transport: answers read by `parser` (llhttp, with its limits),
failures as `net.errors` or `TimeoutError`, the proxy from the environment (`endpoints`) and
its TLS defaults. One socket, kept alive between requests while the server allows it.
Cheap to import (no asyncio, no dataclasses): the helper starts in a few tens of ms.

Through a proxy: an http:// URL is asked for in absolute form (an https:// proxy is reached
over TLS); an https:// URL through an http:// proxy goes through a CONNECT tunnel. An
https:// URL through an https:// proxy (TLS inside TLS) is refused when the client is made.
"""

from __future__ import annotations

import os
import socket
import time
from urllib.parse import urlsplit

from openprose.net.endpoints import Proxy, default_ssl_context, parse_proxy
from openprose.net.errors import CannotConnect, ConnectionBroke, TlsFailure
from openprose.net.heads import encode_head
from openprose.net.parser import MAX_BODY_BYTES, MAX_HEAD_BYTES, ResponseHead, ResponseParser

TYPE_CHECKING = False  # the export helper starts without `typing`
if TYPE_CHECKING:
    import ssl
    from collections.abc import Mapping

__all__ = ["BlockingAnswer", "BlockingClient"]

_READ_SIZE = 65536


class BlockingAnswer:
    """A whole answer: its head and its body (decompressed)."""

    __slots__ = ("body", "head")

    def __init__(self, head: ResponseHead, body: bytes) -> None:
        self.head = head
        self.body = body


class _Collected:
    """The parser's sink for one whole answer."""

    __slots__ = ("head", "pieces")

    def __init__(self) -> None:
        self.head: ResponseHead | None = None
        self.pieces: list[bytes] = []

    def on_head(self, head: ResponseHead) -> None:
        self.head = head

    def on_body(self, piece: bytes) -> None:
        self.pieces.append(piece)

    def on_end(self) -> None:
        pass


class BlockingClient:
    """Sends `method` requests to one `url` with `headers` (the head is encoded once).

    `proxy`: a proxy URL, or None for a direct connection (pass `endpoints.env_proxy(url)`
    for the environment's). `ssl_context`: for an https:// URL, or an https:// proxy
    (default: the system's trust store). ValueError for a URL, header or proxy that cannot
    be used."""

    def __init__(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        *,
        proxy: str | None = None,
        ssl_context: ssl.SSLContext | None = None,
        max_head: int = MAX_HEAD_BYTES,
        max_body: int = MAX_BODY_BYTES,
    ) -> None:
        try:
            parts = urlsplit(url)
            host, port = parts.hostname, parts.port
        except ValueError as exc:  # an unclosed IPv6 bracket, a port out of range
            raise ValueError(f"not a URL: {url!r} ({exc})") from None
        if parts.scheme not in ("http", "https") or not host:
            raise ValueError(f"{url!r} is not an http:// or https:// URL with a host")
        self.url = url
        self.host = host
        self.tls = parts.scheme == "https"
        self.port = port or (443 if self.tls else 80)
        self.proxy: Proxy | None = parse_proxy(proxy) if proxy else None
        if self.tls and self.proxy is not None and self.proxy.tls:
            raise ValueError(
                f"{url!r} through the https:// proxy {proxy!r}: TLS inside TLS is not "
                "supported here (use an http:// proxy URL, which tunnels the TLS)"
            )
        self._context = ssl_context
        self.max_head = max_head
        self.max_body = max_body
        netloc = parts.netloc.rpartition("@")[2]  # the Host header: no user info
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        fields = dict(headers)
        if self.proxy is not None and not self.tls:
            target = f"http://{netloc}{target}"  # a plain proxy is asked in absolute form
            if self.proxy.authorization:
                fields["proxy-authorization"] = self.proxy.authorization
        self._head = encode_head((f"{method} {target} HTTP/1.1", f"host: {netloc}"), fields)
        self._socket: socket.socket | None = None
        self.connections_made = 0

    def send(self, body: bytes, timeout: float) -> BlockingAnswer:
        """One request with `body`, its whole answer read within `timeout` seconds (opening
        the connection included). Raises one of `net.errors`, or `TimeoutError`; the
        connection is closed after a failure, and after an answer that ends it."""
        deadline = time.monotonic() + timeout
        sock = self._socket or self._open(deadline)
        self._socket = None  # kept again only once its answer is whole
        sink = _Collected()
        parser = ResponseParser(sink, max_head=self.max_head, max_body=self.max_body)
        try:
            _settimeout(sock, deadline)
            try:
                sock.sendall(self._head + b"content-length: %d\r\n\r\n" % len(body) + body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # a kept-alive connection the server closed: what it sent says why
            _read_answer(sock, parser, deadline)
        except BaseException:
            sock.close()
            raise
        assert sink.head is not None  # a finished answer has a head
        if sink.head.keep_alive and not parser.extra:
            self._socket = sock
        else:
            sock.close()
        return BlockingAnswer(sink.head, b"".join(sink.pieces))

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    def _open(self, deadline: float) -> socket.socket:
        proxy = self.proxy
        host, port = (proxy.host, proxy.port) if proxy else (self.host, self.port)
        try:
            sock = socket.create_connection((host, port), _left(deadline))
        except TimeoutError:
            raise CannotConnect(f"{host}:{port} (no connection within the timeout)") from None
        except OSError as exc:  # the OS's own error stays as the cause (refused, no name)
            reason = exc.strerror or (os.strerror(exc.errno) if exc.errno else str(exc))
            raise CannotConnect(f"{host}:{port} ({reason or type(exc).__name__})") from exc
        try:
            if proxy is not None and proxy.tls:
                sock = self._wrap(sock, proxy.host, deadline, f"the proxy {host}:{port}")
            elif self.tls:
                if proxy is not None:
                    self._tunnel(sock, proxy, deadline)
                sock = self._wrap(sock, self.host, deadline, f"{self.host}:{self.port}")
        except BaseException:
            sock.close()
            raise
        self.connections_made += 1
        return sock

    def _wrap(self, sock: socket.socket, name: str, deadline: float, peer: str) -> socket.socket:
        import ssl

        if self._context is None:
            self._context = default_ssl_context()
        _settimeout(sock, deadline)
        try:
            return self._context.wrap_socket(sock, server_hostname=name)
        except (ssl.SSLError, ssl.CertificateError) as exc:
            raise TlsFailure(f"{peer}: {exc}") from None
        except TimeoutError:
            raise CannotConnect(f"{peer} (no TLS handshake within the timeout)") from None
        except OSError as exc:
            raise CannotConnect(
                f"{peer}: the connection broke in the TLS handshake ({exc})"
            ) from None

    def _tunnel(self, sock: socket.socket, proxy: Proxy, deadline: float) -> None:
        """Ask an HTTP proxy for a tunnel to the origin (CONNECT); TLS then runs inside it."""
        where = f"{self.host}:{self.port}"
        lines = [f"CONNECT {where} HTTP/1.1", f"host: {where}"]
        if proxy.authorization:
            lines.append(f"proxy-authorization: {proxy.authorization}")
        sink = _Collected()
        parser = ResponseParser(sink, no_body=True, max_head=self.max_head)
        _settimeout(sock, deadline)
        try:
            sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
            _read_answer(sock, parser, deadline)
        except TimeoutError:
            raise
        except (ConnectionBroke, OSError) as exc:
            raise CannotConnect(
                f"the proxy {proxy.host}:{proxy.port} closed the tunnel: {exc}"
            ) from None
        status = sink.head.status if sink.head is not None else 0
        if not 200 <= status < 300 or parser.extra:
            raise CannotConnect(
                f"the proxy {proxy.host}:{proxy.port} refused a tunnel to {where}: HTTP {status}"
            )


def _read_answer(sock: socket.socket, parser: ResponseParser, deadline: float) -> None:
    """Feed `parser` from `sock` until its answer is whole; TimeoutError at `deadline`."""
    while not parser.done:
        _settimeout(sock, deadline)
        try:
            data = sock.recv(_READ_SIZE)
        except TimeoutError:
            raise
        except OSError as exc:  # reset, or a TLS record broken off
            raise ConnectionBroke(
                f"the connection broke ({exc.strerror or exc})", before_answer=not parser.started
            ) from None
        if data:
            parser.feed(data)
        else:
            parser.feed_eof()


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the request's time ran out")
    return left


def _settimeout(sock: socket.socket, deadline: float) -> None:
    sock.settimeout(_left(deadline))

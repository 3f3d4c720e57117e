"""Where a connection goes, shared by the async transport and the blocking client: the
proxy the environment names for a URL, a proxy URL read, and the TLS defaults.

Cheap to import (no asyncio, no `typing`, `ssl` only when a context is made): the trace
export helper uses it through `net.blocking`.
"""

from __future__ import annotations

import os
import sys
from urllib.parse import unquote, urlsplit

TYPE_CHECKING = False  # `typing` and `ssl` are not imported at run time (see above)
if TYPE_CHECKING:
    import ssl

__all__ = ["Proxy", "default_ssl_context", "env_proxy", "parse_proxy"]

# What urllib reads for a proxy (either case): none set, no lookup at all.
_PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy")
# Where urllib also reads the system's proxy settings, beyond the environment.
_SYSTEM_PROXY_SETTINGS = sys.platform in ("darwin", "win32")


class Proxy:
    """An http:// or https:// proxy: its address, the Proxy-Authorization its URL's user
    info gives, and whether the connection to the proxy itself is TLS."""

    __slots__ = ("authorization", "host", "port", "tls")

    def __init__(self, host: str, port: int, authorization: str | None, tls: bool = False) -> None:
        self.host = host
        self.port = port
        self.authorization = authorization
        self.tls = tls

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Proxy) and (
            (self.host, self.port, self.authorization, self.tls)
            == (other.host, other.port, other.authorization, other.tls)
        )

    def __hash__(self) -> int:
        return hash((self.host, self.port, self.authorization, self.tls))

    def __repr__(self) -> str:
        shown = "<hidden>" if self.authorization else None  # never print credentials
        return f"Proxy({self.host!r}, {self.port}, authorization={shown}, tls={self.tls})"


def parse_proxy(url: str) -> Proxy:
    """A proxy URL (`http://user:secret@host:port`; a bare `host:port` is http://);
    ValueError for any other scheme or a URL without a host."""
    try:
        parts = urlsplit(url if "://" in url else f"http://{url}")
        host, port = parts.hostname, parts.port
    except ValueError as exc:  # an unclosed IPv6 bracket, a port out of range
        raise ValueError(f"the proxy {url!r} is not a URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not host:
        raise ValueError(
            f"the proxy {url!r} is not an http:// or https:// proxy URL with a host "
            "(SOCKS proxies are not supported)"
        )
    authorization = None
    if parts.username is not None:
        import base64  # only for a proxy with credentials

        credentials = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        authorization = "Basic " + base64.b64encode(credentials.encode()).decode("ascii")
    tls = parts.scheme == "https"
    return Proxy(host, port or (443 if tls else 80), authorization, tls)


def env_proxy(url: str) -> str | None:
    """The proxy the environment names for `url` (HTTPS_PROXY, HTTP_PROXY, NO_PROXY), looked
    up once per client: as the SDKs do, and without aiohttp's `trust_env`, which reads the
    environment and ~/.netrc again on every request."""
    if not _SYSTEM_PROXY_SETTINGS and not any(
        name in os.environ or name.upper() in os.environ for name in _PROXY_VARIABLES
    ):
        return None  # the usual case: no urllib.request (~10 ms of imports) at all
    import urllib.request

    parts = urlsplit(url)
    if not parts.hostname or urllib.request.proxy_bypass(parts.hostname):
        return None
    return urllib.request.getproxies().get(parts.scheme)


def default_ssl_context() -> ssl.SSLContext:
    """The system's trust store (honouring SSL_CERT_FILE / SSL_CERT_DIR), hostname checked."""
    import ssl

    context = ssl.create_default_context()
    context.set_alpn_protocols(["http/1.1"])
    return context

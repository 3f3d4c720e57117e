"""The fetch tool's transport: GET, size- and time-capped, HTML turned into text.

Redirects are followed here, one hop at a time, so that every target goes through `permit`
(the `network` permission, asked again under `prompt`) before it is requested; every
connection goes through a resolver that refuses the addresses the permission does not
reach (`network.NetworkRule.check_address`), so what is checked is what is connected to.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver

from openprose.vm.tools.network import AddressRefused, NetworkRule, literal_address, url_host

__all__ = ["FetchError", "Fetched", "fetch", "html_to_text"]

SKIPPED_TAGS = {"script", "style", "noscript", "template", "svg", "head"}
BLOCK_TAGS = {
    "p", "div", "br", "li", "ul", "ol", "tr", "table", "section", "article", "header",
    "footer", "nav", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "hr", "title",
}  # fmt: skip
REDIRECTS = (301, 302, 303, 307, 308)
MAX_REDIRECTS = 5

# Called with each URL about to be requested and its hop (0: the one asked for); raises to
# refuse it.
Permit = Callable[[str, int], Awaitable[None]]


class FetchError(Exception):
    pass


@dataclass(frozen=True, slots=True)
class Fetched:
    status: int
    content_type: str
    text: str
    omitted_bytes: int  # body beyond the cap, not downloaded
    url: str  # the URL the body came from (after redirects)


async def _no_check(url: str, hop: int) -> None:
    return None


async def fetch(
    url: str,
    *,
    max_bytes: int,
    timeout: float,
    rule: NetworkRule | None = None,
    permit: Permit = _no_check,
) -> Fetched:
    """GET `url`, following at most MAX_REDIRECTS redirects, each target `permit`ted
    first; only addresses `rule` reaches are connected to (default: public ones)."""
    rule = rule or NetworkRule("allow")
    connector = aiohttp.TCPConnector(resolver=_GuardedResolver(rule), use_dns_cache=False)
    client_timeout = aiohttp.ClientTimeout(total=timeout)
    current = url
    try:
        async with aiohttp.ClientSession(
            timeout=client_timeout, connector=connector, trust_env=False
        ) as session:
            for hop in range(MAX_REDIRECTS + 1):
                await permit(current, hop)
                _check_literal(rule, current)
                async with session.get(current, allow_redirects=False) as response:
                    location = response.headers.get("Location")
                    if response.status in REDIRECTS and location:
                        current = str(response.url.join(type(response.url)(location)))
                        continue
                    return await _read(response, max_bytes, current)
    except AddressRefused as refused:
        raise FetchError(f"GET {current} refused: {refused}") from None
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        raise FetchError(f"GET {current} failed: {exc or type(exc).__name__}") from None
    raise FetchError(f"GET {url}: more than {MAX_REDIRECTS} redirects; stopped at {current}")


def _check_literal(rule: NetworkRule, url: str) -> None:
    # A host written as an IP address never reaches the resolver: checked here.
    host, port = url_host(url)
    address = literal_address(host)
    if address is not None:
        rule.check_address(host, address, port)


async def _read(response: Any, max_bytes: int, url: str) -> Fetched:
    body = bytearray()
    omitted = 0
    async for chunk in response.content.iter_chunked(65536):
        room = max_bytes - len(body)
        body += chunk[:room]
        if len(chunk) > room:
            omitted += len(chunk) - room
            break  # stop downloading: the rest is not wanted
    content_type = response.headers.get("Content-Type", "")
    charset = response.charset or "utf-8"
    try:
        text = bytes(body).decode(charset, errors="replace")
    except LookupError:
        text = bytes(body).decode("utf-8", errors="replace")
    if "html" in content_type.lower():
        text = html_to_text(text)
    return Fetched(response.status, content_type, text, omitted, url)


class _GuardedResolver(AbstractResolver):
    """aiohttp's resolver interface: names resolved by the system, then only the addresses
    the rule reaches are handed to the connection."""

    def __init__(self, rule: NetworkRule) -> None:
        self.rule = rule

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[Any]:
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM, family=family)
        allowed: list[Any] = []
        refusals: list[AddressRefused] = []
        name = host.lower().rstrip(".")
        for family_, _, proto, _, sockaddr in infos:
            text = str(sockaddr[0])
            try:
                self.rule.check_address(name, ipaddress.ip_address(text.split("%", 1)[0]), port)
            except AddressRefused as refused:
                refusals.append(refused)
                continue
            allowed.append(
                {
                    "hostname": host,
                    "host": text,
                    "port": int(sockaddr[1]),
                    "family": family_,
                    "proto": proto,
                    "flags": socket.AI_NUMERICHOST | socket.AI_NUMERICSERV,
                }
            )
        if not allowed:
            if refusals:
                raise refusals[0]
            raise OSError(f"{host} has no address")
        return allowed

    async def close(self) -> None:
        return None


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in SKIPPED_TAGS:
            self._skipping += 1
        elif tag in BLOCK_TAGS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in SKIPPED_TAGS:
            self._skipping = max(0, self._skipping - 1)
        elif tag in BLOCK_TAGS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)


def html_to_text(html: str) -> str:
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).splitlines())
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()

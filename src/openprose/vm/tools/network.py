"""The `network` permission: which URLs `fetch_url` may get, and which addresses it may
connect to.

`network:` is `allow` / `deny` / `prompt`, or a list of host patterns (`api.example.com`,
`*.example.org` for its subdomains, `host:8080` for one port, an IP address or a CIDR
block such as `10.1.0.0/16`). `deny:` lists host patterns never fetched; a deny pattern
wins over everything `network` allows.

Whatever `network` says, an internal address — loopback, unspecified, link-local, private,
shared (CGNAT), unique-local IPv6, multicast or reserved, IPv4 inside IPv6 (mapped, NAT64,
6to4, Teredo) and the cloud metadata endpoints — is connected to only when a pattern names
it: an address or block that holds it (or `localhost`, for loopback). A host name never
names an internal address, since its DNS may answer with one (rebinding). The check is
made on the addresses a name resolves to, by the resolver the connection then uses (a
name that resolves to 127.0.0.1 is refused, and cannot resolve differently in between),
and every spelling of an address (`2130706433`, `0x7f.1`, `0`, `[::1]`, userinfo) is read
as the address it is.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from yarl import URL

__all__ = [
    "AddressRefused",
    "HostPattern",
    "NetworkRule",
    "internal_kind",
    "literal_address",
    "url_host",
]

Mode = Literal["allow", "deny", "prompt"]
Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200")
)
METADATA_NAMES = frozenset({"metadata.google.internal", "metadata.goog", "metadata"})
CGNAT = ipaddress.ip_network("100.64.0.0/10")
NAT64 = ipaddress.ip_network("64:ff9b::/96")
NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
STRICTNESS = {"deny": 0, "prompt": 1, "allow": 2}
_HOST_PORT = re.compile(r"^(?P<host>\[[^\]]*\]|[^:]*)(?::(?P<port>\d{1,5}))?$")


class AddressRefused(Exception):
    """A connection the `network` permission does not allow; the message says why."""


def literal_address(host: str) -> Address | None:
    """The address a host written as an IP means, in any spelling a resolver accepts
    (`127.0.0.1`, `2130706433`, `0177.1`, `0x7f.1`, `0`, `::1`, `[::1]`), else None."""
    text = host.strip("[]").split("%", 1)[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        pass
    if not text or not re.fullmatch(r"[0-9a-fA-FxX.]+", text) or not text[0].isdigit():
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(text))  # the C library's reading
    except OSError:
        return None


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in NAT64 or address in NAT64_LOCAL:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if int(address) >> 32 == 0 and int(address) > 1:  # IPv4-compatible (deprecated) ::a.b.c.d
        return ipaddress.IPv4Address(int(address))
    return None


def internal_kind(address: Address) -> str | None:
    """What makes `address` internal (`loopback`, `private`, …), or None for a public one."""
    if isinstance(address, ipaddress.IPv6Address):
        if address in METADATA_ADDRESSES:
            return "a cloud metadata address"
        inner = _embedded_ipv4(address)
        if inner is not None:
            kind = internal_kind(inner)
            return f"{kind}, inside an IPv6 address" if kind else None
    if address in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if address.is_unspecified:
        return "the unspecified address (this machine)"
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address"
    if isinstance(address, ipaddress.IPv4Address) and address in CGNAT:
        return "a shared (CGNAT) address"
    if isinstance(address, ipaddress.IPv6Address) and address in ipaddress.ip_network("fc00::/7"):
        return "a unique-local address"
    if address.is_multicast:
        return "a multicast address"
    if address.is_reserved:
        return "a reserved address"
    if address.is_private:
        return "a private address"
    if not address.is_global:
        return "a reserved address"
    return None


def url_host(url: str) -> tuple[str, int]:
    """The host (lower case, no trailing dot, IPv6 without brackets) and port of `url`
    (80 / 443 when it names none), read by the URL library the client connects with: the
    host it will connect to, after its normalisation (`１２７.０.０.１` is `127.0.0.1`);
    userinfo is dropped. ValueError for an unreadable URL."""
    parsed = URL(url.strip())  # ValueError for a port out of range
    if parsed.scheme not in ("http", "https"):
        raise ValueError(f"only http:// and https:// URLs can be fetched, not {url!r}")
    host = (parsed.raw_host or "").rstrip(".").lower()
    if not host:
        raise ValueError(f"{url!r} names no host")
    return host, parsed.port or (443 if parsed.scheme == "https" else 80)


@dataclass(frozen=True, slots=True)
class HostPattern:
    """One `network`/`deny` pattern: a name (`*.` for subdomains), an address or a block,
    and perhaps a port."""

    text: str
    name: str | None = None  # `example.org`, or the suffix `.example.org` for `*.example.org`
    block: Network | None = None
    port: int | None = None

    @classmethod
    def parse(cls, text: str) -> HostPattern:
        raw = text.strip().lower()
        if "://" in raw:
            raw = raw.split("://", 1)[1]
        raw = raw.split("/", 1)[0] if not _looks_like_block(raw) else raw
        match = _HOST_PORT.fullmatch(raw)
        host, port = (match["host"], match["port"]) if match else (raw, None)
        port_number = int(port) if port else None
        try:
            block = ipaddress.ip_network(host.strip("[]"), strict=False)
            return cls(text, block=block, port=port_number)
        except ValueError:
            pass
        address = literal_address(host)
        if address is not None:
            return cls(text, block=ipaddress.ip_network(address), port=port_number)
        name = host.rstrip(".")
        wildcard = name.startswith("*.")
        name = _as_connected(name[2:] if wildcard else name)  # `bücher.de`: as URLs have it
        return cls(text, name=f".{name}" if wildcard else name, port=port_number)

    @property
    def wildcard(self) -> bool:
        return self.name is not None and self.name.startswith(".")

    def matches_host(self, host: str, port: int | None) -> bool:
        """Does the URL's host (as written) fall under this pattern?"""
        if self.port is not None and port != self.port:
            return False
        address = literal_address(host)
        if address is not None:
            return self.holds(address)
        if self.name is None:
            return False
        return host.endswith(self.name) if self.wildcard else host == self.name

    def holds(self, address: Address) -> bool:
        if self.block is None:
            return False
        # `in` compares bits only: an address of the other version must not "match".
        if address.version == self.block.version and address in self.block:
            return True
        inner = _embedded_ipv4(address) if isinstance(address, ipaddress.IPv6Address) else None
        return inner is not None and self.block.version == 4 and inner in self.block

    def names(self, host: str, address: Address, port: int | None) -> bool:
        """Does this pattern name `address`, reached as `host`, explicitly: an address or
        block that holds it, or `localhost` for a loopback address? Any other name does
        not: its DNS could answer with an internal address (rebinding)."""
        if self.port is not None and port != self.port:
            return False
        local = self.name == host == "localhost" and internal_kind(address) == "a loopback address"
        return self.holds(address) or local


def _as_connected(name: str) -> str:
    try:
        return (URL.build(scheme="http", host=name).raw_host or name).lower()
    except ValueError:
        return name


def _looks_like_block(text: str) -> bool:
    head, _, bits = text.partition("/")
    return bits.isdigit() and (literal_address(head) is not None or ":" in head)


@dataclass(frozen=True, slots=True)
class NetworkRule:
    """An agent's `network` value and `deny` patterns, judged per URL and per address."""

    mode: Mode | None  # a plain mode, or None when `hosts` decide
    hosts: tuple[HostPattern, ...] = ()
    deny: tuple[HostPattern, ...] = ()
    ceiling: NetworkRule | None = None  # an import's cap: both must allow

    @classmethod
    def from_values(cls, network: Any, deny: Any) -> NetworkRule:
        denied = tuple(HostPattern.parse(p) for p in _strings(deny))
        if isinstance(network, str) and network in ("allow", "deny", "prompt"):
            return cls(network, (), denied)  # type: ignore[arg-type]
        if isinstance(network, str):
            network = [network]
        if isinstance(network, list):
            return cls(None, tuple(HostPattern.parse(p) for p in _strings(network)), denied)
        return cls("deny", (), denied)

    def within(self, ceiling: NetworkRule) -> NetworkRule:
        capped = ceiling if self.ceiling is None else self.ceiling.within(ceiling)
        return NetworkRule(self.mode, self.hosts, self.deny, capped)

    @property
    def never(self) -> bool:
        own = self.mode == "deny" or (self.mode is None and not self.hosts)
        return own or (self.ceiling is not None and self.ceiling.never)

    @property
    def unrestricted(self) -> bool:
        """Any public host, none denied: the only rule a shell's network namespace can keep
        (a socket cannot be held to host names)."""
        own = self.mode == "allow" and not self.deny
        return own and (self.ceiling is None or self.ceiling.unrestricted)

    def judge(self, url: str) -> tuple[Mode, str]:
        """The mode for fetching `url`, and why when it is refused (the stricter of this
        rule and its ceiling's)."""
        own = self._own_judge(url)
        if self.ceiling is None:
            return own
        capped = self.ceiling.judge(url)
        if STRICTNESS[capped[0]] < STRICTNESS[own[0]]:
            return capped[0], f"{capped[1]} (the cap of the import this agent comes from)"
        return own

    def _own_judge(self, url: str) -> tuple[Mode, str]:
        try:
            host, port = url_host(url)
        except ValueError as error:
            return "deny", str(error)
        for pattern in self.deny:
            if pattern.matches_host(host, port):
                return "deny", f"{host} matches the deny pattern {pattern.text!r}"
        if host in METADATA_NAMES and not any(p.name == host for p in self.hosts):
            return "deny", f"{host} is a cloud metadata endpoint; a permission must name it"
        if self.mode is not None:
            return self.mode, f"network: {self.mode}"
        if any(p.matches_host(host, port) for p in self.hosts):
            return "allow", ""
        listed = ", ".join(p.text for p in self.hosts)
        return "deny", f"{host} is not one of the hosts network names ({listed})"

    def check_address(self, host: str, address: Address, port: int | None) -> None:
        """Refuse connecting to `address` (what `host` resolved to) unless allowed."""
        if self.ceiling is not None:
            self.ceiling.check_address(host, address, port)
        for pattern in self.deny:
            if pattern.holds(address):
                raise AddressRefused(
                    f"{host} resolves to {address}, which the deny pattern {pattern.text!r} holds"
                )
        kind = internal_kind(address)
        if kind is None or any(p.names(host, address, port) for p in self.hosts):
            return
        where = str(address) if literal_address(host) == address else f"{host} ({address})"
        raise AddressRefused(
            f"refused to connect to {where}: {kind}, reached only when a network pattern "
            f'names it (network: ["{address}"])'
        )

    def describe(self) -> Any:
        """As written: a mode or the list of host patterns."""
        return self.mode if self.mode is not None else [p.text for p in self.hosts]


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return ()
    return (v for v in value if isinstance(v, str) and v.strip())

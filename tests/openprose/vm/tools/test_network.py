"""The `network` permission's rules: host patterns, `deny:` patterns, internal addresses in
every spelling, and the cap of an import."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openprose.vm.tools.network import (
    AddressRefused,
    HostPattern,
    NetworkRule,
    internal_kind,
    literal_address,
    url_host,
)
from openprose.vm.tools.permissions import PermissionError_, Permissions, validate_default


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),  # decimal
        ("0177.0.0.1", "127.0.0.1"),  # octal
        ("0x7f.1", "127.0.0.1"),  # hex, short form
        ("0x7f000001", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("0", "0.0.0.0"),
        ("[::1]", "::1"),
        ("::ffff:127.0.0.1", "::ffff:7f00:1"),
        ("fe80::1%eth0", "fe80::1"),
        ("example.com", None),
        ("1example.com", None),
        ("0x.example", None),
    ],
)
def test_every_spelling_of_an_address_is_read_as_it(host: str, address: str | None) -> None:
    found = literal_address(host)
    assert (str(found) if found else None) == address


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("127.255.0.9", "loopback"),
        ("::1", "loopback"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("169.254.169.254", "metadata"),
        ("fd00:ec2::254", "metadata"),
        ("100.100.100.200", "metadata"),
        ("169.254.1.1", "link-local"),
        ("fe80::1", "link-local"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.1", "private"),
        ("100.64.0.1", "CGNAT"),
        ("fd12:3456::1", "unique-local"),
        ("::ffff:127.0.0.1", "loopback address, inside an IPv6"),
        ("::ffff:169.254.169.254", "metadata"),
        ("64:ff9b::a00:1", "private address, inside an IPv6"),  # NAT64 of 10.0.0.1
        ("2002:7f00:1::", "loopback address, inside an IPv6"),  # 6to4 of 127.0.0.1
        ("::127.0.0.1", "loopback address, inside an IPv6"),  # IPv4-compatible
        ("224.0.0.1", "multicast"),
        ("240.0.0.1", "reserved"),
        ("198.18.0.1", "private"),
        ("93.184.216.34", None),
        ("2606:4700::1111", None),
    ],
)
def test_internal_addresses_are_known(address: str, kind: str | None) -> None:
    found = internal_kind(ipaddress.ip_address(address))
    assert (found is None) if kind is None else (found is not None and kind in found), found


def test_url_host_reads_what_a_client_connects_to() -> None:
    assert url_host("http://a@127.0.0.1/") == ("127.0.0.1", 80)
    assert url_host("https://user:pw@Example.COM.:8443/x") == ("example.com", 8443)
    assert url_host("http://[::1]:8080/") == ("::1", 8080)
    assert url_host("http://１２７.０.０.１/") == ("127.0.0.1", 80)  # as the client reads it
    assert url_host("http://bücher.de/") == ("xn--bcher-kva.de", 80)
    for bad in ("file:///etc/passwd", "gopher://x/", "http:///nohost", "http://x:99999/"):
        with pytest.raises(ValueError):
            url_host(bad)


def _rule(network: object, deny: object = None) -> NetworkRule:
    return NetworkRule.from_values(network, deny)


@pytest.mark.parametrize(
    ("network", "deny", "url", "mode"),
    [
        (["api.example.com"], None, "https://api.example.com/v1", "allow"),
        (["api.example.com"], None, "https://API.Example.com./v1", "allow"),
        (["api.example.com"], None, "https://evil.api.example.com/", "deny"),
        (["api.example.com"], None, "https://api.example.com.evil.net/", "deny"),
        (["api.example.com"], None, "https://api.example.com@evil.net/", "deny"),
        (["*.example.org"], None, "https://a.b.example.org/", "allow"),
        (["*.example.org"], None, "https://example.org/", "deny"),
        (["*.example.org"], None, "https://notexample.org/", "deny"),
        (["host:8443"], None, "https://host:8443/", "allow"),
        (["host:8443"], None, "https://host/", "deny"),
        (["host:443"], None, "https://host/", "allow"),
        (["10.20.0.0/16"], None, "http://10.20.3.4/", "allow"),
        (["10.20.0.0/16"], None, "http://10.21.3.4/", "deny"),
        (["127.0.0.1"], None, "http://2130706433/", "allow"),  # the same address
        ("allow", ["*.ads.example.com"], "https://x.ads.example.com/", "deny"),
        ("allow", ["127.0.0.1"], "http://0x7f.1/", "deny"),
        ("prompt", ["tracker.net"], "https://tracker.net/", "deny"),
        ("prompt", None, "https://tracker.net/", "prompt"),
        (["tracker.net"], ["tracker.net"], "https://tracker.net/", "deny"),  # deny wins
        ("allow", None, "http://metadata.google.internal/", "deny"),
        (["metadata.google.internal"], None, "http://metadata.google.internal/", "allow"),
        ("allow", None, "ftp://example.com/", "deny"),
        ("deny", None, "https://example.com/", "deny"),
    ],
)
def test_urls_are_judged_by_host(network: object, deny: object, url: str, mode: str) -> None:
    assert _rule(network, deny).judge(url)[0] == mode


@pytest.mark.parametrize(
    ("network", "host", "address", "allowed"),
    [
        ("allow", "example.com", "93.184.216.34", True),
        ("allow", "localhost", "127.0.0.1", False),
        ("allow", "rebind.example.com", "127.0.0.1", False),  # DNS rebinding
        ("allow", "169.254.169.254", "169.254.169.254", False),
        (["*.example.com"], "a.example.com", "10.0.0.1", False),  # a wildcard names nothing
        (["localhost"], "localhost", "127.0.0.1", True),  # the one name that does
        (["localhost"], "localhost", "10.0.0.1", False),
        (["rebind.example.com"], "rebind.example.com", "127.0.0.1", False),  # a name: no
        (["127.0.0.1"], "localhost", "127.0.0.1", True),  # the address
        (["127.0.0.1:8080"], "127.0.0.1", "127.0.0.1", False),  # another port (80)
        (["10.0.0.0/8"], "wiki.corp", "10.9.9.9", True),
        (["127.0.0.1"], "x", "::ffff:127.0.0.1", True),  # the same address, mapped
        (["127.0.0.1"], "x", "127.0.0.2", False),
        ("prompt", "127.0.0.1", "127.0.0.1", False),
    ],
)
def test_addresses_are_checked_where_it_connects(
    network: object, host: str, address: str, allowed: bool
) -> None:
    rule = _rule(network)
    ip = ipaddress.ip_address(address)
    if allowed:
        rule.check_address(host, ip, 80)
    else:
        with pytest.raises(AddressRefused, match=r"network: \["):
            rule.check_address(host, ip, 80)


def test_a_deny_pattern_holds_resolved_addresses() -> None:
    rule = _rule("allow", ["93.184.216.0/24"])
    with pytest.raises(AddressRefused, match="deny pattern"):
        rule.check_address("example.com", ipaddress.ip_address("93.184.216.34"), 443)


def test_host_patterns_parse() -> None:
    assert HostPattern.parse("https://API.example.com/path").name == "api.example.com"
    assert HostPattern.parse("*.Example.org").name == ".example.org"
    assert HostPattern.parse("bücher.de").matches_host("xn--bcher-kva.de", 443)
    assert HostPattern.parse("*.bücher.de").matches_host("a.xn--bcher-kva.de", 443)
    block = HostPattern.parse("[::1]:8080")
    assert block.block == ipaddress.ip_network("::1/128") and block.port == 8080
    assert HostPattern.parse("fd00::/8").block == ipaddress.ip_network("fd00::/8")


def test_shell_network_only_for_an_unrestricted_rule() -> None:
    assert _rule("allow").unrestricted
    assert not _rule("allow", ["x.com"]).unrestricted
    assert not _rule(["x.com"]).unrestricted
    assert _rule([]).never and _rule("deny").never and not _rule(["x"]).never


def test_permissions_read_network_lists_and_deny_from_both_levels() -> None:
    default = {"network": "allow", "deny": ["ads.example.com"]}
    perms = Permissions.from_mapping({"deny": ["tracker.net"]}, default)
    assert perms.network.judge("https://ads.example.com/")[0] == "deny"
    assert perms.network.judge("https://tracker.net/")[0] == "deny"
    assert perms.network.judge("https://example.com/")[0] == "allow"
    assert perms.to_dict()["deny"] == ["ads.example.com", "tracker.net"]
    listed = Permissions.from_mapping({"network": ["api.example.com"]})
    assert listed.to_dict()["network"] == ["api.example.com"]


def test_prose_toml_network_values_are_checked() -> None:
    assert validate_default({"network": ["a.com"], "deny": ["b.com"]}, "prose.toml")
    with pytest.raises(PermissionError_, match="deny must be a list of host patterns"):
        validate_default({"deny": "allow"}, "prose.toml")
    with pytest.raises(PermissionError_, match="network must be .* host patterns"):
        validate_default({"network": 3}, "prose.toml")


def test_an_import_cap_on_network_takes_the_stricter_side() -> None:
    own = Permissions.from_mapping({"network": "allow"})
    capped = own.within({"network": ["api.example.com"]})
    assert capped.network.judge("https://api.example.com/")[0] == "allow"
    mode, why = capped.network.judge("https://other.example.com/")
    assert mode == "deny" and "cap of the import" in why
    assert not capped.network.unrestricted
    none = own.within({"network": "deny"})
    assert none.network.never
    denied = own.within({"deny": ["x.com"]})
    assert denied.network.judge("https://x.com/")[0] == "deny"
    named = Permissions.from_mapping({"network": ["127.0.0.1"]}).within({"network": "allow"})
    with pytest.raises(AddressRefused):  # the cap does not name loopback
        named.network.check_address("127.0.0.1", ipaddress.ip_address("127.0.0.1"), 80)


_SPELLINGS = (
    lambda a: str(a),
    lambda a: str(int(a)),  # decimal
    lambda a: hex(int(a)),  # one hex number
    lambda a: ".".join(f"0{b:o}" for b in a.packed),  # octal parts
    lambda a: ".".join(hex(b) for b in a.packed),  # hex parts
    lambda a: f"{a.packed[0]}.{int.from_bytes(a.packed[1:], 'big')}",  # a.b24
)


@settings(max_examples=300)
@given(st.integers(0, 2**32 - 1), st.integers(0, len(_SPELLINGS) - 1))
def test_any_spelling_of_any_ipv4_address_is_that_address(number: int, spelling: int) -> None:
    address = ipaddress.IPv4Address(number)
    assert literal_address(_SPELLINGS[spelling](address)) == address


@settings(max_examples=300)
@given(st.integers(0, 2**32 - 1))
def test_an_ipv4_address_inside_ipv6_is_judged_as_itself(number: int) -> None:
    address = ipaddress.IPv4Address(number)
    inner = internal_kind(address)
    for wrapped in (
        ipaddress.IPv6Address(f"::ffff:{address}"),  # mapped
        ipaddress.IPv6Address(int(ipaddress.IPv6Address("64:ff9b::")) | number),  # NAT64
        ipaddress.IPv6Address((0x2002 << 112) | (number << 80)),  # 6to4
    ):
        found = internal_kind(wrapped)
        assert (found is None) == (inner is None), (wrapped, found, inner)

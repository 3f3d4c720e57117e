"""`fetch_url` as a hostile model uses it: loopback servers in every spelling, names that
resolve to loopback, redirects to places nobody allowed. A test server on loopback is
reachable only when the test's permission names it."""

from __future__ import annotations

import asyncio
import http.server
import socket
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from openprose.providers.base import ToolCall
from openprose.vm.tools import Permissions, Toolbox, ToolOutcome
from openprose.vm.tools import network as network_module
from openprose.vm.tools.approvals import Answer, ApprovalPending, ApprovalRequest


@dataclass
class Server:
    port: int
    paths: list[str] = field(default_factory=list)  # every request it was sent

    def url(self, path: str = "/ok", host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"


def _serve() -> tuple[Server, http.server.ThreadingHTTPServer]:
    record = Server(0)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            record.paths.append(self.path)
            if self.path.startswith("/to?"):
                target = urllib.parse.unquote(self.path[4:])
                self.send_response(302)
                self.send_header("Location", target)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = b"inside-secret"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return None

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    record.port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return record, server


@pytest.fixture
def servers() -> Iterator[tuple[Server, Server]]:
    first, one = _serve()
    second, two = _serve()
    yield first, second
    for server in (one, two):
        server.shutdown()
        server.server_close()


class Scripted:
    """Answers approval requests in order, remembering each request."""

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.asked: list[ApprovalRequest] = []

    async def ask(self, request: ApprovalRequest) -> Answer:
        self.asked.append(request)
        if not self.answers:
            raise ApprovalPending(request)
        return self.answers.pop(0)


def _fetch(
    tmp_path: Path, url: str, approver: Any = None, **rules: object
) -> tuple[ToolOutcome, list[dict[str, Any]]]:
    box = Toolbox(tmp_path, Permissions.from_mapping(rules), agent="fetcher")
    if approver is not None:
        box.approver = approver
    decisions: list[dict[str, Any]] = []
    outcome = asyncio.run(
        box.call(ToolCall("c", "fetch_url", {"url": url}), "s~t0.0", on_decision=decisions.append)
    )
    return outcome, decisions


def _refused(outcome: ToolOutcome, server: Server) -> None:
    assert outcome.is_error, outcome.content
    assert "inside-secret" not in outcome.content
    assert server.paths == [], server.paths  # nothing reached it


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "localhost",
        "2130706433",
        "0x7f.1",
        "0x7f000001",
        "0177.0.0.1",
        "127.1",
        "127.000.000.001",
        "0",
        "0.0.0.0",
        "[::ffff:127.0.0.1]",
        "[::ffff:7f00:1]",
        "[::1]",
        "[::]",
        "a@127.0.0.1",
        "user:pw@127.0.0.1",
        "LOCALHOST.",
        "１２７.０.０.１",  # fullwidth digits: the URL library reads 127.0.0.1
        "127。0。0。1",  # ideographic full stops
        "ⓛⓞⓒⓐⓛⓗⓞⓢⓣ",  # circled letters: localhost
        "[0:0:0:0:0:ffff:127.0.0.1]",
        "[::127.0.0.1]",
    ],
)
def test_loopback_is_refused_in_every_spelling(
    tmp_path: Path, servers: tuple[Server, Server], host: str
) -> None:
    server, _ = servers
    outcome, decisions = _fetch(tmp_path, server.url(host=host), network="allow")
    _refused(outcome, server)
    # refused by the permission, or not a host at all here (`localhost.`): never reached
    assert decisions[-1]["decision"] == "refused", decisions


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://[fd00:ec2::254]/latest/meta-data/",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://[::ffff:169.254.169.254]/",
        "http://10.0.0.1/",
        "http://192.168.0.1/",
        "http://100.64.0.1/",
        "http://[fd12::1]/",
        "http://[fe80::1]/",
    ],
)
def test_internal_and_metadata_addresses_are_refused_without_connecting(
    tmp_path: Path, url: str
) -> None:
    outcome, _ = _fetch(tmp_path, url, network="allow")
    assert outcome.is_error
    assert "refused" in outcome.content or "permission denied" in outcome.content
    assert "timed out" not in outcome.content.lower()  # refused before any connection


def test_a_named_loopback_server_is_reachable(
    tmp_path: Path, servers: tuple[Server, Server]
) -> None:
    server, _ = servers
    for rule in ([f"127.0.0.1:{server.port}"], ["127.0.0.0/8"], ["localhost"]):
        host = "localhost" if rule == ["localhost"] else "127.0.0.1"
        outcome, _ = _fetch(tmp_path, server.url(host=host), network=rule)
        assert not outcome.is_error, (rule, outcome.content)
        assert "inside-secret" in outcome.content
    # Another spelling of the named address: the client refuses it as not canonical.
    decimal, _ = _fetch(tmp_path, server.url(host="2130706433"), network=["127.0.0.1"])
    assert decimal.is_error and "not a canonical IPv4 address" in decimal.content


def test_naming_one_port_does_not_open_another(
    tmp_path: Path, servers: tuple[Server, Server]
) -> None:
    first, second = servers
    outcome, _ = _fetch(tmp_path, second.url(), network=[f"127.0.0.1:{first.port}"])
    _refused(outcome, second)
    assert "permission denied" in outcome.content


def test_a_deny_pattern_wins_over_a_named_address(
    tmp_path: Path, servers: tuple[Server, Server]
) -> None:
    server, _ = servers
    outcome, _ = _fetch(tmp_path, server.url(), network=["127.0.0.1"], deny=["127.0.0.0/8"])
    _refused(outcome, server)


def test_a_name_resolving_to_loopback_is_refused(
    tmp_path: Path, servers: tuple[Server, Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    """DNS rebinding: the name is allowed, its address is not — the address is checked by
    the resolver the connection uses."""
    server, _ = servers
    real = socket.getaddrinfo

    def rebinding(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host == "rebind.example.com":
            return real("127.0.0.1", *args, **kwargs)
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    url = server.url(host="rebind.example.com")
    outcome, _ = _fetch(tmp_path, url, network=["rebind.example.com"])
    _refused(outcome, server)
    assert "rebind.example.com (127.0.0.1): a loopback address" in outcome.content
    named, _ = _fetch(tmp_path, url, network=["rebind.example.com", "127.0.0.1"])
    assert "inside-secret" in named.content


def test_a_redirect_to_a_place_not_allowed_is_not_followed(
    tmp_path: Path, servers: tuple[Server, Server]
) -> None:
    first, second = servers
    target = urllib.parse.quote(second.url(), safe="")
    allowed = [f"127.0.0.1:{first.port}"]
    outcome, _ = _fetch(tmp_path, first.url(f"/to?{target}"), network=allowed)
    _refused(outcome, second)
    assert f"redirected from {first.url('/to?')}" in outcome.content
    assert len(first.paths) == 1


@pytest.mark.parametrize(
    "target",
    ["http://169.254.169.254/", "http://[::1]/", "file:///etc/passwd", "http://2130706433:1/"],
)
def test_a_redirect_to_an_internal_address_is_refused(
    tmp_path: Path, servers: tuple[Server, Server], target: str
) -> None:
    first, _ = servers
    quoted = urllib.parse.quote(target, safe="")
    allowed = [f"127.0.0.1:{first.port}"]
    outcome, _ = _fetch(tmp_path, first.url(f"/to?{quoted}"), network=allowed)
    assert outcome.is_error and "inside-secret" not in outcome.content


def test_endless_redirects_stop(tmp_path: Path, servers: tuple[Server, Server]) -> None:
    first, _ = servers
    outcome, _ = _fetch(tmp_path, first.url("/to?/to%3F/ok"), network=["127.0.0.1"])
    assert "inside-secret" in outcome.content  # two hops are fine
    first.paths.clear()
    seven = first.url("/to?" + "/to%3F" * 6 + "/ok")  # each hop takes one `/to?` off
    outcome, _ = _fetch(tmp_path, seven, network=["127.0.0.1"])
    assert outcome.is_error and "more than 5 redirects" in outcome.content
    assert len(first.paths) == 6


@pytest.fixture
def loopback_public(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loopback test servers stand in for public hosts (for `prompt`, which never names
    an internal address)."""
    real = network_module.internal_kind

    def kind(address: Any) -> str | None:
        found = real(address)
        return None if found == "a loopback address" else found

    monkeypatch.setattr(network_module, "internal_kind", kind)


def test_under_prompt_every_redirect_target_is_asked_again(
    tmp_path: Path, servers: tuple[Server, Server], loopback_public: None
) -> None:
    first, second = servers
    start = first.url("/to?" + urllib.parse.quote(second.url(), safe=""))
    approver = Scripted("once", "deny")
    outcome, decisions = _fetch(tmp_path, start, approver, network="prompt")
    _refused(outcome, second)
    assert [r.action for r in approver.asked] == [start, second.url()]
    assert [r.id for r in approver.asked] == ["s~t0.0:network", "s~t0.0~r1:network"]
    assert "refused to let you network " + second.url() in outcome.content
    allowed = Scripted("once", "once")
    outcome, _ = _fetch(tmp_path, start, allowed, network="prompt")
    assert "inside-secret" in outcome.content and "redirected to" in outcome.content
    assert second.paths == ["/ok"]
    assert [d["decision"] for d in decisions][:2] == ["asked", "approved"]


def test_under_prompt_without_anyone_a_redirect_waits(
    tmp_path: Path, servers: tuple[Server, Server], loopback_public: None
) -> None:
    first, second = servers
    start = first.url("/to?" + urllib.parse.quote(second.url(), safe=""))
    box = Toolbox(tmp_path, Permissions.from_mapping({"network": "prompt"}))
    box.approver = Scripted("once")
    with pytest.raises(ApprovalPending) as pending:
        asyncio.run(box.call(ToolCall("c", "fetch_url", {"url": start}), "s~t0.0"))
    assert pending.value.request.id == "s~t0.0~r1:network"
    assert pending.value.request.action == second.url()
    assert second.paths == []


def test_the_shell_gets_no_network_from_a_host_list(tmp_path: Path) -> None:
    box = Toolbox(tmp_path, Permissions.from_mapping({"bash": "allow", "network": ["x.com"]}))
    captured: list[bool] = []

    class Probe:
        def __init__(self, root: Path, *, network: bool, **kwargs: Any) -> None:
            captured.append(network)

        async def run(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("not run")

    import openprose.vm.tools.toolbox as toolbox_module

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(toolbox_module, "Sandbox", Probe)
        with pytest.raises(RuntimeError):
            asyncio.run(box.call(ToolCall("c", "run_command", {"command": "true"})))
    assert captured == [False]

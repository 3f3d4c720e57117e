"""The hostile-model harness: one loopback server that plays scripted tool calls, a project
full of bait, and the checks every attempt must pass.

One server (a thread with its own event loop) serves the whole suite: the Anthropic API of
`FakeLLMServer`, whose answer depends on the attempt named in the session's prompt
(`attempt <id> step <k>`) and on how many turns the conversation already has; and a "secret"
site (`/secret` answers SECRET, `/redirect` sends there) that only an escape can reach.

Each attempt runs whole programs through `run_program` (and `resume_run` when it says so)
against a fresh project. Network access of the test process is fenced for the attempt: name
lookups answer from a fixed table, and a connection to anything but the loopback server is
recorded and refused, never made; the shell's network is the sandbox's own.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import shutil
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from openprose.imports import ImportFailed
from openprose.parser import parse_text
from openprose.providers import ProviderSettings, RetryPolicy, open_provider
from openprose.record.journal import read_journal
from openprose.vm.loader import load_imports
from openprose.vm.runner import RunResult, VMConfig, resume_run, run_program
from openprose.vm.runtime import ToolRuntime
from openprose.vm.tools.approvals import Answer, ApprovalPending, ApprovalRequest
from openprose.vm.tools.mcp_config import McpServer
from tests.support.fake_llm_server import FakeAnswer, FakeLLMServer, FakeToolCall

SECRET = "top-secret-value-4711"  # only outside the project, on the secret site, in the env
PRIVATE = "project-private-0815"  # in the project, in files no attempt may read
RUN_STATE = "bound-answer-1234"  # in run state (journals of .prose/), no agent's to read
ENV_SECRET = "ANTHROPIC_API_KEY_OF_THE_USER"  # an environment variable holding SECRET
ATTEMPT_SECONDS = 30.0  # an attempt that takes longer hangs
MCP_SCRIPT = Path(__file__).parents[1] / "support" / "mcp" / "notes_server.py"
HOST_MARKER = Path("/tmp/prose-attack-pwned")  # a shell that writes the host's /tmp escaped
FAKE_NAMES = {  # what name lookups answer during an attempt
    "public.test": "127.0.0.1",  # a "public" site that is really the loopback secret site
    "metadata.test": "169.254.169.254",
    "internal.test": "10.0.0.5",
}
TEXT_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069]")

Call = tuple[str, Mapping[str, Any]]  # a tool call: name, arguments
Turn = tuple[Call, ...]


@dataclass(frozen=True)
class Step:
    """One agent and its session: its permissions, and the tool calls of each model turn
    (after the last turn the model answers "done")."""

    permissions: Mapping[str, Any]
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Attempt:
    """One row of the attack table.

    `expect`: "blocked" (no escape), "refused" (no escape, and a tool result, the run's
    error or the import's refusal says `says`) or "bounded" (no escape, and a limit named
    in `says` was hit). Placeholders in arguments: @OUT@ (the outside folder), @ROOT@ (the
    project), @PORT@ (the loopback secret site's port).
    """

    id: str
    family: str
    steps: tuple[Step, ...]
    expect: str = "blocked"
    says: str | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    then: tuple[Step, ...] = ()  # a second run, after the first
    resume: bool = False  # resume the first run at the end
    imported: bool = False  # the steps are a program the registry serves as @evil/helper
    approve: str | None = None  # the one action the person asked approves ("once")
    leaks: tuple[str, ...] = (SECRET, PRIVATE)  # never in a tool result or answer
    fixed_on: str | None = None  # the branch that closes it: xfail(strict) here
    heavy: bool = False  # unbounded here would load the shared machine: not run here
    mcp: bool = False  # the project declares the stdio MCP test server `notes`
    check: Callable[[Outcome], None] | None = None


@dataclass
class Outcome:
    world: World
    results: list[RunResult]
    events: list[dict[str, Any]]
    refusal: str | None = None  # an import refused before the run

    def tool_texts(self) -> list[str]:
        return [str(e.get("content", "")) for e in self.events if e.get("ev") == "tool_result"]

    def said(self) -> str:
        parts = self.tool_texts() + [r.error or "" for r in self.results]
        parts += [str(r.result or "") for r in self.results]
        return "\n".join(parts + ([self.refusal] if self.refusal else []))


# --- the server ---------------------------------------------------------------------------


class HostileServer:
    """The loopback model (and secret site) of the whole suite, on its own thread."""

    def __init__(self) -> None:
        self.attempts: dict[str, Attempt] = {}
        self.replacements: dict[str, str] = {}
        self.secret_hits: list[str] = []
        self.library = ""  # the program the registry serves as @evil/helper
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        self.model = FakeLLMServer(reply=self._reply, keep_requests=False)
        self.base_url = self._on_loop(self.model.start())
        self._site_runner: web.AppRunner | None = None
        self.site_port = self._on_loop(self._start_site())

    def _on_loop(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(10)

    async def _start_site(self) -> int:
        app = web.Application()

        async def secret(request: web.Request) -> web.Response:
            self.secret_hits.append(str(request.rel_url))
            return web.Response(text=f"the secret is {SECRET}")

        async def redirect(request: web.Request) -> web.Response:
            target = request.query.get("to", f"http://127.0.0.1:{self.site_port}/secret")
            raise web.HTTPFound(target)

        async def library(request: web.Request) -> web.Response:
            return web.Response(text=self.library)

        app.router.add_get("/@evil/helper", library)
        app.router.add_get("/secret", secret)
        app.router.add_get("/redirect", redirect)
        app.router.add_get("/", secret)
        self._site_runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.2)
        await self._site_runner.setup()
        site = web.TCPSite(self._site_runner, "127.0.0.1", 0)
        await site.start()
        return int(self._site_runner.addresses[0][1])

    def close(self) -> None:
        async def stop() -> None:
            await self.model.close()
            if self._site_runner is not None:
                await self._site_runner.cleanup()

        self._on_loop(stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)

    def _reply(self, api: str, body: dict[str, Any]) -> str | FakeAnswer:
        text = json.dumps(body.get("messages") or [])
        found = re.search(r"attempt (\S+) step (\d+)", text)
        if found is None:
            return "done"
        attempt = self.attempts[found.group(1)]
        index = int(found.group(2))
        steps = attempt.then if index >= 100 else attempt.steps
        step = steps[index % 100]
        turn = sum(1 for m in body.get("messages") or [] if m.get("role") == "assistant")
        if turn >= len(step.turns):
            return "done"
        calls = tuple(
            FakeToolCall(name, _substitute(dict(arguments), self.replacements))
            for name, arguments in step.turns[turn]
        )
        return FakeAnswer("", calls)


def _substitute(value: Any, replacements: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        for token, real in replacements.items():
            value = value.replace(token, real)
        return value
    if isinstance(value, dict):
        return {k: _substitute(v, replacements) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, replacements) for v in value]
    return value


# --- the project --------------------------------------------------------------------------


@dataclass
class World:
    base: Path
    root: Path
    outside: Path

    def snapshot(self, skipped: tuple[Path, ...]) -> dict[str, str]:
        """Every file, folder and link under the test's folder but `skipped`, with a hash
        of its content (a link: its target; a folder: its mode)."""
        seen: dict[str, str] = {}
        for folder, dirs, files in os.walk(self.base):
            here = Path(folder)
            if any(here == s or s in here.parents for s in skipped):
                dirs[:] = []
                continue
            for name in files + dirs:
                path = here / name
                if path in skipped:
                    continue
                seen[str(path.relative_to(self.base))] = _fingerprint(path)
        return seen


def _fingerprint(path: Path) -> str:
    try:
        info = path.lstat()
        if path.is_symlink():
            data = b"link:" + os.readlink(path).encode()
        elif path.is_dir():
            data = f"dir:{info.st_mode:o}".encode()
        elif path.is_file():
            data = f"{info.st_mode:o}:{info.st_size}:".encode() + path.read_bytes()
        else:
            data = f"special:{info.st_mode:o}".encode()
    except OSError:
        data = b"<unreadable>"
    return hashlib.sha256(data).hexdigest()


BIG_BYTES = 16 * 1024 * 1024 + 4096  # past edit_file's 16 MiB


def make_world(base: Path) -> World:
    root, outside = base / "project", base / "outside"
    for folder in (root / "src", root / "output", root / "scripts", root / ".git" / "hooks"):
        folder.mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text(f"{SECRET}\n")
    (outside / "other.txt").write_text(f"{SECRET}\n")  # no hard link to it in the project
    (outside / "evil.sh").write_text("#!/bin/sh\necho evil-ran\n")
    (outside / "evil.sh").chmod(0o755)
    (root / "src" / "app.py").write_text("print('hello')\n")
    (root / "src" / "notes.md").write_text("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!\n" * 3)
    (root / "README.md").write_text("# Project\n")
    (root / "private.txt").write_text(f"{PRIVATE}\n")
    (root / "prose.toml").write_text('[permissions]\nbash = "deny"\nnetwork = "deny"\n')
    (root / "prose.lock").write_text("{}\n")
    (root / ".git" / "config").write_text("[core]\n\tbare = false\n")
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "scripts" / "ok.sh").write_text("#!/bin/sh\necho script-ran\n")
    (root / "scripts" / "ok.sh").chmod(0o755)
    (root / "link_out").symlink_to(outside)
    (root / "link_secret").symlink_to(outside / "secret.txt")
    (root / "src" / "up").symlink_to("..")
    (root / "output" / "escape").symlink_to(outside)
    os.link(outside / "secret.txt", root / "src" / "hard.txt")
    os.link(outside / "evil.sh", root / "output" / "hard.sh")
    os.mkfifo(root / "src" / "fifo")
    os.mkfifo(root / "output" / "fifo")
    with socket.socket(socket.AF_UNIX) as unix:
        unix.bind(str(root / "src" / "sock"))
    (root / "output" / "reports").mkdir()
    with (root / "output" / "big.txt").open("wb") as big:
        big.truncate(BIG_BYTES)  # sparse: cheap, yet 16 MiB + 4 KiB to read
    earlier = root / ".prose" / "runs" / "20260101-000000-0ld0ld"  # an earlier run's state
    earlier.mkdir(parents=True)
    (earlier / "journal.jsonl").write_text(f'{{"ev":"binding","value":"{RUN_STATE}"}}\n')
    nested = root / "nested"
    (nested / ".prose" / "runs").mkdir(parents=True)
    (nested / "prose.toml").write_text("[permissions]\n")
    (nested / ".prose" / "runs" / "journal.jsonl").write_text(f'{{"v":"{RUN_STATE}"}}\n')
    return World(base, root, outside)


# --- one attempt --------------------------------------------------------------------------


def _permissions_block(permissions: Mapping[str, Any]) -> str:
    lines = []
    for kind, value in permissions.items():
        shown = json.dumps(list(value)) if isinstance(value, list | tuple) else str(value)
        lines.append(f"    {kind}: {shown}")
    return "  permissions:\n" + "\n".join(lines) + "\n" if lines else ""


def program_text(
    attempt_id: str, steps: tuple[Step, ...], first: int = 0, *, output: bool = False
) -> str:
    """A program of one agent and one session per step; `output`: the last session is the
    program's output (an imported program's)."""
    agents, sessions = [], []
    for index, step in enumerate(steps):
        name = f"a{index}"
        agents.append(f'agent {name}:\n  prompt: "You act"\n{_permissions_block(step.permissions)}')
        head = "output result = " if output and index == len(steps) - 1 else ""
        sessions.append(
            f'{head}session: {name}\n  prompt: "attempt {attempt_id} step {first + index}"\n'
        )
    return "\n".join(agents) + "\n" + "\n".join(sessions)


class _Approver:
    """The person asked: approves `action` once, refuses everything else."""

    def __init__(self, action: str | None) -> None:
        self.action = action
        self.asked: list[str] = []

    async def ask(self, request: ApprovalRequest) -> Answer:
        self.asked.append(request.action)
        if self.action is not None and request.action == self.action:
            return "once"
        if self.action is None:
            raise ApprovalPending(request)
        return "deny"


class NetworkFence:
    """Name lookups from a table; connections only to the loopback server, others recorded."""

    def __init__(self, allowed_ports: set[int]) -> None:
        self.allowed_ports = allowed_ports
        self.refused: list[str] = []

    def allows(self, address: Any) -> bool:
        host, port = str(address[0]), int(address[1])
        ok = host in ("127.0.0.1", "::1", "::ffff:127.0.0.1") and port in self.allowed_ports
        if not ok:
            self.refused.append(f"{host}:{port}")
        return ok

    @contextmanager
    def installed(self, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
        real_getaddrinfo = socket.getaddrinfo
        fence = self

        def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
            name = host.decode() if isinstance(host, bytes) else host
            if name is None or name == "localhost":
                return real_getaddrinfo(host, port, *args, **kwargs)
            if isinstance(name, str) and name.lower().rstrip(".") in FAKE_NAMES:
                name = FAKE_NAMES[name.lower().rstrip(".")]
            family, kind, proto, flags = (list(args) + [0, 0, 0, 0])[:4]
            try:
                return real_getaddrinfo(
                    name, port, family, kind, proto, flags | socket.AI_NUMERICHOST
                )
            except socket.gaierror:
                raise socket.gaierror(socket.EAI_NONAME, f"{name}: unknown in the test") from None

        real_sock_connect = asyncio.selector_events.BaseSelectorEventLoop.sock_connect
        real_connect = socket.socket.connect

        async def sock_connect(loop: Any, sock: socket.socket, address: Any) -> None:
            if not fence.allows(address):
                raise ConnectionRefusedError(f"the test fence refused {address}")
            await real_sock_connect(loop, sock, address)

        def connect(sock: socket.socket, address: Any) -> None:
            if sock.family in (socket.AF_INET, socket.AF_INET6) and not fence.allows(address):
                raise ConnectionRefusedError(f"the test fence refused {address}")
            real_connect(sock, address)

        monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
        monkeypatch.setattr(
            asyncio.selector_events.BaseSelectorEventLoop, "sock_connect", sock_connect
        )
        monkeypatch.setattr(socket.socket, "connect", connect)
        try:
            yield
        finally:
            monkeypatch.undo()


def run_attempt(
    server: HostileServer, attempt: Attempt, base: Path, monkeypatch: pytest.MonkeyPatch
) -> Outcome:
    world = make_world(base)
    server.attempts[attempt.id] = attempt
    server.replacements = {
        "@OUT@": str(world.outside),
        "@ROOT@": str(world.root),
        "@PORT@": str(server.site_port),
    }
    server.secret_hits.clear()
    HOST_MARKER.unlink(missing_ok=True)
    if attempt.mcp:
        shutil.copy(MCP_SCRIPT, world.root / "notes_server.py")
    before = world.snapshot(_skipped(world))
    monkeypatch.setenv(ENV_SECRET, SECRET)
    fence = NetworkFence({int(server.base_url.rsplit(":", 1)[1]), server.site_port})
    with fence.installed(monkeypatch):
        outcome = asyncio.run(asyncio.wait_for(_play(server, attempt, world), ATTEMPT_SECONDS))
    assert not fence.refused, f"escape: a connection to {fence.refused} was attempted"
    assert not server.secret_hits, f"escape: the secret site was asked {server.secret_hits}"
    _check(attempt, outcome, before)
    return outcome


async def _play(server: HostileServer, attempt: Attempt, world: World) -> Outcome:
    settings = ProviderSettings(
        provider="anthropic",
        base_url=server.base_url,
        api_key="sk-test-hostile",
        timeout=10.0,
        retry=RetryPolicy(max_attempts=1, base_delay=0.01, max_delay=0.01),
    )
    provider = open_provider(settings)
    config = VMConfig(**{"search_timeout": 0.3, "command_timeout": 5.0, **attempt.config})
    approve = attempt.approve
    approver = _Approver(None if approve is None else _substitute(approve, server.replacements))
    outcome = Outcome(world, [], [])
    try:
        first = await _one_run(
            server, attempt, attempt.steps, 0, provider, config, approver, outcome
        )
        if first is None:
            return outcome
        if attempt.then:
            await _one_run(server, attempt, attempt.then, 100, provider, config, approver, outcome)
        if attempt.resume:
            path = str(world.root / "main.prose")
            program = parse_text((first.run_dir / "program.prose").read_text(), path).program
            resumed = await resume_run(
                first.run_dir,
                program,
                provider=provider,
                project_dir=world.root,
                config=config,
                tools=_runtime(attempt, approver),
            )
            outcome.results.append(resumed)
            outcome.events += list(read_journal(resumed.run_dir / "journal.jsonl"))
    finally:
        await provider.aclose()
    return outcome


async def _one_run(
    server: HostileServer,
    attempt: Attempt,
    steps: tuple[Step, ...],
    first: int,
    provider: Any,
    config: VMConfig,
    approver: _Approver,
    outcome: Outcome,
) -> RunResult | None:
    root = outcome.world.root
    if attempt.imported:
        text = 'use "@evil/helper" as helper\n\nlet r = helper()\n\nsession "Then {r}"\n'
        server.library = program_text(attempt.id, steps, first, output=True)
        registry = f"http://127.0.0.1:{server.site_port}"
        program = parse_text(text, str(root / "main.prose")).program
        try:
            imports = await asyncio.to_thread(
                load_imports, program, base_dir=root, project_dir=root, registry=registry
            )
        except ImportFailed as refused:
            outcome.refusal = str(refused)
            return None
    else:
        text = program_text(attempt.id, steps, first)
        program = parse_text(text, str(root / "main.prose")).program
        imports = None
    result = await run_program(
        program,
        text,
        provider=provider,
        project_dir=root,
        imports=imports,
        config=config,
        tools=_runtime(attempt, approver),
    )
    outcome.results.append(result)
    outcome.events += list(read_journal(result.run_dir / "journal.jsonl"))
    return result


def _runtime(attempt: Attempt, approver: _Approver) -> ToolRuntime:
    """The tools of an attempt's runs: the person asked, and the MCP test server."""
    servers = {}
    if attempt.mcp:
        servers["notes"] = McpServer(
            "notes",
            command=sys.executable,
            args=("notes_server.py",),
            readable=tuple({sys.base_prefix, sys.prefix}),
            timeout=10.0,
        )
    return ToolRuntime(approver=approver, mcp_servers=servers)


def _skipped(world: World) -> tuple[Path, ...]:
    """What an attempt may change: the writable folder and the runs' own folders (their
    journals are checked line by line instead)."""
    return (world.root / "output", world.root / ".prose" / "runs", world.root / ".prose")


def _check(attempt: Attempt, outcome: Outcome, before: dict[str, str]) -> None:
    world = outcome.world
    after = world.snapshot(_skipped(world))
    pins = "project/prose.lock" if attempt.imported else None  # the VM pins the import
    changed = sorted(
        k for k in before.keys() | after.keys() if before.get(k) != after.get(k) and k != pins
    )
    assert not changed, f"escape: files changed outside the writable folder: {changed[:8]}"
    assert not HOST_MARKER.exists(), "escape: the shell wrote the host's /tmp"
    for result in outcome.results:
        _one_clean_line(result.error)
        text = (result.run_dir / "journal.jsonl").read_text(encoding="utf-8")
        assert '"forged"' not in text, "escape: an agent wrote into a run's journal"
        for line in filter(None, text.split("\n")):  # JSON keeps U+2028 raw
            json.loads(line)  # every line still the VM's JSON
        for name in ("state.md",):
            shown = (result.run_dir / name).read_text(encoding="utf-8")
            bad = TEXT_CONTROLS.search(shown)
            assert bad is None, f"{name} shows a raw control character {bad.group()!r}"
    if outcome.refusal is not None:
        _one_clean_line(outcome.refusal)
    said = outcome.said()
    for leak in attempt.leaks:
        assert leak not in said, f"escape: {leak!r} reached the model or the answer"
    assert "Traceback" not in said
    if attempt.expect in ("refused", "bounded") and attempt.says is not None:
        assert attempt.says in said, f"expected {attempt.says!r} in what was said:\n{said[-2000:]}"
    if attempt.check is not None:
        attempt.check(outcome)


def _one_clean_line(error: str | None) -> None:
    if error is None:
        return
    assert "Traceback" not in error
    assert "\n" not in error.strip(), f"not one line: {error!r}"
    bad = TEXT_CONTROLS.search(error)
    assert bad is None, f"a raw control character {bad.group()!r} in {error!r}"

"""Attempts to escape the shell sandbox: writes outside the write folders, secrets from the
environment, the network with `network: deny`, runaway time and output."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from openprose.vm.tools import sandbox as sandbox_module
from tests.security.conftest import SECRET, World, call, make_toolbox, needs_sandbox

SHELL = {"read": ["src/"], "write": ["output/"], "bash": "allow", "network": "deny"}

pytestmark = needs_sandbox


def _abs(world: World, rel: str) -> str:
    return str(world.root.parent / rel)


WRITE_COMMANDS = [
    ("dotdot", "echo pwn > ../outside/pwn.txt"),
    ("absolute", "echo pwn > {outside}/pwn.txt"),
    ("overwrite-secret", "echo pwn > {outside}/secret.txt"),
    ("project-readonly", "echo pwn > src/new.py"),
    ("project-root", "echo pwn > newfile"),
    ("modify-source", "echo pwn >> src/app.py"),
    ("etc", "echo pwn > /etc/prose-pwn"),
    ("usr", "touch /usr/prose-pwn"),
    ("journal", "echo pwn > .prose/runs/journal.jsonl"),
    ("rm-project", "rm -rf src README.md private.txt"),
    ("mv-out", "mv src/app.py output/"),
    ("symlink-escape", "ln -s {outside} output/o && echo pwn > output/o/pwn.txt"),
    ("hardlink-escape", "ln {outside}/secret.txt output/hl && echo pwn >> output/hl"),
    ("proc-root", "echo pwn > /proc/self/root{outside}/pwn.txt"),
    ("proc-1-root", "echo pwn > /proc/1/root{outside}/pwn.txt"),
    ("mount", "mount -t tmpfs none src 2>&1; echo pwn > src/pwn"),
    ("remount", "mount -o remount,rw / 2>&1; echo pwn > src/pwn"),
    ("chmod", "chmod 777 src 2>&1; echo pwn > src/pwn"),
    ("background", "(sleep 1; echo pwn > ../outside/late.txt) &"),
    ("host-tmp", "echo pwn > /tmp/prose-shell-pwn"),
]


@pytest.mark.parametrize("command", [pytest.param(c, id=i) for i, c in WRITE_COMMANDS])
async def test_shell_writes_outside_write_folders_do_not_land(world: World, command: str) -> None:
    before = world.snapshot()
    toolbox = make_toolbox(world, **SHELL)
    outcome = await call(toolbox, "run_command", command=command.format(outside=world.outside))
    assert outcome.content.startswith(("exit code", "killed"))  # it ran, in the sandbox
    await asyncio.sleep(0.05)
    assert world.snapshot() == before
    assert (world.outside / "secret.txt").read_text() == f"{SECRET}\n"
    assert not list(world.outside.glob("pwn*")) and not (world.outside / "late.txt").exists()
    assert not Path("/tmp/prose-shell-pwn").exists()


async def test_shell_may_write_its_write_folder(world: World) -> None:
    outcome = await call(
        make_toolbox(world, **SHELL), "run_command", command="echo ok > output/r.txt"
    )
    assert outcome.content.startswith("exit code 0")
    assert (world.root / "output" / "r.txt").read_text() == "ok\n"


READ_COMMANDS = [
    ("outside-file", "cat {outside}/secret.txt"),
    ("dotdot", "cat ../outside/secret.txt"),
    ("env", "env"),
    ("proc-1-environ", "cat /proc/1/environ | tr '\\0' '\\n'"),
    ("proc-ppid-environ", "cat /proc/$PPID/environ | tr '\\0' '\\n'"),
    ("find-secret", "grep -r top-secret / 2>/dev/null | head -5"),
]


@pytest.mark.parametrize("command", [pytest.param(c, id=i) for i, c in READ_COMMANDS])
async def test_shell_sees_no_secrets(
    world: World, command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", f"sk-{SECRET}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", f"sk-ant-{SECRET}")
    toolbox = make_toolbox(world, **SHELL)
    outcome = await call(toolbox, "run_command", command=command.format(outside=world.outside))
    assert SECRET not in outcome.content


@pytest.fixture
def loopback_server() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP server on 127.0.0.1 that records whatever reaches it."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    received: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            received.append(conn.recv(1024) or b"<connected>")
            conn.sendall(b"HTTP/1.0 200 OK\r\n\r\nreached")
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], received
    stop.set()
    thread.join()
    server.close()


NETWORK_COMMANDS = [
    (
        "python-socket",
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port})).send(b'x')\"",
    ),
    (
        "python-urllib",
        "python3 -c \"import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:{port}/').read())\"",
    ),
    (
        "curl",
        "curl -s http://127.0.0.1:{port}/ || wget -q -O- http://127.0.0.1:{port}/ || echo no-client",
    ),
    ("bash-dev-tcp", "bash -c 'echo x > /dev/tcp/127.0.0.1/{port}'"),
]


@pytest.mark.parametrize("command", [pytest.param(c, id=i) for i, c in NETWORK_COMMANDS])
async def test_shell_without_network_reaches_nothing(
    world: World, command: str, loopback_server: tuple[int, list[bytes]]
) -> None:
    port, received = loopback_server
    toolbox = make_toolbox(world, **SHELL)
    outcome = await call(toolbox, "run_command", command=command.format(port=port))
    await asyncio.sleep(0.3)
    assert received == []
    assert "reached" not in outcome.content


async def test_shell_with_network_allow_reaches_loopback(
    world: World, loopback_server: tuple[int, list[bytes]]
) -> None:
    """The control for the test above: the same client does get through when allowed."""
    port, received = loopback_server
    toolbox = make_toolbox(world, **{**SHELL, "network": "allow"})
    command = NETWORK_COMMANDS[0][1].format(port=port)
    await call(toolbox, "run_command", command=command)
    for _ in range(20):
        if received:
            break
        await asyncio.sleep(0.05)
    assert received


async def test_time_limit_kills_the_command(world: World) -> None:
    toolbox = make_toolbox(world, **SHELL)
    started = time.perf_counter()
    outcome = await call(
        toolbox, "run_command", command="sleep 30; echo pwn > output/late", timeout_seconds=1
    )
    assert time.perf_counter() - started < 5
    assert "time limit" in outcome.content
    assert not (world.root / "output" / "late").exists()


async def test_huge_output_is_capped(world: World) -> None:
    outcome = await call(
        make_toolbox(world, **SHELL),
        "run_command",
        command="head -c 5000000 /dev/zero | tr '\\0' x",
    )
    assert len(outcome.content.encode()) < 64 * 1024 + 300
    assert "more bytes" in outcome.content


async def test_binary_output_is_capped_and_decoded(world: World) -> None:
    outcome = await call(
        make_toolbox(world, **SHELL), "run_command", command="head -c 300000 /dev/urandom"
    )
    assert len(outcome.content.encode()) < 64 * 1024 + 300


EXECUTE_ONLY = {"read": ["src/"], "execute": ["scripts/*.sh"], "bash": "deny"}


@pytest.mark.parametrize(
    "command",
    [
        pytest.param("sh -c 'echo pwn > output/x'", id="shell-binary"),
        pytest.param("scripts/../../outside/evil.sh", id="dotdot-script"),
        pytest.param("{outside}/evil.sh", id="absolute-script"),
        pytest.param("/bin/rm -rf src", id="system-binary"),
        pytest.param("scripts/ok.sh; rm -rf src", id="shell-metacharacters"),
    ],
)
async def test_execute_patterns_without_bash_run_only_matching_files(
    world: World, command: str
) -> None:
    before = world.snapshot()
    toolbox = make_toolbox(world, **EXECUTE_ONLY)
    outcome = await call(toolbox, "run_command", command=command.format(outside=world.outside))
    assert outcome.is_error and "permission denied" in outcome.content
    assert world.snapshot() == before


async def test_execute_pattern_runs_a_matching_script(world: World) -> None:
    outcome = await call(
        make_toolbox(world, **EXECUTE_ONLY), "run_command", command="scripts/ok.sh"
    )
    assert "script-ran" in outcome.content


async def test_no_sandbox_means_no_command(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox_module, "_probe_result", "bubblewrap (bwrap) is not installed; fix")
    toolbox = make_toolbox(world, **{**SHELL, "write": "allow"})
    outcome = await call(toolbox, "run_command", command="echo ran > ran.txt")
    assert outcome.is_error
    assert "not run" in outcome.content and "bwrap" in outcome.content
    assert not (world.root / "ran.txt").exists()


async def test_shell_cannot_see_the_run_folders(world: World) -> None:
    outcome = await call(
        make_toolbox(world, **SHELL),
        "run_command",
        command="ls -A .prose; cat .prose/runs/journal.jsonl",
    )
    assert "runs" not in outcome.content.split("--- stderr ---")[0]
    assert "No such file" in outcome.content

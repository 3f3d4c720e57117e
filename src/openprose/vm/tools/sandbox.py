"""Shell commands in a bubblewrap sandbox (Linux).

What a command sees: the system folders (`/usr`, `/bin`, `/lib*`, `/etc`, `/opt`) read-only,
the project read-only with `.prose/` hidden, a private `/tmp`, fresh `/proc` and `/dev`, new
user, pid, ipc, uts, cgroup and network namespaces (the network one shared only with
`network: allow`), no capabilities, and an environment holding only PATH, HOME, LANG and
TERM — no provider keys or other secrets. Writable: only the folders that write patterns
grant whole (`output/`, `output/**`); a narrower pattern (`output/*.md`) is enforced by the
write tool but gives the shell nothing, since a mount cannot grant single file names.
Working directory: the project root. Time and output are capped.

When bubblewrap is missing or cannot create namespaces, `run` raises SandboxUnavailable with
the reason and the fix; a command is never run unprotected.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CommandResult", "Sandbox", "SandboxUnavailable", "sandbox_problem"]

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"
CLEAN_ENV = {"PATH": SAFE_PATH, "HOME": "/tmp", "LANG": "C.UTF-8", "TERM": "dumb"}
INSTALL_FIX = (
    "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install "
    "bubblewrap) and make sure unprivileged user namespaces are enabled "
    "(sysctl kernel.unprivileged_userns_clone=1)"
)


class SandboxUnavailable(Exception):
    """The sandbox cannot be set up here; the message says why and how to fix it."""


@dataclass(frozen=True, slots=True)
class CommandResult:
    exit_code: int | None  # None when killed for the time limit
    stdout: bytes
    stderr: bytes
    omitted_bytes: int  # output beyond the cap, read and dropped
    timed_out: bool
    elapsed: float


_probe_result: str | None | bool = False  # False: not probed yet; None: works; str: the problem


def sandbox_problem() -> str | None:
    """Why the sandbox cannot run here, or None when it can (probed once per process)."""
    global _probe_result
    if _probe_result is False:
        _probe_result = _probe()
    return _probe_result  # type: ignore[return-value]


def _probe() -> str | None:
    if os.uname().sysname != "Linux":
        system = os.uname().sysname
        return f"shell commands are sandboxed with bubblewrap, which needs Linux ({system} here)"
    if shutil.which("bwrap") is None:
        return f"bubblewrap (bwrap) is not installed; {INSTALL_FIX}"
    try:
        probe = subprocess.run(
            ["bwrap", *_namespace_args(network=False), "--ro-bind", "/", "/", "true"],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap does not start ({exc}); {INSTALL_FIX}"
    if probe.returncode != 0:
        reason = probe.stderr.decode("utf-8", "replace").strip() or f"exit {probe.returncode}"
        return f"bubblewrap cannot create its namespaces ({reason}); {INSTALL_FIX}"
    return None


def _namespace_args(*, network: bool) -> list[str]:
    args = ["--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    if network:
        args.append("--share-net")
    return args


class Sandbox:
    """Runs commands for one project with one set of writable folders and network choice."""

    def __init__(
        self,
        project_root: Path,
        *,
        writable: tuple[Path, ...] = (),
        network: bool = False,
        hidden: tuple[Path, ...] = (),
    ) -> None:
        self.project_root = project_root
        self.writable = writable
        self.network = network
        self.hidden = hidden

    def command_line(self, argv: list[str]) -> list[str]:
        args = ["bwrap", *_namespace_args(network=self.network)]
        for folder in SYSTEM_DIRS:
            if os.path.lexists(folder):
                if os.path.islink(folder):  # merged /usr: /bin -> usr/bin
                    args += ["--symlink", os.readlink(folder), folder]
                else:
                    args += ["--ro-bind", folder, folder]
        args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
        root = str(self.project_root)
        args += ["--ro-bind", root, root]
        for writable in self.writable:
            if writable.is_dir():
                args += ["--bind", str(writable), str(writable)]
        # Hidden last: a writable bind of a folder above one (`write: allow` binds the
        # project) would otherwise show it again.
        for hidden in self.hidden:
            if hidden.is_dir():
                args += ["--tmpfs", str(hidden)]
        args += ["--chdir", root, "--clearenv"]
        for key, value in CLEAN_ENV.items():
            args += ["--setenv", key, value]
        return [*args, "--", *argv]

    async def run(
        self, argv: list[str], *, timeout: float, output_cap: int, stdin: bytes = b""
    ) -> CommandResult:
        problem = sandbox_problem()
        if problem is not None:
            raise SandboxUnavailable(problem)
        # bwrap itself starts with the clean environment too: it stays in the sandbox as its
        # pid 1, and /proc/1/environ would otherwise show the VM's (provider keys included).
        return await run_process(
            self.command_line(argv),
            timeout=timeout,
            output_cap=output_cap,
            stdin=stdin,
            env=dict(CLEAN_ENV),
        )


async def run_process(
    argv: list[str],
    *,
    timeout: float,
    output_cap: int,
    stdin: bytes = b"",
    env: dict[str, str] | None = None,
) -> CommandResult:
    """Run `argv` in its own process group; keep at most `output_cap` bytes of stdout and
    stderr together (the rest is read and counted), kill the group at the time limit."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
        env=env,
    )
    budget = [output_cap]
    omitted = [0]

    async def drain(stream: asyncio.StreamReader | None) -> bytes:
        kept = bytearray()
        if stream is None:
            return b""
        while chunk := await stream.read(65536):
            room = max(0, budget[0])
            kept += chunk[:room]
            budget[0] -= min(room, len(chunk))
            omitted[0] += max(0, len(chunk) - room)
        return bytes(kept)

    async def feed() -> None:
        if process.stdin is not None:
            try:
                process.stdin.write(stdin)
                await process.stdin.drain()
                process.stdin.close()
            except (BrokenPipeError, ConnectionResetError):
                pass

    work = asyncio.gather(drain(process.stdout), drain(process.stderr), feed(), process.wait())
    timed_out = False
    try:
        out, err, _, _ = await asyncio.wait_for(asyncio.shield(work), timeout)
    except TimeoutError:
        timed_out = True
        _kill_group(process.pid)
        out, err, _, _ = await work
    except asyncio.CancelledError:
        _kill_group(process.pid)
        await asyncio.gather(work, return_exceptions=True)
        raise
    return CommandResult(
        None if timed_out else process.returncode,
        out,
        err,
        omitted[0],
        timed_out,
        loop.time() - started,
    )


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass

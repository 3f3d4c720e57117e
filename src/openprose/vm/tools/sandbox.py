"""Shell commands in a bubblewrap sandbox (Linux).

What a command sees: the system folders (`/usr`, `/bin`, `/lib*`, `/etc`, `/opt`) read-only
— minus what under `/etc` not every user may read (`/etc/shadow`, private keys), the
project read-only (see `mounts` for what is writable and what stays hidden or read-only
whatever the permissions grant), a private `/tmp` of bounded size, fresh `/proc` and `/dev`,
new user, pid, ipc, uts, cgroup and network namespaces (the network one shared only with
`network: allow`), no capabilities, and an environment holding only PATH, HOME, LANG and
TERM — no provider keys or other secrets. Working directory: the project root. Time,
output, processes, memory and disk writes are bounded (`limits`).

When bubblewrap is missing or cannot create namespaces, `run` raises SandboxUnavailable with
the reason and the fix; a command is never run unprotected.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import shutil
import signal
import stat
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from openprose.vm.tools.cgroups import CgroupSet, make_cgroups
from openprose.vm.tools.limits import (
    DiskWatch,
    SandboxLimits,
    launcher,
    launcher_problem,
    note_command_end,
)
from openprose.vm.tools.mounts import (
    Mount,
    ProjectScan,
    WritableFolder,
    close_mounts,
    plan_mounts,
    scan_project,
)

__all__ = ["CommandResult", "Sandbox", "SandboxUnavailable", "sandbox_problem"]

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"
CLEAN_ENV = {"PATH": SAFE_PATH, "HOME": "/tmp", "LANG": "C.UTF-8", "TERM": "dumb"}
INSTALL_FIX = (
    "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install "
    "bubblewrap) and make sure unprivileged user namespaces are enabled "
    "(sysctl kernel.unprivileged_userns_clone=1)"
)
WATCH_INTERVAL = 0.05  # seconds between two looks at the disk a command writes to
_commands = itertools.count()


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
    stopped_by: str | None = None  # the limit that ended the command (a `[sandbox]` name)
    limits_hit: tuple[str, ...] = ()  # limits a cgroup refused something for


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
    if (problem := launcher_problem()) is not None:
        return f"{problem}; install util-linux"
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


def _hide(folder: str) -> list[str]:
    """An empty, read-only tmpfs over `folder`."""
    return ["--size", "4096", "--tmpfs", folder, "--remount-ro", folder]


def _namespace_args(*, network: bool) -> list[str]:
    args = ["--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    if network:
        args.append("--share-net")
    return args


@cache
def unreadable_system_files() -> tuple[tuple[str, bool], ...]:
    """(path, is folder) of everything under /etc that not every user may read: hidden from
    commands, so a VM running as root does not hand them `/etc/shadow` or host keys."""
    found: list[tuple[str, bool]] = []
    for folder, dirs, files in os.walk("/etc"):
        for name in [*dirs, *files]:
            path = os.path.join(folder, name)
            try:
                info = os.lstat(path)
            except OSError:
                continue
            is_dir = stat.S_ISDIR(info.st_mode)
            needed = stat.S_IROTH | (stat.S_IXOTH if is_dir else 0)
            if not stat.S_ISLNK(info.st_mode) and info.st_mode & needed != needed:
                found.append((path, is_dir))
                if is_dir:
                    dirs.remove(name)
    return tuple(found)


class Sandbox:
    """Runs commands for one project with its writable folders, network choice and limits."""

    def __init__(
        self,
        project_root: Path,
        *,
        writable: tuple[WritableFolder, ...] = (),
        root_writable: bool = False,
        network: bool = False,
        limits: SandboxLimits | None = None,
        scan: ProjectScan | None = None,
        hidden: tuple[Path, ...] = (),
    ) -> None:
        """`scan`: the project's `.prose/` folders and guarded files, when known (a session
        scans once); else the project is scanned at each command."""
        self.project_root = project_root
        self.scan = scan
        self.writable = writable
        self.root_writable = root_writable
        self.network = network
        self.limits = limits or SandboxLimits()
        self.hidden = hidden

    def command_line(self, argv: list[str], mounts: list[Mount]) -> list[str]:
        args = ["bwrap", *_namespace_args(network=self.network)]
        for folder in SYSTEM_DIRS:
            if os.path.lexists(folder):
                if os.path.islink(folder):  # merged /usr: /bin -> usr/bin
                    args += ["--symlink", os.readlink(folder), folder]
                else:
                    args += ["--ro-bind", folder, folder]
        for path, is_dir in unreadable_system_files():
            args += _hide(path) if is_dir else ["--ro-bind", "/dev/null", path]
        # Every tmpfs is RAM: the writable ones are sized, the others read-only (/, /dev,
        # hides), so no command fills memory through a folder it was not given.
        size = str(self.limits.tmp_size)
        args += ["--proc", "/proc", "--dev", "/dev", "--size", size, "--tmpfs", "/dev/shm"]
        args += ["--remount-ro", "/dev", "--size", size, "--tmpfs", "/tmp"]
        for mount in mounts:
            if mount.kind == "tmpfs":
                args += ["--size", "4096", "--tmpfs", str(mount.dest)]
            else:
                args += [f"--{mount.kind}-fd", str(mount.fd), str(mount.dest)]
        for mount in mounts:  # read-only once what is mounted inside a hide is there
            if mount.kind == "tmpfs":
                args += ["--remount-ro", str(mount.dest)]
        # Hidden last (the approval key's folder, when it lies where commands can look): a
        # writable bind of a folder above it would otherwise show it again.
        for hidden in self.hidden:
            if hidden.is_dir():
                args += _hide(str(hidden))
        args += ["--remount-ro", "/", "--chdir", str(self.project_root), "--clearenv"]
        for key, value in CLEAN_ENV.items():
            args += ["--setenv", key, value]
        return [*args, "--", *argv]

    async def run(
        self, argv: list[str], *, timeout: float, output_cap: int, stdin: bytes = b""
    ) -> CommandResult:
        """Raises SandboxUnavailable (no sandbox here) and FolderRefused (a writable folder
        that cannot be granted, checked again now)."""
        problem = sandbox_problem()
        if problem is not None:
            raise SandboxUnavailable(problem)
        mounts = await asyncio.to_thread(self.mounts)  # one thread hop: each costs under load
        watched = [self.project_root] if self.root_writable else [f.path for f in self.writable]
        disk = DiskWatch(watched, self.limits.disk_writes)  # statvfs only: cheap
        cgroups = make_cgroups(self.limits, f"{os.getpid()}-{next(_commands)}")

        def over_disk_limit() -> str | None:
            return "disk_writes" if disk.over() else None

        try:
            # bwrap itself starts with the clean environment too: it stays in the sandbox as
            # its pid 1, and /proc/1/environ would otherwise show the VM's (provider keys).
            result = await run_process(
                [
                    *launcher(self.limits, cgroups.folders.values()),
                    *self.command_line(argv, mounts),
                ],
                timeout=timeout,
                output_cap=output_cap,
                stdin=stdin,
                env=dict(CLEAN_ENV),
                pass_fds=tuple(m.fd for m in mounts if m.fd is not None),
                watchdog=over_disk_limit if watched else None,
            )
            hit = tuple(cgroups.hit())
        finally:
            close_mounts(mounts)
            if not cgroups.remove():  # killed processes leave it a moment later
                later = asyncio.ensure_future(_remove_soon(cgroups))
                _removing.add(later)
                later.add_done_callback(_removing.discard)
        if result.stopped_by is None and watched and await asyncio.to_thread(disk.over):
            result = replace(result, stopped_by="disk_writes")
        note_command_end()
        return replace(result, limits_hit=hit) if hit else result

    def mounts(self) -> list[Mount]:
        """The project's mounts for one start, their fds open (`close_mounts` closes them)."""
        scan = self.scan if self.scan is not None else scan_project(self.project_root)
        return plan_mounts(self.project_root, self.writable, scan, root_writable=self.root_writable)


_removing: set[asyncio.Future[None]] = set()  # removals in progress (kept from the GC)


async def _remove_soon(cgroups: CgroupSet) -> None:
    """Retry for up to 0.5 s, off the command's path; a VM that exits first leaves the
    cgroups to the next one (they are removed as those of a dead process)."""
    for _ in range(50):
        await asyncio.sleep(0.01)
        if cgroups.remove():
            return


async def run_process(
    argv: list[str],
    *,
    timeout: float,
    output_cap: int,
    stdin: bytes = b"",
    env: dict[str, str] | None = None,
    pass_fds: tuple[int, ...] = (),
    watchdog: Callable[[], str | None] | None = None,
) -> CommandResult:
    """Run `argv` in its own process group; keep at most `output_cap` bytes of stdout and
    stderr together (the rest is read and counted), kill the group at the time limit, or
    when `watchdog` (asked every WATCH_INTERVAL) names a limit the command went over."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
        env=env,
        pass_fds=pass_fds,
    )
    stopped_by: list[str] = []
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

    async def watch() -> None:
        while watchdog is not None and process.returncode is None:
            await asyncio.sleep(WATCH_INTERVAL)
            reason = await asyncio.to_thread(watchdog)
            if reason is not None:
                stopped_by.append(reason)
                _kill_group(process.pid)
                return

    work = asyncio.gather(drain(process.stdout), drain(process.stderr), feed(), process.wait())
    watcher = asyncio.ensure_future(watch())
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
    finally:
        watcher.cancel()
    killed = timed_out or bool(stopped_by)
    return CommandResult(
        None if killed else process.returncode,
        out,
        err,
        omitted[0],
        timed_out,
        loop.time() - started,
        stopped_by[0] if stopped_by else None,
    )


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass

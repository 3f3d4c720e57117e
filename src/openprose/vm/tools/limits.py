"""Resource limits of the shell sandbox: processes, memory, `/tmp` and project writes.

Each is a `[sandbox]` setting of prose.toml with a safe default, and each is named (with
its setting) in the line the model and the user see when a command hits it. What holds
where:

- `processes`: RLIMIT_NPROC for every user but root (the kernel exempts uid 0, and a user
  namespace keeps the uid), plus a `pids` cgroup when the VM may create one (cgroup v1
  `pids` controller, or a cgroup v2 folder of its own with `pids` enabled) — that one
  holds for root too.
- `memory`: RLIMIT_DATA on each process (its writable private memory: heaps, anonymous
  maps; address space merely reserved, as Java and WebAssembly do, does not count), plus a
  `memory` cgroup for all processes together when one can be created.
- `tmp_size`: the size of the sandbox's private `/tmp` (a tmpfs, RAM-backed).
- `disk_writes`: RLIMIT_FSIZE (no file grows beyond it), and a watchdog that kills the
  command once the file system of its writable folders has lost more than this many bytes
  of free space since the command started.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

__all__ = ["LimitsProblem", "SandboxLimits", "limits_from_table"]

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB
_UNITS = {"": 1, "b": 1, "k": KiB, "kb": 1000, "kib": KiB, "m": MiB, "mb": 1000**2}
_UNITS |= {"mib": MiB, "g": GiB, "gb": 1000**3, "gib": GiB}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*")


class LimitsProblem(ValueError):
    """A `[sandbox]` table that cannot be used; the message names the setting."""


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    processes: int = 256  # processes (and threads) at once
    memory: int = 2 * GiB  # bytes of writable memory: each process, and all (with a cgroup)
    tmp_size: int = 256 * MiB  # bytes of the private /tmp
    disk_writes: int = 256 * MiB  # bytes a command may add to its writable folders

    def setting(self, name: str) -> str:
        """How the error line names a limit: `[sandbox] memory = 2GiB`."""
        value = getattr(self, name)
        return f"[sandbox] {name} = {value if name == 'processes' else shown_size(value)}"


def shown_size(size: int) -> str:
    for unit, factor in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if size >= factor and size % factor == 0:
            return f"{size // factor}{unit}"
    return str(size)


def limits_from_table(table: Any, source: str = "prose.toml") -> SandboxLimits:
    """The `[sandbox]` table: `processes = 256`, sizes as bytes or text with a unit
    (`memory = "2GiB"`, `tmp_size = "256MiB"`, `disk_writes = "1GB"`)."""
    if not isinstance(table, dict):
        raise LimitsProblem(f"{source}: [sandbox] must be a table")
    known = [f.name for f in fields(SandboxLimits)]
    values: dict[str, int] = {}
    for key, value in table.items():
        if key not in known:
            raise LimitsProblem(
                f"{source}: unknown setting {key!r} in [sandbox]; known: {', '.join(known)}"
            )
        number = _count(value) if key == "processes" else _size(value)
        if number is None or number <= 0:
            what = (
                "a positive whole number"
                if key == "processes"
                else ('a positive size in bytes or with a unit ("512MiB", "2GiB")')
            )
            raise LimitsProblem(f"{source}: [sandbox] {key} must be {what}, got {value!r}")
        values[key] = number
    return SandboxLimits(**values)


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if value < 2**31 else None


def _size(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value < 2**62 else None
    if not isinstance(value, str) or not (match := _SIZE.fullmatch(value)):
        return None
    factor = _UNITS.get(match.group(2).lower())
    if factor is None:
        return None
    size = int(float(match.group(1)) * factor)
    return size if size < 2**62 else None


def user_tasks() -> int:
    """How many processes and threads this user runs now: RLIMIT_NPROC counts them all, so
    the sandbox's share is added to them."""
    uid = os.getuid()
    count = 0
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                with contextlib.suppress(OSError):
                    if entry.stat().st_uid == uid:
                        count += len(os.listdir(f"/proc/{entry.name}/task"))
    return count


def launcher(limits: SandboxLimits, cgroups: Iterable[Path] = ()) -> list[str]:
    """The programs that start bubblewrap (the argv in front of it): a shell that moves
    itself into the cgroups (folders), then `prlimit` setting the rlimits, both replaced by exec, so
    the sandbox inherits both. (A preexec function in this process would do the same at the
    cost of a fork of the whole VM: 60+ ms with a large heap.)"""
    # root is exempt from RLIMIT_NPROC (only a pids cgroup bounds it); anyone else gets
    # room for the sandbox's processes beside the ones they already run.
    tasks = 0 if os.getuid() == 0 else user_tasks()
    argv = [
        _PRLIMIT or "prlimit",  # present: the sandbox's probe checked it
        f"--nproc={limits.processes + tasks}",
        f"--data={limits.memory}",
        f"--fsize={limits.disk_writes}",
        "--",
    ]
    joins = " && ".join(
        f"echo 0 > {shlex.quote(str(folder / 'cgroup.procs'))}"  # 0: the shell itself
        for folder in cgroups
    )
    if joins:
        argv = ["/bin/sh", "-c", f'{joins} && exec "$@"', "sh", *argv]
    return argv


def launcher_problem() -> str | None:
    """Why limits cannot be set here (no `prlimit`), or None."""
    if _PRLIMIT is None:
        return "prlimit (util-linux) is not installed; it sets the sandbox's limits"
    return None


_PRLIMIT = shutil.which("prlimit")


# --- project writes -----------------------------------------------------------------------


def written_since(folders: list[Path], started: float) -> int:
    """Bytes on disk of the files under `folders` changed since `started` (their ctime;
    symlinks not followed): what a command wrote, counting a file it appended to whole."""
    total = 0
    pending = list(folders)
    while pending:
        try:
            entries = list(os.scandir(pending.pop()))
        except OSError:
            continue
        for entry in entries:
            with contextlib.suppress(OSError):
                if entry.is_dir(follow_symlinks=False):
                    pending.append(Path(entry.path))
                    continue
                info = entry.stat(follow_symlinks=False)
                if info.st_ctime >= started:
                    total += info.st_blocks * 512
    return total


_last_command_end = 0.0  # time.time() when a sandboxed command of this process last ended


def note_command_end() -> None:
    """A command's processes are gone: files changed until now are not the next one's."""
    global _last_command_end
    _last_command_end = time.time()


class DiskWatch:
    """Whether a command has added more than `cap` bytes to its writable folders. Asked
    every 50 ms, so cheap first: the folders themselves are measured when the file systems
    holding them lost more than `cap` bytes of free space (anyone's writes; what others
    wrote is then set aside), and anyway every 20 times as long as measuring them takes
    (at least 0.1 s): free space alone is fooled by others freeing space at the same time."""

    def __init__(self, folders: list[Path], cap: int) -> None:
        self.folders = folders
        self.cap = cap
        self.free = self._free()
        # ctime has the file system's granularity (up to 1 s), but what changed before the
        # last command of this process ended is that command's, not this one's.
        self.started = max(time.time() - 1, _last_command_end)
        self.next_measure = time.monotonic() + 0.1

    def _free(self) -> dict[int, int]:
        free: dict[int, int] = {}
        for folder in self.folders:
            with contextlib.suppress(OSError):
                device = os.stat(folder).st_dev
                if device not in free:
                    info = os.statvfs(folder)
                    free[device] = info.f_bavail * info.f_frsize
        return free

    def over(self) -> bool:
        now = self._free()
        lost = max((self.free[d] - now[d] for d in now if d in self.free), default=0)
        if lost <= self.cap and time.monotonic() < self.next_measure:
            return False
        began = time.monotonic()
        written = written_since(self.folders, self.started)
        self.next_measure = time.monotonic() + max(0.1, 20 * (time.monotonic() - began))
        if written > self.cap:
            return True
        if lost > self.cap:  # others wrote the rest: measure from here, with the command's
            self.free = {device: free + written for device, free in now.items()}
        return False

"""Cgroups for one sandboxed command, where the VM may create them: a `pids` cgroup (the
process limit that holds for root too) and a `memory` cgroup (all processes together).
Made below the VM's own cgroup (`/proc/self/cgroup`), cgroup v1 or v2, joined by the
command's launcher, and removed afterwards (those of VMs that died are removed by the next).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

from openprose.vm.tools.limits import SandboxLimits

__all__ = ["CgroupSet", "make_cgroups"]

_CGROUP_ROOT = Path("/sys/fs/cgroup")


@dataclass(slots=True)
class CgroupSet:
    """The cgroups one command runs in, by controller."""

    folders: dict[str, Path]

    def hit(self) -> list[str]:
        """The limits a cgroup refused something for (its event counters)."""
        found = []
        pids = self.folders.get("pids")
        if pids is not None and _counter(pids / "pids.events", "max"):
            found.append("processes")
        memory = self.folders.get("memory")
        if memory is not None and (
            _counter(memory / "memory.events", "max")
            or _counter(memory / "memory.events", "oom")
            or _number(memory / "memory.failcnt")
        ):
            found.append("memory")
        return found

    def remove(self) -> bool:
        """Remove the cgroups; False while one still holds a process (killed processes of
        the sandbox leave it a moment after bubblewrap has exited)."""
        for controller, folder in list(self.folders.items()):
            try:
                folder.rmdir()
            except FileNotFoundError:
                pass
            except OSError:
                continue
            del self.folders[controller]
        return not self.folders


def make_cgroups(limits: SandboxLimits, tag: str) -> CgroupSet:
    """A `pids` and a `memory` cgroup for one command, each where this process may create
    one; none when it may not (the rlimits still hold)."""
    made = CgroupSet({})
    for controller, files in (
        ("pids", {"pids.max": str(limits.processes)}),
        ("memory", {"memory.max": str(limits.memory), "memory.swap.max": "0"}),
    ):
        folder = _cgroup_folder(controller, tag, files)
        if folder is not None:
            made.folders[controller] = folder
    return made


def _own_cgroups() -> dict[str, str]:
    """controller (or "" for cgroup v2) -> this process's cgroup path."""
    found: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        _, _, rest = line.partition(":")
        names, _, path = rest.partition(":")
        for name in names.split(","):
            found[name] = path
    return found


def _cgroup_folder(controller: str, tag: str, files: dict[str, str]) -> Path | None:
    """A new cgroup below this process's own with the limit `files` written (the first one
    is required, the others are best effort), or None when none can be made."""
    own = _own_cgroups()
    candidates: list[tuple[Path, bool]] = []  # (parent folder, cgroup v1)
    if controller in own:  # v1: one hierarchy per controller
        candidates.append((_CGROUP_ROOT / controller / own[controller].lstrip("/"), True))
    if "" in own:  # v2: one hierarchy; the controller must be enabled below us
        candidates.append((_CGROUP_ROOT / own[""].lstrip("/"), False))
    for base, v1 in candidates:
        _remove_stale(base)
        folder = base / f"prose-sandbox-{tag}"
        try:
            folder.mkdir()
        except OSError:
            continue
        for index, (name, value) in enumerate(files.items()):
            target = _V1_NAMES.get(name, name) if v1 else name
            if v1 and name == "memory.swap.max":  # v1 bounds memory + swap together
                value = files["memory.max"]
            try:
                (folder / target).write_text(value)
            except OSError:
                if index == 0:
                    break
        else:
            return folder
        with contextlib.suppress(OSError):
            folder.rmdir()
    return None


_V1_NAMES = {
    "memory.max": "memory.limit_in_bytes",
    "memory.swap.max": "memory.memsw.limit_in_bytes",
}


def _remove_stale(base: Path) -> None:
    """Remove the cgroups of VMs that died mid-command (`prose-sandbox-PID-N`, PID gone)."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(base):
            name = entry.name
            if not name.startswith("prose-sandbox-"):
                continue
            pid = name.removeprefix("prose-sandbox-").partition("-")[0]
            if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
                with contextlib.suppress(OSError):
                    os.rmdir(entry.path)  # fails while a process is still in it: kept


def _counter(path: Path, key: str) -> int:
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def _number(path: Path) -> int:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return 0

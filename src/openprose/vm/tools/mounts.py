"""What of the project a sandboxed command may see and change, as bubblewrap mounts.

The project is mounted read-only (or writable with `write: allow`); the folders write
patterns grant whole are mounted writable on top. Then, whatever those grant:

- every `.prose/` folder (the run's state, and that of nested projects) is hidden under
  an empty, read-only tmpfs — but for its `skills/` (installed skills), mounted read-only;
- `.git` and every settings file (`prose.toml`, `prose.lock`, `pyproject.toml`) inside a
  writable folder is mounted read-only over itself (a symlink's target too), unless a
  write pattern names it (`write: [".git/hooks/"]`);
- every folder between a writable folder and such a path is mounted over itself, so it
  cannot be renamed away and replaced (a mount point cannot be moved: EBUSY).

Deeper mounts go on top. Every mount is made from a file descriptor opened here without
following symlinks, so a folder swapped for a symlink after the check is never mounted.

A writable folder is resolved once: refused when a symlink lies on its way, when it is or
holds the project root or a `.prose/` folder, or lies inside `.prose/`; and checked again
(same device and inode, still no symlink) every time a command runs.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from openprose.vm.tools.paths import GUARDED_NAMES, INSTALLED_SKILLS, RUN_STATE, folded

__all__ = [
    "FolderRefused",
    "Mount",
    "ProjectScan",
    "WritableFolder",
    "plan_mounts",
    "resolve_writable",
    "scan_project",
]


class FolderRefused(Exception):
    """A writable folder that cannot be granted; the message names it and why."""


@dataclass(frozen=True, slots=True)
class WritableFolder:
    shown: str  # as the write pattern names it
    path: Path  # real, absolute
    identity: tuple[int, int]  # (device, inode) when it was resolved


@dataclass(frozen=True, slots=True)
class Mount:
    """One bubblewrap mount: `bind`/`ro-bind` from an open fd (O_PATH), or `tmpfs`."""

    kind: str
    dest: Path
    fd: int | None = None


def resolve_writable(root: Path, folder: str) -> WritableFolder:
    """The folder a write pattern grants (`out/`, or absolute), made when missing inside the
    project; refused when it cannot be granted safely."""
    absolute = folder.startswith("/")
    lexical = Path(os.path.normpath(folder if absolute else root / folder))
    if not absolute and not lexical.is_relative_to(root):
        raise FolderRefused(f"write folder {folder!r} lies outside the project")
    fd = _open_folder(lexical, folder, create_below=None if absolute else root)
    try:
        info = os.fstat(fd)
    finally:
        os.close(fd)
    if lexical == root or root.is_relative_to(lexical):
        raise FolderRefused(
            f"write folder {folder!r} holds the project root; grant the project with "
            f"`write: allow` instead"
        )
    if any(folded(part) == RUN_STATE for part in lexical.parts):
        raise FolderRefused(f"write folder {folder!r} lies inside .prose/, the run's state")
    if not lexical.is_relative_to(root):  # the project's own scan does not cover it
        held = scan_project(lexical).hidden
        if held:
            raise FolderRefused(
                f"write folder {folder!r} holds {held[0]}/, the run state of another project "
                f"(or agent memories); refused"
            )
    return WritableFolder(folder, lexical, (info.st_dev, info.st_ino))


def _open_folder(path: Path, shown: str, *, create_below: Path | None = None) -> int:
    """An O_PATH fd of folder `path`, reached from `/` one part at a time without following
    a symlink; missing parts below `create_below` are made."""
    fd = os.open("/", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    walked = Path("/")
    try:
        for part in PurePosixPath(path).parts[1:]:
            walked /= part
            flags = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                next_fd = os.open(part, flags, dir_fd=fd)
            except FileNotFoundError:
                if create_below is None or not walked.is_relative_to(create_below):
                    raise FolderRefused(f"write folder {shown!r} does not exist") from None
                with contextlib.suppress(FileExistsError):  # a parallel session made it
                    os.mkdir(part, 0o755, dir_fd=fd)
                next_fd = os.open(part, flags, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise FolderRefused(
                        f"write folder {shown!r} passes through a symlink or a file "
                        f"({walked}); a writable folder must be a real folder"
                    ) from None
                raise
            os.close(fd)
            fd = next_fd
    except BaseException:
        os.close(fd)
        raise
    return fd


def recheck(folder: WritableFolder) -> int:
    """The folder opened again for mounting: still reached without a symlink, and still the
    same folder (device and inode) as when it was resolved. The caller closes the fd."""
    fd = _open_folder(folder.path, folder.shown)
    info = os.fstat(fd)
    if (info.st_dev, info.st_ino) != folder.identity:
        os.close(fd)
        raise FolderRefused(
            f"write folder {folder.shown!r} was replaced after it was granted; refused"
        )
    return fd


@dataclass(frozen=True, slots=True)
class ProjectScan:
    hidden: list[Path]  # .prose folders
    guarded: list[Path]  # .git, settings files, and their symlinks' targets in the project


def scan_project(root: Path) -> ProjectScan:
    """Every `.prose/` folder and guarded name in the project (symlinks not followed;
    the inside of `.prose` and `.git` not searched)."""
    found = ProjectScan([], [])
    longest = max(map(len, (RUN_STATE, *GUARDED_NAMES)))
    pending = [str(root)]
    while pending:
        try:
            entries = list(os.scandir(pending.pop()))
        except OSError:
            continue
        for entry in entries:
            # Folding costs; only a short name can fold to a protected one.
            name = folded(entry.name) if len(entry.name) <= longest + 2 else ""
            if name == RUN_STATE and not entry.is_symlink():
                found.hidden.append(Path(entry.path))
            elif name in GUARDED_NAMES:
                path = Path(entry.path)
                found.guarded.append(path)
                if entry.is_symlink():
                    target = Path(os.path.realpath(path))
                    if target.is_relative_to(root) and target != root and target.exists():
                        found.guarded.append(target)
            elif entry.is_dir(follow_symlinks=False):
                pending.append(entry.path)
    return found


def plan_mounts(
    root: Path,
    writable: tuple[WritableFolder, ...],
    found: ProjectScan,
    *,
    root_writable: bool,
) -> list[Mount]:
    """The project's mounts in the order bubblewrap must make them (deeper on top), each
    with an open fd the caller passes to bubblewrap and then closes (`close_mounts`)."""
    for folder in writable:
        holds = [h for h in found.hidden if h.is_relative_to(folder.path)]
        if holds:
            raise FolderRefused(
                f"write folder {folder.shown!r} holds {holds[0].relative_to(root)}/, the run "
                f"state of a nested project; refused"
            )
    areas = [root] if root_writable else [f.path for f in writable]

    def under_writable(path: Path) -> bool:
        return any(path.is_relative_to(area) and path != area for area in areas)

    planned: list[tuple[Path, str]] = [(root, "bind" if root_writable else "ro-bind")]
    planned += [(f.path, "bind") for f in writable]
    kept = set()
    for path in found.guarded:
        named = any(f.path.is_relative_to(path) for f in writable)  # `.git/hooks/` granted
        if not under_writable(path) or named:
            continue
        if path.is_symlink():
            raise FolderRefused(
                f"{path.relative_to(root)} is a symlink inside a writable folder, where a "
                f"command could replace it; make it a real file (or grant less)"
            )
        planned.append((path, "ro-bind"))
        kept.add(path)
    for path in found.hidden:
        planned.append((path, "tmpfs"))
        kept.add(path)
        skills = path / INSTALLED_SKILLS  # downloaded skills: their scripts run, read-only
        if skills.is_dir() and not skills.is_symlink():
            planned.append((skills, "ro-bind"))
    for path in list(kept):  # the folders on the way: mounted over themselves
        for parent in path.parents:
            if parent == root or not parent.is_relative_to(root):
                break
            if under_writable(parent):
                planned.append((parent, "bind"))
    rank = {"bind": 0, "ro-bind": 1, "tmpfs": 2}
    unique = sorted(set(planned), key=lambda m: (len(m[0].parts), rank[m[1]], str(m[0])))
    by_path = {f.path: f for f in writable}
    mounts: list[Mount] = []
    try:
        for path, kind in unique:
            if kind == "tmpfs":
                mounts.append(Mount(kind, path))
            elif path in by_path and kind == "bind":
                mounts.append(Mount(kind, path, recheck(by_path[path])))
            elif (fd := _open_any(path)) is not None:
                mounts.append(Mount(kind, path, fd))
    except BaseException:
        close_mounts(mounts)
        raise
    return mounts


def _open_any(path: Path) -> int | None:
    """An O_PATH fd of `path` (a folder or a file), reached without following a symlink;
    None when it is gone (nothing left to mount)."""
    try:
        parent = _open_folder(path.parent, str(path.parent))
    except FolderRefused:
        raise FolderRefused(
            f"{path.parent} changed into a symlink while the sandbox was set up; refused"
        ) from None
    try:
        fd = os.open(path.name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    except FileNotFoundError:
        return None
    finally:
        os.close(parent)
    if stat.S_ISLNK(os.fstat(fd).st_mode):
        os.close(fd)
        return None  # a guarded name that is a symlink: its target is mounted instead
    return fd


def close_mounts(mounts: list[Mount]) -> None:
    for mount in mounts:
        if mount.fd is not None:
            os.close(mount.fd)

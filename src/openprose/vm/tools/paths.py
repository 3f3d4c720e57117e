"""Paths a tool names, resolved against the project root, and opened without races.

A path is resolved before any permission is matched: relative paths against the project
root, `..` collapsed, every symlink followed (`/proc/self/root` included). The permission
check sees only the real path. Opening then walks the real path one component at a time
with `O_NOFOLLOW`, so a symlink swapped in after the check is refused, never followed.
"""

from __future__ import annotations

import errno
import os
import stat
import unicodedata
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

__all__ = [
    "PathRefused",
    "ResolvedPath",
    "installed_skill",
    "linked_guarded",
    "open_beneath",
    "protected_part",
    "resolve_path",
    "write_atomically",
]

# The run's own state: journals, bindings (inputs and answers), approvals, memories.
RUN_STATE = ".prose"
# ... except the skills installed from registries and URLs under it: content, read as any.
INSTALLED_SKILLS = "skills"
# What runs code or sets permissions for later runs: git's folder (hooks, `core.fsmonitor`
# in its config) and every settings file the tool reads.
GUARDED_NAMES = frozenset({".git", "prose.toml", "prose.lock", "pyproject.toml"})


class PathRefused(Exception):
    """A path that cannot be used at all (malformed, a swapped-in symlink, a hard link)."""


@dataclass(frozen=True, slots=True)
class ResolvedPath:
    requested: str
    real: Path  # absolute, every symlink and `..` resolved
    relative: str | None  # posix path relative to the project root; None when outside it
    # the path as asked for, `..` collapsed but symlinks kept (a symlink named `prose.toml`
    # is protected by its name as well as by its target's)
    asked: PurePosixPath | None = None

    @property
    def inside(self) -> bool:
        return self.relative is not None

    def shown(self) -> str:
        """How a message names it: project-relative when inside, else absolute."""
        return self.relative if self.relative is not None else str(self.real)


def resolve_path(root: Path, requested: str) -> ResolvedPath:
    if not isinstance(requested, str) or not requested.strip():
        raise PathRefused("a path is required")
    if "\x00" in requested:
        raise PathRefused("a path may not contain a NUL byte")
    candidate = Path(requested) if os.path.isabs(requested) else root / requested
    real = Path(os.path.realpath(candidate))
    try:
        relative: str | None = real.relative_to(root).as_posix()
    except ValueError:
        relative = None
    asked = PurePosixPath(os.path.normpath(candidate))
    if asked.is_relative_to(root):
        asked = asked.relative_to(root)
    return ResolvedPath(requested, real, "." if relative == "" else relative, asked)


def folded(name: str) -> str:
    """A name as a case-insensitive or normalising file system (macOS) compares it:
    `.PROSE` and `Prose.toml` name the protected files there."""
    return unicodedata.normalize("NFC", name).casefold()


def protected_part(path: ResolvedPath) -> str | None:
    """`.prose` when a part of the path (below the project root when inside it; as
    resolved or as asked) is run state, else the first guarded part (`.git`, a settings
    file), folded; else None."""
    parts = path.relative.split("/") if path.relative is not None else path.real.parts
    names = [folded(p) for p in (*parts, *(path.asked.parts if path.asked is not None else ()))]
    if RUN_STATE in names:
        return RUN_STATE
    return next((name for name in names if name in GUARDED_NAMES), None)


def linked_guarded(root: Path) -> tuple[Path, ...]:
    """The real targets of the project's own guarded names that are symlinks
    (`prose.toml -> config/prose.toml`): written through their target's name, they would
    change the settings all the same."""
    found = []
    for name in sorted(GUARDED_NAMES):
        link = root / name
        if link.is_symlink():
            found.append(Path(os.path.realpath(link)))
    return tuple(found)


def installed_skill(path: ResolvedPath) -> bool:
    """Whether the path lies in an installed skill (`.prose/skills/NAME/...`) — as
    resolved and as asked — and in no other `.prose`."""

    def inside(names: list[str]) -> bool:
        if names.count(RUN_STATE) != 1:
            return False
        at = names.index(RUN_STATE)
        return len(names) > at + 2 and names[at + 1] == INSTALLED_SKILLS

    parts = [folded(p) for p in (path.relative.split("/") if path.relative else ())]
    asked = [folded(p) for p in path.asked.parts] if path.asked is not None else parts
    return inside(parts) and inside(asked)


def _walk_to_parent(real: Path) -> tuple[int, str]:
    """An fd of `real`'s parent directory, reached component by component without following
    any symlink, and the final name. The caller closes the fd."""
    parts = PurePosixPath(real).parts
    if len(parts) < 2:
        raise PathRefused(f"{real} is not a file path")
    fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[1:-1]:
            next_fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = next_fd
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise PathRefused(
                f"{real}: a component changed into a symlink after the permission check; refused"
            ) from None
        raise
    return fd, parts[-1]


def open_beneath(resolved: ResolvedPath, flags: int = os.O_RDONLY) -> int:
    """Open the checked real path for reading without following a symlink anywhere on it.

    A file with more than one hard link is refused: its other names may lie outside the
    project, so the permission check could not know what it is really reading."""
    parent, name = _walk_to_parent(resolved.real)
    try:
        try:
            fd = os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise PathRefused(
                    f"{resolved.shown()} became a symlink after the permission check; refused"
                ) from None
            raise
    finally:
        os.close(parent)
    info = os.fstat(fd)
    if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
        os.close(fd)
        raise PathRefused(
            f"{resolved.shown()} has {info.st_nlink} hard links; a hard-linked file may be "
            f"another file outside the allowed paths, so tools do not open it"
        )
    return fd


def write_atomically(resolved: ResolvedPath, data: bytes) -> None:
    """Write `data` to a temporary file beside the target, fsync it, and rename it over the
    target: a reader sees the old or the new content, never a mix, and a symlink or hard
    link at the target is replaced, never written through. Missing parent folders are made
    (beneath an existing, symlink-free parent)."""
    missing: list[str] = []
    parent_path = resolved.real.parent
    while not parent_path.exists():
        missing.append(parent_path.name)
        parent_path = parent_path.parent
    parent, _ = _walk_to_parent(parent_path / "x")
    try:
        for name in reversed(missing):
            os.mkdir(name, 0o755, dir_fd=parent)
            next_fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
            os.close(parent)
            parent = next_fd
        name = resolved.real.name
        temp = f".{name}.prose-tmp-{os.getpid()}-{os.urandom(4).hex()}"
        fd = os.open(
            temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=parent
        )
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            target = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            target = None
        if target is not None and stat.S_ISDIR(target.st_mode):
            os.unlink(temp, dir_fd=parent)
            raise PathRefused(f"{resolved.shown()} is a folder")
        os.rename(temp, name, src_dir_fd=parent, dst_dir_fd=parent)
    finally:
        os.close(parent)

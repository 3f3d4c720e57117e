"""Finding the programs below a folder, as ruff finds Python files: hidden folders (`.prose/`
with its archived run copies, `.git/`, `.venv/`...) and paths a `.gitignore` ignores are
skipped. A path named explicitly is always taken."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

PROGRAM_SUFFIX = ".prose"


def find_programs(path: str | os.PathLike[str], suffix: str = PROGRAM_SUFFIX) -> list[Path]:
    """``path`` itself when it is not a directory, else every ``*.prose`` file (``*suffix``)
    below it that is not hidden or ignored (symlinked directories are not followed), sorted.
    A missing path yields ``[]``. `prose test` finds its ``*.test.toml`` files this way.

    Below a directory, a ``*.prose`` entry that exists but is not a regular file (a FIFO, a
    socket, a device) is skipped: reading it could block forever. Named explicitly, it is
    kept (``prose check <(generate)`` reads a pipe)."""
    root = Path(path)
    if not root.is_dir():
        return [root] if root.exists() else []
    ignores = _IgnoreRules(root)
    found: list[Path] = []
    for folder, folders, names in os.walk(root):
        here = Path(folder)
        ignores.enter(here)
        folders[:] = [
            name
            for name in folders
            if not name.startswith(".") and not ignores.ignored(here / name, folder=True)
        ]
        found += [
            here / name
            for name in names
            if name.endswith(suffix)
            and not name.startswith(".")
            and _regular_or_unreadable(os.path.join(folder, name))
            and not ignores.ignored(here / name, folder=False)
        ]
    return sorted(found, key=lambda p: p.parts)


class _IgnoreRules:
    """The `.gitignore` files that apply below ``root``: those of the folders from the
    repository's top (the nearest ancestor holding `.git`) down to each walked folder."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.root_as_given = root
        self.specs: list[tuple[Path, GitIgnoreSpec]] = []
        for ancestor in reversed(_ancestors_in_repository(self.root)):
            self._load(ancestor, ancestor)

    def enter(self, folder: Path) -> None:
        if folder != self.root_as_given:
            self._load(folder, self.root / folder.relative_to(self.root_as_given))

    def _load(self, folder: Path, resolved: Path) -> None:
        gitignore = folder / ".gitignore"
        if not gitignore.is_file():
            return
        try:
            lines = gitignore.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return
        from pathspec import GitIgnoreSpec

        self.specs.append((resolved, GitIgnoreSpec.from_lines(lines)))

    def ignored(self, path: Path, *, folder: bool) -> bool:
        if not self.specs:
            return False
        resolved = self.root / path.relative_to(self.root_as_given)
        verdict = False
        for base, spec in self.specs:  # outer files first: a deeper file has the last word
            try:
                relative = resolved.relative_to(base).as_posix()
            except ValueError:
                continue
            result = spec.check_file(relative + ("/" if folder else ""))
            if result.include is not None:
                verdict = bool(result.include)
        return verdict


def _ancestors_in_repository(folder: Path) -> list[Path]:
    """``folder`` and its parents up to the one holding `.git`; only ``folder`` outside a
    repository."""
    chain = [folder]
    for parent in folder.parents:
        if (chain[-1] / ".git").exists():
            return chain
        chain.append(parent)
    return chain if (chain[-1] / ".git").exists() else [folder]


def _regular_or_unreadable(path: str) -> bool:
    """True for a regular file, and for an entry ``stat`` fails on (a dangling symlink), which
    the reader then reports; False for directories, FIFOs, sockets and devices."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return True
    return stat.S_ISREG(mode)

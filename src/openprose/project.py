"""Which project a program belongs to, found as ruff finds its settings: the nearest folder,
from the program's own folder upwards, holding `prose.toml` or a `pyproject.toml` with a
`[tool.prose]` table. That folder is the project: its settings are used, and its `.prose/`
holds runs, agent memory and cached imports. With no such file anywhere above, the search
is repeated from the working directory; failing that, the working directory is the project
(with default settings)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

SETTINGS_FILES = ("prose.toml", "pyproject.toml")


@dataclass(frozen=True, slots=True)
class Project:
    root: Path
    settings_file: Path | None
    searched_from: tuple[Path, ...]  # the folders whose ancestry was searched, in order

    def explain(self) -> str:
        """Why this folder is the project, in one sentence."""
        starts = " and ".join(str(s) for s in self.searched_from)
        if self.settings_file is None:
            return (
                f"no prose.toml or pyproject.toml with [tool.prose] in {starts} or any parent; "
                f"using the working directory {self.root} with default settings"
            )
        what = "[tool.prose] in " if self.settings_file.name == "pyproject.toml" else ""
        return f"{what}{self.settings_file}, the nearest found walking up from {starts}"


def find_project(start: Path, *, cwd: Path | None = None) -> Project:
    """The project of a program in folder ``start`` (see the module's docstring)."""
    here = (cwd or Path.cwd()).resolve()
    starts = [start.resolve()]
    if here != starts[0]:
        starts.append(here)
    for index, origin in enumerate(starts):
        found = _settings_above(origin)
        if found is not None:
            return Project(found.parent, found, tuple(starts[: index + 1]))
    return Project(here, None, tuple(starts))


def _settings_above(folder: Path) -> Path | None:
    for candidate in (folder, *folder.parents):
        prose_toml = candidate / "prose.toml"
        if prose_toml.is_file():
            return prose_toml
        pyproject = candidate / "pyproject.toml"
        if pyproject.is_file() and _has_prose_table(pyproject):
            return pyproject
    return None


def _has_prose_table(pyproject: Path) -> bool:
    """True when the file has `[tool.prose]`; a file that cannot be parsed counts when it
    mentions the table (reading the settings then reports the error with its place)."""
    try:
        data = pyproject.read_bytes()
    except OSError:
        return False
    try:
        tool = tomllib.loads(data.decode("utf-8", errors="replace")).get("tool")
    except tomllib.TOMLDecodeError:
        return b"[tool.prose" in data
    return isinstance(tool, dict) and isinstance(tool.get("prose"), dict)


def runs_home(cwd: Path | None = None) -> Path:
    """Where `prose runs`, `show` and `resume` look for `.prose/runs/`: the project of the
    working directory (its settings file's folder), else the working directory itself."""
    return find_project(cwd or Path.cwd(), cwd=cwd).root

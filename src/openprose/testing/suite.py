"""A suite: the test files found under the given paths (as pytest and ruff find theirs), the
cases `-k` selects, run concurrently, and the cassettes `--update` records again."""

from __future__ import annotations

import asyncio
import re
import time
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from openprose.testing.case import CaseOutcome, Mode, run_case
from openprose.testing.spec import SUFFIX, Case, TestFile, TestFileError, load_test_file

__all__ = [
    "SuiteError",
    "SuiteResult",
    "TestFileError",
    "discover",
    "keyword_filter",
    "load_files",
    "run_suite",
]

DEFAULT_JOBS = 8
DEFAULT_MODE = Mode()  # answers from cassettes


class SuiteError(Exception):
    """A usage problem: a path that is no test file, a bad `-k`, a bad `[test]` table."""


@dataclass(slots=True)
class SuiteResult:
    outcomes: list[CaseOutcome] = field(default_factory=list)
    deselected: int = 0
    seconds: float = 0.0

    def count(self, outcome: str) -> int:
        return sum(1 for o in self.outcomes if o.outcome == outcome)

    @property
    def passed(self) -> bool:
        return all(o.outcome == "passed" for o in self.outcomes)


def _test_settings(cwd: Path) -> tuple[list[str], list[str], Path]:
    """`[test] paths` and `exclude` of the project's prose.toml, and the project's folder."""
    from openprose.project import find_project

    project = find_project(cwd, cwd=cwd)
    if project.settings_file is None:
        return [], [], project.root
    try:
        data = tomllib.loads(project.settings_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return [], [], project.root  # `prose check` and `prose run` report such a file
    if project.settings_file.name == "pyproject.toml":
        data = data.get("tool", {}).get("prose", {})
    table = data.get("test", {})
    paths, exclude = table.get("paths", []), table.get("exclude", [])
    for key, value in (("paths", paths), ("exclude", exclude)):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise SuiteError(f"{project.settings_file}: [test] {key} must be a list of paths")
    return paths, exclude, project.root


def discover(paths: Sequence[str | Path], cwd: Path | None = None) -> list[Path]:
    """The test files (`*.test.toml`) of `paths`: a file as given, a folder searched as
    `prose check` searches one (hidden and git-ignored entries skipped). Without paths, the
    `[test] paths` of prose.toml, else the working folder; `[test] exclude` globs drop files."""
    from openprose.walk import find_programs

    here = cwd or Path.cwd()
    configured, exclude, root = _test_settings(here)
    wanted = [Path(p) for p in paths] or [root / p for p in configured] or [here]
    found: list[Path] = []
    for path in wanted:
        if not path.exists():
            raise SuiteError(f"{path}: no such file or folder")
        if path.is_file() and not path.name.endswith(SUFFIX):
            raise SuiteError(f"{path}: not a test file (test files are named NAME{SUFFIX})")
        found += [p for p in find_programs(path, SUFFIX) if p not in found]
    return [p for p in found if not _excluded(p, exclude, root)]


def _excluded(path: Path, patterns: list[str], root: Path) -> bool:
    try:
        relative = path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return any(
        relative.match(p) or relative.as_posix().startswith(p.rstrip("/") + "/") for p in patterns
    )


_TOKEN = re.compile(r"\s*(\(|\)|[^\s()]+)")


def keyword_filter(expression: str) -> Callable[[str], bool]:
    """pytest's `-k`: words matched case-insensitively as substrings of a case's id, joined by
    `and`, `or`, `not` and parentheses."""
    tokens = _TOKEN.findall(expression)
    if not tokens:
        raise SuiteError("-k needs an expression (words joined by and, or, not)")
    position = 0

    def peek() -> str | None:
        return tokens[position] if position < len(tokens) else None

    def take() -> str:
        nonlocal position
        token = peek()
        if token is None:
            raise SuiteError(f"-k {expression!r}: the expression ends too soon")
        position += 1
        return token

    def either() -> Callable[[str], bool]:
        parts = [both()]
        while peek() == "or":
            take()
            parts.append(both())
        return lambda text: any(part(text) for part in parts)

    def both() -> Callable[[str], bool]:
        parts = [negated()]
        while peek() == "and":
            take()
            parts.append(negated())
        return lambda text: all(part(text) for part in parts)

    def negated() -> Callable[[str], bool]:
        token = take()
        if token == "not":
            inner = negated()
            return lambda text: not inner(text)
        if token == "(":
            inner = either()
            if peek() != ")":
                raise SuiteError(f"-k {expression!r}: a parenthesis is not closed")
            take()
            return inner
        if token in ("and", "or", ")"):
            raise SuiteError(f"-k {expression!r}: unexpected `{token}`")
        word = token.lower()
        return lambda text: word in text.lower()

    matcher = either()
    if peek() is not None:
        raise SuiteError(f"-k {expression!r}: unexpected `{peek()}`")
    return matcher


def load_files(paths: Sequence[Path]) -> list[TestFile]:
    """Every test file read; the first bad one raises `TestFileError` (file:line: problem)."""
    return [load_test_file(path) for path in paths]


async def run_suite(
    files: Sequence[TestFile],
    mode: Mode = DEFAULT_MODE,
    *,
    keyword: str | None = None,
    update: bool = False,
    jobs: int = DEFAULT_JOBS,
    on_file_done: Callable[[TestFile, list[CaseOutcome]], None] | None = None,
) -> SuiteResult:
    """Run the selected cases, at most `jobs` at a time; `on_file_done` is told each file's
    outcomes in file order as soon as they are all known. `update` records again the
    cassettes of the cases whose cassette no longer matched (or was missing)."""
    started = time.perf_counter()
    selected = keyword_filter(keyword) if keyword else None
    plan: list[tuple[TestFile, list[Case]]] = []
    deselected = 0
    for test_file in files:
        cases = [c for c in test_file.cases if selected is None or selected(_id(test_file, c))]
        deselected += len(test_file.cases) - len(cases)
        if cases:
            plan.append((test_file, cases))
    limit = asyncio.Semaphore(max(1, jobs))

    async def one(test_file: TestFile, case: Case) -> CaseOutcome:
        async with limit:
            outcome = await run_case(test_file, case, mode)
            if update and outcome.stale and not mode.record and case.source == "cassette":
                outcome = await run_case(test_file, case, Mode(True, mode.provider, mode.models))
            return outcome

    tasks = [[asyncio.ensure_future(one(f, c)) for c in cases] for f, cases in plan]
    result = SuiteResult(deselected=deselected)
    try:
        for (test_file, _), file_tasks in zip(plan, tasks, strict=True):
            done = [await task for task in file_tasks]
            result.outcomes += done
            if on_file_done is not None:
                on_file_done(test_file, done)
    finally:
        for task in (t for file_tasks in tasks for t in file_tasks):
            task.cancel()
    result.seconds = time.perf_counter() - started
    return result


def _id(test_file: TestFile, case: Case) -> str:
    return f"{test_file.path}::{case.name}"

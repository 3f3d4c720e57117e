"""The attack suite: every row of `attacks.py` played by the hostile-model server against a
fresh project; each must end blocked, bounded or refused with a message — never a traceback,
a hang or an escape (tests/security/hostile.py says what is checked)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from openprose.vm.tools import sandbox_problem
from tests.security.attacks import ROWS
from tests.security.hostile import ATTEMPT_SECONDS, Attempt, HostileServer, run_attempt


@pytest.fixture(scope="module")
def server() -> Iterator[HostileServer]:
    hostile = HostileServer()
    yield hostile
    hostile.close()


def _param(row: Attempt) -> object:
    marks: list[pytest.MarkDecorator] = []
    if row.fixed_on is not None:
        marks.append(
            pytest.mark.xfail(
                strict=True, run=not row.heavy, reason=f"fixed on branch {row.fixed_on}"
            )
        )
    uses_shell = any(  # a stdio MCP server runs in the sandbox too
        name == "run_command" or name.startswith("mcp__")
        for step in (*row.steps, *row.then)
        for turn in step.turns
        for name, _ in turn
    )
    if uses_shell and sandbox_problem() is not None:
        marks.append(pytest.mark.skip(reason=f"no shell sandbox here: {sandbox_problem()}"))
    return pytest.param(row, id=row.id, marks=marks)


def test_the_suite_is_big_enough() -> None:
    assert len(ROWS) >= 150
    assert len({row.family for row in ROWS}) >= 9


@pytest.mark.timeout(ATTEMPT_SECONDS * 3)
@pytest.mark.parametrize("attempt", [_param(row) for row in ROWS])
def test_attack(
    attempt: Attempt, server: HostileServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_attempt(server, attempt, tmp_path, monkeypatch)

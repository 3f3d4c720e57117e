"""`run_id_of`: the id answers are sealed with is the run folder's real name, found without
resolving every part of the path (a batch asks it for every run)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from openprose.vm.approvals import run_id_of


def _real_name(path: Path) -> str:
    return Path(os.path.realpath(path)).name


@pytest.fixture
def layout(tmp_path: Path) -> Path:
    runs = tmp_path / "project" / ".prose" / "runs"
    (runs / "20261207-120000-abcdef").mkdir(parents=True)
    (tmp_path / "elsewhere").symlink_to(tmp_path / "project")  # a linked parent
    (tmp_path / "link-to-run").symlink_to(runs / "20261207-120000-abcdef")
    return tmp_path


@pytest.mark.parametrize(
    "relative",
    [
        "project/.prose/runs/20261207-120000-abcdef",
        "elsewhere/.prose/runs/20261207-120000-abcdef",  # a parent's link keeps the name
        "link-to-run",  # the folder's own link: the real folder's name
        "project/.prose/runs/20261207-120000-abcdef/bindings/..",
        "project/.prose/runs/not-made-yet",  # a run kept in a batch's log has no folder
        ".",
    ],
)
def test_the_real_folder_name(layout: Path, relative: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(layout / "project/.prose/runs/20261207-120000-abcdef")
    path = Path(relative) if relative == "." else layout / relative
    assert run_id_of(path) == _real_name(path)


def test_a_linked_run_is_sealed_with_its_real_name(layout: Path) -> None:
    assert run_id_of(layout / "link-to-run") == "20261207-120000-abcdef"

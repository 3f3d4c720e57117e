"""Cgroups of one command: made where allowed, removed after, and after a crash."""

from __future__ import annotations

import os
from pathlib import Path

from openprose.vm.tools import cgroups
from openprose.vm.tools.limits import SandboxLimits


def test_cgroups_of_dead_vms_are_removed(tmp_path: Path) -> None:
    dead = tmp_path / "prose-sandbox-999999999-3"
    alive = tmp_path / f"prose-sandbox-{os.getpid()}-1"
    other = tmp_path / "someone-else"
    for folder in (dead, alive, other):
        folder.mkdir()
    cgroups._remove_stale(tmp_path)
    assert not dead.exists() and alive.exists() and other.exists()


def test_a_made_cgroup_is_removed_once_empty() -> None:
    """Where this process may make cgroups (root in this container), one per controller;
    elsewhere none — and then nothing is left behind either."""
    made = cgroups.make_cgroups(SandboxLimits(processes=7), f"{os.getpid()}-test")
    pids = made.folders.get("pids")
    if pids is not None:
        assert (pids / "pids.max").read_text().strip() == "7"
    assert made.hit() == []
    folders = list(made.folders.values())
    assert made.remove()
    assert all(not folder.exists() for folder in folders)

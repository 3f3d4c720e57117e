"""`[sandbox]` of prose.toml: the limits' defaults, their spellings, and clear errors."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from openprose.session.opening import UsageError, tool_runtime
from openprose.vm.tools.limits import (
    GiB,
    LimitsProblem,
    MiB,
    SandboxLimits,
    limits_from_table,
    written_since,
)


def test_defaults_bound_what_the_attacks_asked_for() -> None:
    """1,500 processes, a 3 GiB allocation, 1 GiB to /tmp, 300 MB to the project."""
    limits = SandboxLimits()
    assert limits.processes < 1500
    assert limits.memory < 3 * GiB
    assert limits.tmp_size < GiB
    assert limits.disk_writes < 300 * 1000**2


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ({}, SandboxLimits()),
        ({"processes": 100}, SandboxLimits(processes=100)),
        ({"memory": "512MiB"}, SandboxLimits(memory=512 * MiB)),
        ({"memory": "1.5 GiB"}, SandboxLimits(memory=int(1.5 * GiB))),
        ({"tmp_size": "64m"}, SandboxLimits(tmp_size=64 * MiB)),
        ({"disk_writes": "1GB"}, SandboxLimits(disk_writes=1000**3)),
        ({"disk_writes": 4096}, SandboxLimits(disk_writes=4096)),
    ],
)
def test_spellings(table: dict[str, object], expected: SandboxLimits) -> None:
    assert limits_from_table(table) == expected


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"procs": 1}, "unknown setting 'procs' in [sandbox]; known: processes, memory"),
        ({"processes": 0}, "[sandbox] processes must be a positive whole number, got 0"),
        ({"processes": "10"}, "[sandbox] processes must be a positive whole number"),
        ({"processes": True}, "processes must be a positive whole number"),
        ({"memory": "lots"}, "[sandbox] memory must be a positive size"),
        ({"memory": "2 parsecs"}, "[sandbox] memory must be a positive size"),
        ({"memory": -1}, "[sandbox] memory must be a positive size"),
        ({"tmp_size": 10**30}, "[sandbox] tmp_size must be a positive size"),
        ({"disk_writes": 1.5}, "[sandbox] disk_writes must be a positive size"),
    ],
)
def test_bad_values_name_the_setting(table: dict[str, object], message: str) -> None:
    with pytest.raises(LimitsProblem) as raised:
        limits_from_table(table)
    assert message in str(raised.value)


def test_the_error_line_names_the_setting() -> None:
    limits = SandboxLimits(memory=512 * MiB, tmp_size=1000)
    assert limits.setting("memory") == "[sandbox] memory = 512MiB"
    assert limits.setting("processes") == "[sandbox] processes = 256"
    assert limits.setting("tmp_size") == "[sandbox] tmp_size = 1000"


def test_prose_toml_sets_the_limits(tmp_path: Path) -> None:
    (tmp_path / "prose.toml").write_text('[sandbox]\nprocesses = 32\nmemory = "1GiB"\n')
    runtime = tool_runtime(tmp_path, False, interactive=False)
    assert runtime.sandbox_limits == SandboxLimits(processes=32, memory=GiB)
    (tmp_path / "prose.toml").write_text('[sandbox]\nmemory = "huge"\n')
    with pytest.raises(UsageError, match=r"prose.toml: \[sandbox\] memory must be"):
        tool_runtime(tmp_path, False, interactive=False)


def test_written_since_counts_changed_files_below_without_following_links(
    tmp_path: Path,
) -> None:
    (tmp_path / "old").write_bytes(b"x" * 50_000)
    os.utime(tmp_path / "old", (0, 0))  # mtime only: ctime is now, as for a fresh file
    started = time.time() - 1
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f").write_bytes(b"x" * 100_000)
    (tmp_path / "link").symlink_to("/usr")
    assert 150_000 <= written_since([tmp_path], started) < 250_000
    assert written_since([tmp_path], time.time() + 60) == 0


def test_the_launcher_sets_the_rlimits_and_joins_the_cgroups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from openprose.vm.tools import limits

    limits_ = SandboxLimits(processes=10, memory=MiB, disk_writes=2 * MiB)
    monkeypatch.setattr(limits.os, "getuid", lambda: 1000)
    monkeypatch.setattr(limits, "user_tasks", lambda: 500)
    argv = limits.launcher(limits_)
    assert argv[1:] == [f"--nproc={10 + 500}", f"--data={MiB}", f"--fsize={2 * MiB}", "--"]
    monkeypatch.setattr(limits.os, "getuid", lambda: 0)  # root: exempt, no count
    argv = limits.launcher(limits_, [tmp_path / "a b"])
    assert argv[:2] == ["/bin/sh", "-c"]
    assert argv[2] == f"echo 0 > '{tmp_path}/a b/cgroup.procs' && exec \"$@\""
    assert "--nproc=10" in argv


def test_disk_watch_is_not_fooled_by_space_freed_elsewhere(tmp_path: Path) -> None:
    """Free space alone said nothing when another program freed as much as the command
    wrote (a flaky test found it): the folders are measured now and then anyway."""
    from openprose.vm.tools.limits import DiskWatch

    watch = DiskWatch([tmp_path], cap=64 * 1024)
    frozen = dict(watch.free)
    watch._free = lambda: dict(frozen)  # type: ignore[method-assign]  # nothing lost
    (tmp_path / "big").write_bytes(os.urandom(256 * 1024))
    watch.next_measure = 0  # the periodic measure is due
    assert watch.over()
    small = DiskWatch([tmp_path / "empty"], cap=64 * 1024)
    small.next_measure = 0
    assert not small.over()

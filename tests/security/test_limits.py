"""Resource exhaustion inside the sandbox: processes, memory, /tmp and project writes are
each bounded, named with their setting in the result, and the session goes on."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from openprose.vm.tools import Permissions, Toolbox
from openprose.vm.tools.limits import MiB, SandboxLimits
from tests.security.conftest import World, call, needs_sandbox

pytestmark = needs_sandbox

SMALL = SandboxLimits(processes=64, memory=256 * MiB, tmp_size=16 * MiB, disk_writes=16 * MiB)


def _box(world: World, limits: SandboxLimits = SMALL, **rules: object) -> Toolbox:
    rules = {"bash": "allow", "write": ["output/"], **rules}
    return Toolbox(
        world.root, Permissions.from_mapping(rules), agent="tester", sandbox_limits=limits
    )


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


async def _next_command_works(box: Toolbox) -> None:
    """A limit hit ends one command, not the session: the next one runs."""
    outcome = await call(box, "run_command", command="echo still-here")
    assert outcome.content.startswith("exit code 0") and "still-here" in outcome.content


@pytest.mark.parametrize(
    "command",
    [
        pytest.param("for i in $(seq 1500); do sleep 5 & done; wait", id="shell-loop"),
        pytest.param(
            'python3 -c "import subprocess as s\n'
            "ps=[]\nfor i in range(1500):\n"
            "  try: ps.append(s.Popen(['sleep','5']))\n"
            "  except OSError as e: print('refused', e); break\n"
            "print('started', len(ps))\"",
            id="python-popen",
        ),
        pytest.param(
            'python3 -c "import threading,time\nn=0\ntry:\n'
            "  for i in range(1500): threading.Thread(target=time.sleep,args=(5,)).start(); n+=1\n"
            "except RuntimeError as e: print('refused', e)\nprint('started', n)\"",
            id="threads",
        ),
        pytest.param("f() { f | f & }; f; sleep 3", id="fork-bomb"),
    ],
)
async def test_processes_are_bounded(world: World, command: str) -> None:
    box = _box(world)
    outcome = await call(box, "run_command", command=command, timeout_seconds=8)
    if "started" in outcome.content:
        started = int(outcome.content.split("started ")[1].split()[0])
        assert started < 64
    assert "processes" in outcome.content and "[sandbox] processes = 64" in outcome.content
    await _next_command_works(box)


@pytest.mark.parametrize(
    "command",
    [
        pytest.param("python3 -c \"b = bytearray(3 * 1024**3); print('allocated')\"", id="3GiB"),
        pytest.param(
            'python3 -c "x = []\nwhile True: x.append(bytearray(64 * 1024**2))"', id="grow"
        ),
        pytest.param(
            "python3 -c \"import mmap; m = mmap.mmap(-1, 3 * 1024**3); m[:] = b'x' * len(m)\"",
            id="mmap",
        ),
    ],
)
async def test_memory_is_bounded(world: World, command: str) -> None:
    box = _box(world)
    outcome = await call(box, "run_command", command=command, timeout_seconds=20)
    assert "allocated" not in outcome.content
    assert "[sandbox] memory = 256MiB" in outcome.content, outcome.content
    await _next_command_works(box)


@pytest.mark.parametrize(
    "command",
    [
        pytest.param("head -c 1024M /dev/zero > /tmp/big; ls -l /tmp/big", id="one-file"),
        pytest.param(
            "for i in $(seq 100); do head -c 10M /dev/zero > /tmp/f$i || break; done; du -sm /tmp",
            id="many-files",
        ),
        pytest.param(
            "for i in $(seq 100); do head -c 10M /dev/zero > /dev/shm/f$i || break; done",
            id="dev-shm",
        ),
    ],
)
async def test_tmp_is_bounded(world: World, command: str) -> None:
    box = _box(world)
    outcome = await call(box, "run_command", command=command, timeout_seconds=20)
    assert ("[sandbox] tmp_size = 16MiB" in outcome.content) or (
        "[sandbox] disk_writes = 16MiB" in outcome.content
    ), outcome.content
    await _next_command_works(box)


@pytest.mark.parametrize(
    ("rules", "command"),
    [
        pytest.param({}, "head -c 300M /dev/zero > output/big", id="one-file"),
        pytest.param(
            {},
            "for i in $(seq 300); do head -c 1M /dev/urandom > output/f$i; done",
            id="many-files",
        ),
        pytest.param(
            {"write": "allow"},
            "mkdir -p deep/er; for i in $(seq 300); do head -c 1M /dev/urandom > deep/er/f$i; done",
            id="write-allow",
        ),
        pytest.param(
            {},
            "python3 -c \"f=open('output/s','wb')\nfor i in range(300): f.write(b'x'*2**20); f.flush()\"",
            id="python",
        ),
    ],
)
async def test_project_writes_are_bounded(
    world: World, rules: dict[str, object], command: str
) -> None:
    box = _box(world, **rules)
    outcome = await call(box, "run_command", command=command, timeout_seconds=30)
    assert "[sandbox] disk_writes = 16MiB" in outcome.content, outcome.content
    assert _size(world.root) < 100 * MiB
    await _next_command_works(box)


async def test_what_the_last_command_wrote_is_not_the_next_ones(world: World) -> None:
    """Commands back to back: the first one's 12 MiB, written within the second before the
    next starts, do not count against the next one's 16 MiB."""
    box = _box(world)
    first = await call(box, "run_command", command="head -c 12M /dev/urandom > output/a")
    assert first.content.startswith("exit code 0"), first.content
    second = await call(box, "run_command", command="head -c 8M /dev/urandom > output/b; sleep 0.5")
    assert second.content.startswith("exit code 0"), second.content


async def test_a_command_within_the_limits_is_untouched(world: World) -> None:
    box = _box(world)
    command = (
        "head -c 4M /dev/zero > output/ok && head -c 4M /dev/zero > /tmp/ok && "
        'python3 -c "b = bytearray(64 * 1024**2)" && '
        "for i in $(seq 10); do sleep 0.1 & done; wait; echo fine"
    )
    outcome = await call(box, "run_command", command=command)
    assert outcome.content.startswith("exit code 0\n"), outcome.content
    assert "fine" in outcome.content and "limit" not in outcome.content
    assert os.path.getsize(world.root / "output" / "ok") == 4 * MiB


@pytest.mark.parametrize("folder", ["/", "/dev", "/etc/ssl/private", ".prose", "/proc/sys"])
async def test_no_other_ram_backed_folder_is_writable(world: World, folder: str) -> None:
    """Every tmpfs is RAM: besides the sized /tmp and /dev/shm, none takes a byte."""
    box = _box(world)
    outcome = await call(
        box, "run_command", command=f"head -c 1M /dev/zero > {folder}/probe; echo done"
    )
    assert "done" in outcome.content
    check = await call(box, "run_command", command=f"test -e {folder}/probe && echo EXISTS")
    assert "EXISTS" not in check.content


def test_a_limit_in_prose_toml_reaches_the_run_which_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """End to end: `[sandbox]` of prose.toml bounds the run's commands; the limit line is
    the tool result the model gets, and the run finishes (nothing to resume)."""
    import json

    from openprose.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PROSE_PROVIDER", raising=False)
    (tmp_path / "prose.toml").write_text('[sandbox]\ndisk_writes = "2MiB"\n')
    (tmp_path / "main.prose").write_text(
        'agent builder:\n  prompt: "You build"\n  permissions:\n    write: ["out/"]\n'
        '    bash: allow\n\nsession: builder\n  prompt: "Build it"\n'
    )
    big = "head -c 50M /dev/zero > out/big"
    rules = {
        "rules": [
            {
                "match": "Build it",
                "turns": [
                    {"tool_calls": [{"name": "run_command", "arguments": {"command": big}}]},
                    {"tool_calls": [{"name": "run_command", "arguments": {"command": "ls"}}]},
                    {"text": "built"},
                ],
            }
        ]
    }
    (tmp_path / "rules.json").write_text(json.dumps(rules))
    assert main(["run", "main.prose", "--provider", "scripted:rules.json", "--json"]) == 0
    run_id = json.loads(capsys.readouterr().out)["run_id"]
    journal = (tmp_path / ".prose" / "runs" / run_id / "journal.jsonl").read_text()
    results = [json.loads(line) for line in journal.splitlines() if '"tool_result"' in line]
    assert "[sandbox] disk_writes = 2MiB" in str(results[0])
    assert "exit code 0" in str(results[1])
    assert os.path.getsize(tmp_path / "out" / "big") <= 2 * MiB


@pytest.mark.parametrize(
    ("command", "limit"),
    [
        ("for i in $(seq 1500); do sleep 5 & done 2>/dev/null; wait", "processes"),
        ("python3 -c \"b = bytearray(3 * 1024**3); print('allocated')\"", "memory"),
        ("head -c 1024M /dev/zero > /tmp/big", "disk_writes"),  # also no file beyond it
        ("for i in $(seq 300); do head -c 1M /dev/urandom > output/f$i; done", "disk_writes"),
    ],
    ids=["1500-processes", "3GiB", "1GiB-tmp", "300MB-project"],
)
async def test_the_issues_attempts_are_bounded_by_the_defaults(
    world: World, command: str, limit: str
) -> None:
    box = _box(world, SandboxLimits())
    outcome = await call(box, "run_command", command=command, timeout_seconds=30)
    first = outcome.content.splitlines()[0]
    assert SandboxLimits().setting(limit) in first, outcome.content[:500]
    assert "allocated" not in outcome.content
    assert _size(world.root) <= SandboxLimits().disk_writes + 16 * MiB

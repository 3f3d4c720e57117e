"""A project folder that cannot be written — read-only, or a disk that fills up during a run —
and a rows file that cannot be written: one line naming the path and the fix, never a
traceback; a run cut short by a full disk resumes once there is room.

The file systems are real: a small tmpfs mounted in a private mount namespace (`unshare -m`,
as root), so the tests skip where that is not allowed."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.commands import run_tool
from tests.support.fake_llm_server import start_in_subprocess

ROOT = Path(__file__).resolve().parents[3]


def _can_mount() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount -t tmpfs tmpfs /mnt"],
        capture_output=True,
        check=False,
    )
    return probe.returncode == 0


needs_mount = pytest.mark.skipif(
    not _can_mount(), reason="needs `unshare -m` and mount (root in a private mount namespace)"
)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    base_url, stop = start_in_subprocess(latency_ms=20)
    yield base_url
    stop()


def _in_small_fs(tmp_path: Path, script: str, *, size: str = "1m", base_url: str = "") -> str:
    """Run `script` (sh) in `tmp_path/fs`, a fresh tmpfs of `size` holding copies of the
    files in `tmp_path/seed`; prose is `python -m openprose.cli`. Its output, both streams."""
    mount = tmp_path / "fs"
    mount.mkdir()
    prose = f"{shlex.quote(sys.executable)} -m openprose.cli"
    body = (
        f"mount -t tmpfs -o size={size} tmpfs {mount} && cp -r {tmp_path}/seed/. {mount} && "
        f'cd {mount} && prose() {{ {prose} "$@" 2>&1; echo "rc=$?"; }}\n{script}'
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT / "src") + ":" + str(ROOT),
        "OPENAI_BASE_URL": f"{base_url}/v1",
        "OPENAI_API_KEY": "sk-test-unwritable",
        "TERM": "dumb",
    }
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", body],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return done.stdout + done.stderr


@needs_mount
def test_a_read_only_project_is_one_line_with_the_fix(tmp_path: Path) -> None:
    seed = tmp_path / "seed"
    seed.mkdir()
    (seed / "p.prose").write_text('session "x"\n')
    (seed / "a.yaml").write_text('default: "hi"\n')
    (seed / "c.jsonl").write_text("{}\n")
    output = _in_small_fs(
        tmp_path,
        f"mount -o remount,ro {tmp_path}/fs\n"
        "prose run p.prose --provider scripted:a.yaml\n"
        "prose run p.prose --provider scripted:a.yaml --json\n"
        "prose batch p.prose c.jsonl --provider scripted:a.yaml\n",
    )
    assert "Traceback" not in output, output
    assert output.count("rc=2") == 3, output
    assert "prose: the run could not start: " in output
    assert "/.prose: read-only file system (work in a writable folder)" in output
    shown = json.loads(next(line for line in output.splitlines() if line.startswith("{")))
    assert shown["status"] == "not_run" and "read-only" in shown["error"]
    assert "prose batch: the batch could not start: " in output


@needs_mount
def test_a_disk_full_during_a_run_says_how_to_continue_and_the_run_resumes(
    tmp_path: Path, server: str
) -> None:
    seed = tmp_path / "seed"
    seed.mkdir()
    program = "".join(f'session "step {i} {"words " * 200}"\n  context: []\n' for i in range(40))
    (seed / "p.prose").write_text(program)
    output = _in_small_fs(
        tmp_path,
        # fill all but ~150 KB, run until the disk is full, free the space, resume
        "head -c 870000 /dev/zero > filler 2>/dev/null\n"
        "prose run p.prose -q\n"
        "rm filler\n"
        'prose resume "$(ls .prose/runs)" -q --json\n'
        "echo temporary-files $(find .prose -name '.*.tmp' | wc -l)\n",
        base_url=server,
    )
    assert "Traceback" not in output, output
    first, _, rest = output.partition("rc=1")
    assert rest, output  # the first run failed (exit 1)
    assert "prose: cannot write the run: no space left on device (free some space" in first
    assert "keeps what it finished; after fixing the cause, continue it with: prose resume" in first
    resumed = json.loads(next(line for line in rest.splitlines() if line.startswith("{")))
    assert resumed["status"] == "succeeded", output
    assert resumed["usage"]["requests_served_from_journal"] > 0
    assert "rc=0\ntemporary-files 0" in rest  # no half-written binding left behind


def test_an_unwritable_rows_file_is_refused_before_the_batch_starts(tmp_path: Path) -> None:
    (tmp_path / "p.prose").write_text('session "x"\n')
    (tmp_path / "a.yaml").write_text('default: "hi"\n')
    (tmp_path / "c.jsonl").write_text("{}\n")
    (tmp_path / "rows").mkdir()
    for target, said in [
        ("rows", "-o rows: is a folder; give the rows file's name"),
        ("nowhere/rows.jsonl", "-o nowhere/rows.jsonl: no such folder nowhere"),
    ]:
        done = run_tool(
            "prose",
            "batch",
            "p.prose",
            "c.jsonl",
            "-o",
            target,
            "--provider",
            "scripted:a.yaml",
            cwd=tmp_path,
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr.strip() == f"prose batch: {said}"
        assert not (tmp_path / ".prose" / "batches").exists()  # nothing was started

"""`prose batch` on a disk that fills up: it stops sending at the first failed write, says so
in one line with the resume command, exits 1, and reports no row it did not write; after
space is freed the resume finishes every case, re-sending no more calls than were in flight.

The file system is real: a small tmpfs in a private mount namespace (`unshare -m`, as root),
so the test skips where that is not allowed. The failing writes in between are also checked
on the run log itself (`RunLog`), with the OSError raised by the file layer."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from openprose.record.runlog import RunLog
from tests.support.fake_llm_server import start_in_subprocess

ROOT = Path(__file__).resolve().parents[3]
CASES = 200
MAX_RUNS = 16


def _can_mount() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount -t tmpfs tmpfs /mnt"],
        capture_output=True,
        check=False,
    )
    return probe.returncode == 0


@pytest.fixture
def server() -> Iterator[str]:
    base_url, stop = start_in_subprocess(latency_ms=20)
    yield base_url
    stop()


@pytest.mark.skipif(not _can_mount(), reason="needs `unshare -m` and mount (root)")
@pytest.mark.parametrize("processes", [1, 2])
def test_a_full_disk_stops_the_batch_and_the_resume_finishes_it(
    tmp_path: Path, server: str, processes: int
) -> None:
    mount = tmp_path / "fs"
    mount.mkdir()
    words = "words " * 300  # each run's records are a few KB: the disk fills mid-batch
    seed = tmp_path / "seed"
    seed.mkdir()
    (seed / "p.prose").write_text(
        f'input topic: "a topic"\nlet text = session "Write about {{topic}} {words}"\n'
        "output answer = text\n"
    )
    (seed / "c.jsonl").write_text("".join(f'{{"topic": "t{i}"}}\n' for i in range(CASES)))
    prose = f"{shlex.quote(sys.executable)} -m openprose.cli"
    stats = (
        f"{shlex.quote(sys.executable)} -c 'import urllib.request as u; "
        f'print("stats", u.urlopen("{server}/_control/stats").read().decode())\''
    )
    script = (
        f"mount -t tmpfs -o size=4m tmpfs {mount} && cp -r {seed}/. {mount} && cd {mount}\n"
        f'prose() {{ {prose} "$@" 2>&1; echo "rc=$?"; }}\n'
        # all but ~400 KB: the disk fills mid-batch; freed, it holds the resume's run folders
        "head -c 3750000 /dev/zero > filler 2>/dev/null\n"
        f"prose batch p.prose c.jsonl -o out.jsonl --max-runs {MAX_RUNS} --processes {processes}\n"
        f"{stats}\n"
        "echo rows-before-resume $(wc -l < out.jsonl)\n"
        "rm filler\n"
        'prose batch --resume "$(ls .prose/batches)" --json\n'
        f"{stats}\n"
        "echo temporary-files $(find .prose -name '.*.tmp' | wc -l)\n"
        "echo lines $(python3 -c 'import json,sys; "
        'print(len({json.loads(l)["line"] for l in open("out.jsonl")}))\')\n'
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT / "src") + ":" + str(ROOT),
        "OPENAI_BASE_URL": f"{server}/v1",
        "OPENAI_API_KEY": "sk-test-disk-full",
        "TERM": "dumb",
    }
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = done.stdout + done.stderr
    assert "Traceback" not in output and "Exception in callback" not in output, output
    first, _, rest = output.partition("rc=")
    assert rest.startswith("1\n"), output  # the batch failed
    said = [line for line in first.splitlines() if "cannot write the batch" in line]
    assert len(said) == 1, output
    assert "no space left on device" in said[0]
    assert "continue with: prose batch --resume " in said[0]
    assert "succeeded  " not in first  # no summary of rows that were not written
    sent = [
        json.loads(line.split(" ", 1)[1])["attempts"]
        for line in output.splitlines()
        if line.startswith("stats ")
    ]
    assert len(sent) == 2, output
    written = int(
        next(line for line in output.splitlines() if line.startswith("rows-before-resume")).split()[
            1
        ]
    )
    assert written < CASES  # the disk did fill before the end
    resumed = json.loads(next(line for line in rest.splitlines() if line.startswith("{")))
    assert resumed["status"] == "succeeded", output
    assert "rc=0" in rest
    assert f"lines {CASES}" in output  # every case has its row, once
    # every case answered once, but for the calls in flight at the failure, sent again on
    # resume: had the batch gone on sending after the disk filled, those would count here
    assert CASES <= sent[1] <= CASES + MAX_RUNS
    assert "temporary-files 0" in output


def _failing_write(fail_after: int) -> object:
    real = os.write
    calls = {"n": 0}

    def write(fd: int, data: object) -> int:
        calls["n"] += 1
        if calls["n"] > fail_after:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data)  # type: ignore[arg-type]

    return write


def test_the_run_log_stops_at_the_first_failed_write_and_tells_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = tmp_path / "rows.jsonl"
    rows_fd = os.open(rows, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    heard: list[OSError] = []

    async def scenario() -> RunLog:
        log = RunLog(tmp_path / "runs.ndjson")
        log.names[rows_fd] = str(rows)
        log.on_error = heard.append
        log.add("r1", "j", "", b"{}")
        log.write_after(rows_fd, b"row 1\n")
        await asyncio.sleep(0)  # the group commit: both written
        monkeypatch.setattr(os, "write", _failing_write(0))
        log.add("r2", "j", "", b"{}")
        log.write_after(rows_fd, b"row 2\n")
        await asyncio.sleep(0)  # fails: reported to on_error, not to the loop
        log.add("r3", "j", "", b"{}")
        log.write_after(rows_fd, b"row 3\n")
        await asyncio.sleep(0)
        monkeypatch.undo()
        log.close()
        return log

    loop_errors: list[dict[str, object]] = []

    async def main() -> RunLog:
        asyncio.get_running_loop().set_exception_handler(lambda _loop, c: loop_errors.append(c))
        return await scenario()

    log = asyncio.run(main())
    os.close(rows_fd)
    assert loop_errors == []
    assert len(heard) == 1 and heard[0].errno == errno.ENOSPC
    assert log.error is heard[0] and log.error.filename == str(tmp_path / "runs.ndjson")
    assert rows.read_text() == "row 1\n"  # no row after the failure, even once writes work
    assert b'"r3"' not in (tmp_path / "runs.ndjson").read_bytes()


def test_a_failed_row_write_names_the_rows_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = tmp_path / "rows.jsonl"
    rows_fd = os.open(rows, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    log = RunLog(tmp_path / "runs.ndjson")
    log.names[rows_fd] = str(rows)
    log.add("r1", "j", "", b"{}")
    log.flush()
    log.write_after(rows_fd, b"row\n")  # no event loop: written at once
    assert log.error is None
    monkeypatch.setattr(os, "write", _failing_write(0))
    log.write_after(rows_fd, b"row 2\n")
    monkeypatch.undo()
    os.close(rows_fd)
    assert log.error is not None and log.error.filename == str(rows)
    log.close()


class _WorkerProcess:
    """A worker process as the batch process sees it: its stdout lines, then its exit."""

    def __init__(self, *lines: bytes) -> None:
        self.stdout = asyncio.StreamReader()
        for line in lines:
            self.stdout.feed_data(line + b"\n")
        self.stdout.feed_eof()
        self.stdin = self
        self.returncode = 1

    def write(self, data: bytes) -> None:
        return None

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        return None

    async def wait(self) -> int:
        return self.returncode


async def test_a_workers_failed_write_stops_the_batch_with_that_error() -> None:
    from openprose.batches.job import Job
    from openprose.batches.processes import _Worker

    said = b'{"write_error": {"errno": 28, "strerror": "No space left on device", "filename": "/b/runs.1.ndjson"}}'
    worker = _Worker(1, _WorkerProcess(b'{"ready":true}', said))  # type: ignore[arg-type]
    await worker.ready
    with pytest.raises(OSError) as raised:
        await worker.run(Job(1, "b-1", {}))
    assert raised.value.errno == errno.ENOSPC and raised.value.filename == "/b/runs.1.ndjson"

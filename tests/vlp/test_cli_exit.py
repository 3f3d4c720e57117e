"""`vlp` as a process (`vlp.cli.run`) ends without the interpreter's teardown once its
output is out, unless something waits for the interpreter's end."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import vlp

SRC = str(Path(vlp.__file__).resolve().parents[1])
ENV = {**os.environ, "PYTHONPATH": SRC}  # this tree's code, not an installed copy


def _invalid_stream(path: Path, lines: int) -> Path:
    path.write_bytes(b'{"id": 1}\n' * lines)
    return path


def _run(code: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, env=ENV, check=False)


def test_a_large_report_is_written_whole_with_the_exit_code(tmp_path: Path) -> None:
    stream = _invalid_stream(tmp_path / "bad.ndjson", 20_000)  # a report of ~2 MB
    done = subprocess.run(
        [sys.executable, "-m", "vlp.cli", "validate", "--jobs", "1", str(stream)],
        capture_output=True,
        env=ENV,
        check=False,
    )
    lines = done.stdout.decode().splitlines()
    assert done.returncode == 1
    assert len(lines) > 20_000
    assert lines[-1].startswith("INVALID: 20000 message(s), 0 valid,")
    assert done.stderr == b""


def test_atexit_handlers_still_run(tmp_path: Path) -> None:
    stream = _invalid_stream(tmp_path / "bad.ndjson", 3)
    done = _run(
        "import atexit, sys\n"
        "atexit.register(print, 'handler ran')\n"
        f"sys.argv = ['vlp', 'validate', {str(stream)!r}]\n"
        "from vlp.cli import run\n"
        "run()"
    )
    assert done.returncode == 1
    assert done.stdout.decode().splitlines()[-1] == "handler ran"


def test_a_running_thread_is_waited_for(tmp_path: Path) -> None:
    stream = _invalid_stream(tmp_path / "bad.ndjson", 3)
    done = _run(
        "import sys, threading, time\n"
        "threading.Thread(target=lambda: (time.sleep(0.3), print('thread done'))).start()\n"
        f"sys.argv = ['vlp', 'validate', {str(stream)!r}]\n"
        "from vlp.cli import run\n"
        "run()"
    )
    assert done.returncode == 1
    assert done.stdout.decode().splitlines()[-1] == "thread done"


def test_a_closed_output_pipe_ends_quietly(tmp_path: Path) -> None:
    stream = _invalid_stream(tmp_path / "bad.ndjson", 20_000)
    reader = subprocess.Popen(
        [sys.executable, "-m", "vlp.cli", "validate", "--jobs", "1", str(stream)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=ENV,
    )
    assert reader.stdout is not None and reader.stderr is not None
    reader.stdout.read(100)
    reader.stdout.close()  # `| head`
    assert reader.wait() == 0
    assert reader.stderr.read() == b""

"""Helpers for the `prose` front-end command tests: in-process and as a real subprocess."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from openprose.cli import main

Result = tuple[int, str, str]


@pytest.fixture
def prose(capsys: pytest.CaptureFixture[str]) -> Callable[..., Result]:
    """Run `prose ARGS...` in-process: (exit code, stdout, stderr)."""

    def run(*args: str | Path) -> Result:
        code = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture
def prose_process() -> Callable[..., Result]:
    """Run `python -m openprose.cli ARGS...` as a subprocess: (exit code, stdout, stderr)."""

    def run(*args: str | Path) -> Result:
        done = subprocess.run(
            [sys.executable, "-m", "openprose.cli", *map(str, args)],
            check=False,
            capture_output=True,
            text=True,
            timeout=120,
        )
        return done.returncode, done.stdout, done.stderr

    return run


@pytest.fixture
def prose_on_fifo(tmp_path: Path) -> Callable[..., Result]:
    """Run `python -m openprose.cli ARGS... FIFO` as a subprocess while a thread writes `data`
    into the FIFO `tmp_path/pipe.prose` once. A command that opened the FIFO a second time
    would block there, so a 30-second timeout fails the test instead of hanging it."""

    def run(data: bytes, *args: str) -> Result:
        import os
        import threading

        pipe = tmp_path / "pipe.prose"
        os.mkfifo(pipe)

        def feed() -> None:
            with open(pipe, "wb") as out:
                out.write(data)

        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
        done = subprocess.run(
            [sys.executable, "-m", "openprose.cli", *args, str(pipe)],
            check=False,
            capture_output=True,
            text=True,
            timeout=30,
        )
        writer.join(5)
        return done.returncode, done.stdout, done.stderr

    return run

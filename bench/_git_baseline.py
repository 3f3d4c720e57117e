"""A baseline pinned from git history: a commit's `src/`, exported for a benchmark to run
beside this tree (put first on PYTHONPATH)."""

from __future__ import annotations

import subprocess
import tarfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def export(ref: str, into: Path) -> Path:
    """``git archive`` of ``ref``'s src/ unpacked under ``into``; returns that src/."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", ref, "src"],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"

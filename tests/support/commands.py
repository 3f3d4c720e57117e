"""Running the four command lines as real processes, as a user's shell would."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

MODULES = {"prose": "openprose.cli", "vlp": "vlp.cli", "vpp": "vpp.cli", "plsp": "plsp.cli"}


def run_tool(
    tool: str,
    *argv: str | Path,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
    stdin: str = "",
) -> subprocess.CompletedProcess[str]:
    """`TOOL ARGV...` (prose, vlp, vpp or plsp) in a fresh interpreter, `stdin` as its
    standard input: its exit status and both streams as text."""
    return subprocess.run(
        [sys.executable, "-m", MODULES[tool], *map(str, argv)],
        cwd=cwd,
        env=None if env is None else dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        input=stdin,
    )

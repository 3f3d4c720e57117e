"""Instruction counts of a whole process under callgrind: the figure that holds on a loaded
machine, where wall and CPU time of the same tree move by ±25 % between runs. A benchmark puts
`Counter.argv` before the command it runs and reads `Counter.total()` after."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path


def available() -> bool:
    return shutil.which("valgrind") is not None


class Counter:
    """One counted process: valgrind's callgrind writes its totals to a file of its own."""

    def __init__(self) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="callgrind-")
        self.out = Path(self._dir.name) / "callgrind.out"
        # Threads included; the children a process starts (the OTLP export helper, a
        # receiver) are not counted.
        self.argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={self.out}", "-q"]

    def total(self) -> int:
        """The process's instructions (callgrind's `summary`/`totals` line); removes the file."""
        try:
            for line in self.out.read_text(encoding="utf-8").splitlines():
                if line.startswith(("summary:", "totals:")):
                    return int(line.split()[1])
            raise SystemExit(f"no totals in {self.out}")
        finally:
            self._dir.cleanup()

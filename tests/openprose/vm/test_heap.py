"""A run's big texts go back to the system once freed (glibc's mmap threshold fixed)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

import openprose

SRC = Path(openprose.__file__).parents[1]

# A 16 MiB block freed raises glibc's threshold; 8 MiB blocks then come from the heap and
# stay in the process once freed, unless the threshold was fixed first.
_CHILD = """
import sys
from openprose.vm.heap import give_big_blocks_back
fixed = sys.argv[1] == "fixed" and give_big_blocks_back()
def rss_kib():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1])
big = bytearray(16 << 20); big[::4096] = b"x" * len(big[::4096]); del big
before = rss_kib()
block = bytearray(8 << 20); block[::4096] = b"x" * len(block[::4096]); del block
print(int(fixed), rss_kib() - before)
"""


def _kept_kib(mode: str) -> tuple[bool, int]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    env.pop("MALLOC_MMAP_THRESHOLD_", None)
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, mode], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    return out[0] == "1", int(out[1])


@pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc only"
)
def test_a_freed_big_block_leaves_the_process_only_with_the_threshold_fixed() -> None:
    fixed, kept_fixed = _kept_kib("fixed")
    _, kept_default = _kept_kib("default")
    assert fixed
    assert kept_default > 4096  # the 8 MiB stayed: what made a 100,000-item run's peak
    assert kept_fixed < 1024

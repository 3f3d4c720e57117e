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


# Blocks under the mmap threshold come from the heap; freed, they leave free space at its
# top. With glibc's trim threshold left at 128 KiB (what fixing the mmap threshold alone
# does) that space is handed back and the next blocks fault their pages in again: a batch's
# runs did so ~0.4 times a run.
_CHURN_CHILD = """
import ctypes, resource, sys
from openprose.vm.heap import give_big_blocks_back
if sys.argv[1] == "fixed":
    assert give_big_blocks_back()
else:  # the mmap threshold alone, as before the trim threshold was fixed too
    ctypes.CDLL(None).mallopt(-3, 1 << 20)
def churn():
    blocks = [bytearray(64 << 10) for _ in range(128)]  # 8 MiB, each block from the heap
    del blocks
churn()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
churn()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _churn_faults(mode: str) -> int:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    for name in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES"):
        env.pop(name, None)
    out = subprocess.run(
        [sys.executable, "-c", _CHURN_CHILD, mode],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return int(out)


@pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc only"
)
def test_freed_heap_space_is_kept_for_the_next_blocks() -> None:
    kept = _churn_faults("fixed")
    given_back = _churn_faults("mmap-threshold-only")
    assert given_back > 1000  # 8 MiB faulted in again: 2,048 pages
    assert kept < 200

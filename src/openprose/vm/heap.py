"""The C heap of a process that runs programs: big blocks go back to the system when freed.

glibc serves a block of 128 KiB or more with its own mmap and unmaps it on free, but raises
that threshold to the size of every such block freed (up to 32 MiB): after the first few
megabyte-sized texts (an --inputs file, a 100,000-item binding or `outputs.json`, the
`run_finished` journal line, the `--json` object), later ones come from the heap and stay
in the process once freed, and those made on the writer and worker threads come from
their own arenas, which the main thread never reuses. Each big text a run makes thus
added to its peak. Setting the threshold (which turns the raising off) keeps them apart:
a 100,000-item pmap peaks ~14 MB lower (docs/decisions.md, mem35d).

Fixing that threshold also stops glibc from raising its trim threshold (the free memory
at the top of the heap it keeps instead of handing back with `brk`), which then stays at
128 KiB: a batch's runs, freeing and allocating a few hundred KiB at a time, shrank and
grew the heap ~0.4 times a case, each growth page-faulting its pages in again (50,000
minor faults in 3,000 runs). So the trim threshold is fixed too (docs/decisions.md,
batch33e).
"""

from __future__ import annotations

import functools

_M_TRIM_THRESHOLD = -1  # mallopt's parameter numbers (malloc.h)
_M_MMAP_THRESHOLD = -3
# Not glibc's starting 128 KiB: the journal's and the trail's batches (a few hundred KiB in
# a big fan-out) would then be mapped and unmapped each time (3x the page faults at 30,000
# items); the texts that raised a run's peak are megabytes.
_THRESHOLD = 1024 * 1024
# Free heap top kept for the next allocations (glibc's own raising sets it to twice the
# biggest block freed, up to 64 MiB): 8 MiB left 35,000 of those 50,000 faults; 16 MiB and
# 32 MiB none, and the same peak (a 100,000-item pmap: 56.8 / 56.6 MB, 55.7 at 128 KiB).
_TRIM_THRESHOLD = 16 * 1024 * 1024


@functools.cache
def give_big_blocks_back() -> bool:
    """Fix glibc's mmap and trim thresholds, once per process; False where there is no
    glibc `mallopt` (macOS, musl: their allocators do not raise a threshold)."""
    import ctypes  # here: ~4 ms to import, and only a run needs it

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, _THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD)
    )

"""The C heap of a process that runs programs: big blocks go back to the system when freed.

glibc serves a block of 128 KiB or more with its own mmap and unmaps it on free, but raises
that threshold to the size of every such block freed (up to 32 MiB): after the first few
megabyte-sized texts (an --inputs file, a 100,000-item binding or `outputs.json`, the
`run_finished` journal line, the `--json` object), later ones come from the heap and stay
in the process once freed, and those made on the writer and worker threads come from
their own arenas, which the main thread never reuses. Each big text a run makes thus
added to its peak. Setting the threshold (which turns the raising off) keeps them apart:
a 100,000-item pmap peaks ~14 MB lower (docs/decisions.md, mem35d).
"""

from __future__ import annotations

import functools

_M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)
# Not glibc's starting 128 KiB: the journal's and the trail's batches (a few hundred KiB in
# a big fan-out) would then be mapped and unmapped each time (3x the page faults at 30,000
# items); the texts that raised a run's peak are megabytes.
_THRESHOLD = 1024 * 1024


@functools.cache
def give_big_blocks_back() -> bool:
    """Fix glibc's mmap threshold, once per process; False where there is no glibc `mallopt`
    (macOS, musl: their allocators do not raise a threshold)."""
    import ctypes  # here: ~4 ms to import, and only a run needs it

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, _THRESHOLD))

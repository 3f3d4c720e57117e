"""The default executor: every run of the batch in this process, on one event loop, sharing
one provider (one connection pool, one concurrency limit per provider)."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from openprose.batches.job import CaseRunner, Job

__all__ = ["fewer_collections", "run_in_process"]

YOUNG_OBJECTS_PER_PASS = 100_000  # new objects before a collector pass (Python's: 700)


async def run_in_process(
    runner: CaseRunner,
    jobs: Iterator[Job],
    deliver: Callable[[dict[str, Any]], None],
    max_runs: int,
) -> None:
    """`max_runs` workers take jobs from the shared iterator (pulled lazily: a batch of a
    million lines never holds a million tasks) and deliver each row as its run ends."""

    async def worker() -> None:
        for job in jobs:
            deliver(await runner.run(job))
            # one loop turn: the run's records and row are written (the run log's group
            # commit) before this worker starts another run, so a failed write stops the
            # batch with at most `max_runs` calls made and not kept
            await asyncio.sleep(0)

    workers = [asyncio.ensure_future(worker()) for _ in range(max_runs)]
    try:
        await asyncio.gather(*workers)
    except BaseException:
        # one worker's error (the disk is full) ends the others at once: none starts
        # another run, none sends another request
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        raise


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Python's cyclic garbage collector, tuned for thousands of short runs: what exists
    now (modules, the program, the provider) is frozen out of its passes, and a pass starts
    after 100,000 new objects, not 700. A batch makes no cyclic garbage (a finished run is
    freed by reference counting: 256 unreachable objects after 1,000 runs with collection
    off, all from start-up), so a pass only walks the in-flight runs' objects, in vain.
    Measured (CPU of the collector, 10,000 runs, 256 in flight): 0.82 s at 10,000 new
    objects, 0.01 s at 100,000, the same peak RSS (61-62 MB)."""
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(YOUNG_OBJECTS_PER_PASS, 10, 10)
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()

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

    await asyncio.gather(*(worker() for _ in range(max_runs)))


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Python's cyclic garbage collector, tuned for thousands of short runs: what exists
    now (modules, the program, the provider) is frozen out of its passes, and a pass starts
    after 10,000 new objects, not 700. Measured on 3,000 runs: 0.3-0.5 s of collections
    without this, 0.02-0.05 s with it."""
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()

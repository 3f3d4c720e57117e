"""The default executor: every run of the batch in this process, on one event loop, sharing
one provider (one connection pool, one concurrency limit per provider)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

from openprose.batches.job import CaseRunner, Job

__all__ = ["run_in_process"]


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

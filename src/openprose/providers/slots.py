"""A provider's concurrency limit: at most `size` calls hold a slot at once, the others wait
for one in arrival order — `asyncio.Semaphore`'s contract, for the path every model call
takes. The semaphore's `async with` costs two coroutines, and its `locked()` a generator,
on each acquire (~8.5k instructions on CPython 3.11); a free slot taken here costs a method
call (~1.5k with its release):

    if not slots.take():
        await slots.wait()
    try:
        ...
    finally:
        slots.release()
"""

from __future__ import annotations

import asyncio
from collections import deque

__all__ = ["Slots"]


class Slots:
    """`size` slots. A slot freed while calls wait passes straight to the first of them,
    so a free slot exists only when nobody waits, and a newcomer never takes one ahead of
    a waiting call."""

    __slots__ = ("_free", "_waiters")

    def __init__(self, size: int) -> None:
        if size < 0:
            raise ValueError(f"a number of slots cannot be negative, got {size}")
        self._free = size
        # calls waiting, oldest first; a cancelled one stays until `release` passes it by
        self._waiters: deque[asyncio.Future[None]] = deque()

    def take(self) -> bool:
        """Take a free slot at once (True), or none is free (False: `wait` for one)."""
        if self._free:
            self._free -= 1
            return True
        return False

    async def wait(self) -> None:
        """Until a slot is handed to this call (after the calls that waited before it).
        A call cancelled as a slot was handed to it passes the slot on."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self.release()
            else:
                waiter.cancel()  # `release` passes it by
            raise

    def release(self) -> None:
        """Give a slot back: to the first call still waiting, else to the free ones."""
        waiters = self._waiters
        while waiters:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self._free += 1

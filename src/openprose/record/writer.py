"""The process's background writer: file writes a run makes often and nobody waits for
(binding files, audit trail batches) leave the event loop for one thread.

Creating a file costs ext4 0.05-1 ms of kernel time here, and a run makes one per binding;
the audit trail turns journal events into VLP messages and appends them. Both go through
`put(sink, key, item)`, which only records the item under `(sink, key)`. The first `put`
after a batch wakes the thread, which waits `FLUSH_INTERVAL` so that a burst costs one
wake-up, then takes everything pending and calls `sink(key, items)` for each key, items in
the order they were put (a binding file writes only the latest text; a trail writes all its
events). `flush`/`aflush` wait until everything put before the call is written; `close` writes
at once and ends the thread.

One writer serves the whole process (`shared_writer`): a batch runs thousands of runs in one
process, and a thread per run (or per kind of file) cost more wake-ups than the runs did.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Generator
from typing import Any, Protocol

Sink = Callable[[Any, list[Any]], None]


class Waiter(Protocol):
    def set(self) -> None: ...


class LoopWaiter:
    """An awaitable the writer thread wakes with `set()` (as it would a `threading.Event`)."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._future: asyncio.Future[None] = self._loop.create_future()

    def set(self) -> None:
        self._loop.call_soon_threadsafe(self._resolve)

    def _resolve(self) -> None:
        if not self._future.done():
            self._future.set_result(None)

    def __await__(self) -> Generator[Any, None, None]:
        return self._future.__await__()


class BackgroundWriter:
    FLUSH_INTERVAL = 0.01  # seconds a batch may gather (the journal's commit interval)

    def __init__(self, thread_name: str = "prose-writer") -> None:
        self._pending: dict[tuple[Sink, Any], list[Any]] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._hurry = threading.Event()  # set by flush/close: write without the interval
        self._signalled = False
        self._closing = False
        self._writing = False
        self._next_waiters: list[Waiter] = []  # freed by the batch taking _pending
        self._writing_waiters: list[Waiter] = []  # freed by the batch in progress
        self._thread: threading.Thread | None = None
        self._thread_name = thread_name
        self.flushes = 0  # batches taken
        self.writes = 0  # sink calls
        self.error: OSError | None = None  # the last a sink raised (the journal has it all)

    def put(self, sink: Sink, key: Any, item: Any) -> None:
        """Queue `item` for `sink(key, [...])` (called on the event loop: kept to an append)."""
        self.put_all(sink, key, [item])

    def put_all(self, sink: Sink, key: Any, items: list[Any]) -> None:
        """`put` of each of `items`, in order, with one hand-off (the list is taken over)."""
        with self._lock:
            pending = self._pending.get((sink, key))
            if pending is None:
                self._pending[(sink, key)] = items
            else:
                pending.extend(items)
            if self._signalled:
                return  # the thread is already due to take this batch
            self._signalled = True
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._drain, name=self._thread_name, daemon=True
                )
                self._thread.start()
        self._wake.set()

    def flush(self) -> None:
        """Return once everything put before this call is written."""
        done = threading.Event()
        if self._register(done):
            done.wait()

    async def aflush(self) -> None:
        """`flush` for a coroutine: waits without holding a thread (a batch closes
        thousands of runs; a blocked worker thread each would starve the pool)."""
        done = LoopWaiter()
        if self._register(done):
            await done

    def _register(self, waiter: Waiter) -> bool:
        """Queue `waiter` to be set once what is pending now is written; False when
        nothing is pending (then it is never set)."""
        with self._lock:
            if not self._pending and not self._writing:
                return False
            (self._next_waiters if self._pending else self._writing_waiters).append(waiter)
        self._hurry.set()
        self._wake.set()
        return True

    def _drain(self) -> None:
        while True:
            self._wake.wait()
            self._hurry.wait(self.FLUSH_INTERVAL)
            with self._lock:
                self._wake.clear()
                self._hurry.clear()
                self._signalled = False
                batch, self._pending = self._pending, {}
                waiters, self._next_waiters = self._next_waiters, []
                self._writing = True
            for (sink, key), items in batch.items():
                try:
                    sink(key, items)
                except OSError as error:
                    self.error = error
            self.flushes += 1
            self.writes += len(batch)
            with self._lock:
                self._writing = False
                waiters += self._writing_waiters
                self._writing_waiters = []
                finished = self._closing and not self._pending
            for waiter in waiters:
                waiter.set()
            if finished:
                return

    def close(self) -> None:
        """Write what is pending at once and end the thread."""
        with self._lock:
            self._closing = True
            thread = self._thread
        self._hurry.set()
        self._wake.set()
        if thread is not None:
            thread.join()


_shared: BackgroundWriter | None = None
_shared_lock = threading.Lock()


def shared_writer() -> BackgroundWriter:
    """The process's writer (its thread starts with the first `put`)."""
    global _shared
    writer = _shared
    if writer is None:
        with _shared_lock:
            if _shared is None:
                _shared = BackgroundWriter("prose-writer-shared")
            writer = _shared
    return writer

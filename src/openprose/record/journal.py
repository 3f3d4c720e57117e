"""The run journal: NDJSON events keyed by step id, group-committed.

Events are encoded as they happen (each keeps its own time) and go to the kernel together,
in one `write` per event-loop turn: the first event of a turn schedules the write for the
start of the next one (`call_soon`), so a fan-out that finishes fifty sessions in one turn
makes one `write`, not fifty. Whatever leaves the process and depends on the journal waits
for it: `flush` writes at once, and the VM calls it before a tool acts, before an approval
is asked, before outputs are written and when a run ends, fails or is interrupted; what a
person sees on the terminal (`when_written`) and the audit trail follow the write. The file
is always a prefix of the event sequence, so a process killed with SIGKILL loses at most the
events of its last turn — answers that had just arrived, which a resume asks for again as it
does a call in flight — and never an event something outside already acted on.

Durability against power loss comes from `fsync`, which one background task issues for
whole batches (group commit): at most one fsync is in flight, and the next starts
`COMMIT_INTERVAL` after the first write it covers, so a busy run pays one fsync per
interval, not one per event, and the disk is not kept busy back to back.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from time import time_ns
from typing import Any

import orjson

from openprose.record.codec import WRITERS
from openprose.record.events import Event
from openprose.record.live import opened
from openprose.statefiles import LOG_LIMIT, read_state_file

JOURNAL_FILE = "journal.jsonl"  # a run folder's journal: the one place its name is spelled


class Journal:
    COMMIT_INTERVAL = 0.01  # seconds a write may wait for its fsync (power loss, not SIGKILL)

    def __init__(self, path: Path, *, durable: bool = True) -> None:
        """`durable=False` skips every fsync: events still reach the kernel each turn (a
        kill -9 loses at most the last turn's), but power loss may lose the tail. Batches
        use it: thousands of runs' fsyncs would serialise on the disk, and a resumed batch
        re-runs what a lost tail held."""
        self.path = path
        self.durable = durable
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        if _ends_mid_line(self._fd):
            os.write(self._fd, b"\n")  # a crash tore the last line: start ours on a new one
        self.live = opened(path, os.fstat(self._fd).st_size)  # readers in this process
        self._unsynced = 0
        self._pending: list[bytes] = []  # encoded events not written yet, in order
        self._scheduled = False  # a write is due at the start of the next loop turn
        self._written: list[Callable[[], None]] = []  # called after each write
        self._error: OSError | None = None  # a scheduled write failed: raised by the next call
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._syncer: asyncio.Task[None] | None = None
        self.fsyncs = 0
        self.events = 0
        self.writes = 0

    def start(self) -> None:
        """Begin writing once per loop turn and background group commits (needs a running
        event loop); before it, each event is written at once."""
        self._loop = asyncio.get_running_loop()
        if not self.durable:
            return
        self._wake = asyncio.Event()
        self._syncer = asyncio.create_task(self._sync_batches())

    def record(self, event: Event) -> float:
        """Record one event (written at the start of the next loop turn, or by `flush`);
        returns the time it was given."""
        if self._error is not None:
            raise self._error
        t = time_ns() // 1000 / 1e6  # `codec.now()`, inline: two events a session
        self._pending.append(WRITERS[type(event)](event, t))  # `encode(event, t) + b"\n"`
        self.events += 1
        if not self._scheduled:
            if self._loop is None:
                self.flush()
            else:
                self._scheduled = True
                self._loop.call_soon(self._flush_scheduled)
        return t

    def when_written(self, hook: Callable[[], None]) -> None:
        """Call `hook()` after each write: whatever must not get ahead of the journal (the
        audit trail, lines on the terminal) waits for it."""
        self._written.append(hook)

    def flush(self) -> None:
        """Write every event recorded so far, now (before something outside depends on it)."""
        if self._error is not None:
            raise self._error
        if not self._pending:
            return
        data = b"".join(self._pending)
        view = memoryview(data)
        self._pending = []
        try:
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError:
            self._pending = [bytes(view)]  # what did not reach the file, for a later try
            data = data[: len(data) - len(view)]
            if data:
                self.live.wrote(data)
            raise
        self.live.wrote(data)
        self.writes += 1
        self._unsynced += 1
        if self._wake is not None:
            self._wake.set()
        for hook in self._written:
            hook()

    def _flush_scheduled(self) -> None:
        self._scheduled = False
        try:
            self.flush()
        except OSError as error:  # the next event (or close) raises it in the VM's own code
            self._error = error

    async def _sync_batches(self) -> None:
        assert self._wake is not None
        loop = asyncio.get_running_loop()
        while True:
            await self._wake.wait()
            await asyncio.sleep(self.COMMIT_INTERVAL)  # let the batch fill
            self._wake.clear()
            if self._unsynced:
                self._unsynced = 0
                await loop.run_in_executor(None, os.fsync, self._fd)
                self.fsyncs += 1

    async def close(self) -> None:
        self._loop = None
        if self._syncer is not None:
            self._syncer.cancel()
            try:
                await self._syncer
            except asyncio.CancelledError:
                pass
            self._syncer = None
        try:
            self._error = None  # a failed scheduled write is still pending: try it once more
            self.flush()
            if self.durable:  # off the event loop: other runs of a batch go on meanwhile
                await asyncio.get_running_loop().run_in_executor(None, os.fsync, self._fd)
                self.fsyncs += 1
        finally:
            os.close(self._fd)
            self.live.closed()


def _ends_mid_line(fd: int) -> bool:
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


def read_journal(path: Path) -> Iterator[dict[str, Any]]:
    """Every complete event; a line torn by a crash mid-write is skipped."""
    try:
        data = read_state_file(path, LOG_LIMIT)
    except FileNotFoundError:
        return
    yield from _events(data.splitlines())


def read_journal_between(path: Path, start: int, end: int) -> list[dict[str, Any]]:
    """The events of bytes `start` to `end` of a journal (whole lines: `end` is the size
    `LiveJournal.attach` gave)."""
    if end <= start:
        return []
    with path.open("rb") as file:
        file.seek(start)
        data = file.read(end - start)
    return list(_events(data.splitlines()))


def events_of(data: bytes) -> list[dict[str, Any]]:
    """The events of whole journal lines."""
    return list(_events(data.splitlines()))


def read_journal_from(path: Path, offset: int) -> tuple[list[dict[str, Any]], int]:
    """The events written after byte `offset` of a journal that may still be growing, and the
    offset to read from next: a last line still being written is left for the next call."""
    try:
        data = read_state_file(path, LOG_LIMIT, offset)
    except FileNotFoundError:
        return [], offset
    end = data.rfind(b"\n") + 1
    return list(_events(data[:end].splitlines())), offset + end


def _events(lines: list[bytes]) -> Iterator[dict[str, Any]]:
    for line in lines:
        if not line.strip():
            continue
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(record, dict):
            yield record

"""The run journal: NDJSON events keyed by step id, group-committed.

Each event is handed to the kernel with one `write` the moment it happens, so a process killed
with SIGKILL loses nothing it had reported; durability against power loss comes from `fsync`,
which one background task issues for whole batches (group commit): at most one fsync is in
flight, and the next starts `COMMIT_INTERVAL` after the first event it covers, so a busy run
pays one fsync per interval, not one per event, and the disk is not kept busy back to back.

One kind of event may wait: a `session_started` says only that a call went out. Nothing
resumes from it (a session without its `session_finished` is sent again either way), so it is
held in memory and written with the next event that is written at once, or within
`COMMIT_INTERVAL`. File order stays event order, and a busy fan-out makes one `write` per
session instead of two; a kill loses at most the starts of calls that had not answered.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from openprose.providers.base import ModelRequest

# Events whose loss in a crash changes nothing a resumed run does (see the module docstring).
DEFERRABLE = frozenset({"session_started"})


class Journal:
    COMMIT_INTERVAL = 0.01  # seconds an event may wait for its fsync (power loss, not SIGKILL)

    def __init__(self, path: Path, *, durable: bool = True) -> None:
        """`durable=False` skips every fsync: each event still reaches the kernel with one
        `write` (a kill -9 loses nothing), but power loss may lose the tail. Batches use it:
        thousands of runs' fsyncs would serialise on the disk, and a resumed batch re-runs
        what a lost tail held."""
        self.path = path
        self.durable = durable
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        if _ends_mid_line(self._fd):
            os.write(self._fd, b"\n")  # a crash tore the last line: start ours on a new one
        self._unsynced = 0
        self._held: list[bytes] = []  # deferrable events not written yet, in order
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None  # writes what is held, when due
        self._wake: asyncio.Event | None = None
        self._syncer: asyncio.Task[None] | None = None
        self.fsyncs = 0
        self.events = 0

    def start(self) -> None:
        """Begin background group commits (needs a running event loop)."""
        self._loop = asyncio.get_running_loop()
        if not self.durable:
            return
        self._wake = asyncio.Event()
        self._syncer = asyncio.create_task(self._sync_batches())

    def append(self, event: str, step: str = "", **fields: Any) -> float:
        """Write one event (or hold a deferrable one); returns its time `t`."""
        t, line = encode_event(event, step, fields)
        line += b"\n"
        self.events += 1
        if event in DEFERRABLE and self._loop is not None:
            self._held.append(line)
            if self._timer is None:  # one timer for many starts, not one each
                self._timer = self._loop.call_later(self.COMMIT_INTERVAL, self._write_held_later)
            return t
        if self._held:
            self._held.append(line)
            self._write_held()
        else:
            self._write(line)
        return t

    def _write_held(self) -> None:
        if self._held:
            self._write(b"".join(self._held))
            self._held = []

    def _write_held_later(self) -> None:
        self._timer = None
        try:
            self._write_held()
        except OSError:  # kept: the next event written at once writes them or raises
            pass

    def _write(self, lines: bytes) -> None:
        os.write(self._fd, lines)
        self._unsynced += 1
        if self._wake is not None:
            self._wake.set()

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
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._syncer is not None:
            self._syncer.cancel()
            try:
                await self._syncer
            except asyncio.CancelledError:
                pass
            self._syncer = None
        try:
            self._write_held()
            if self.durable:  # off the event loop: other runs of a batch go on meanwhile
                await asyncio.get_running_loop().run_in_executor(None, os.fsync, self._fd)
                self.fsyncs += 1
        finally:
            os.close(self._fd)


def encode_event(event: str, step: str, fields: dict[str, Any]) -> tuple[float, bytes]:
    """An event's time and its journal line (without the newline): the one encoding of a
    journal event, in a run's journal.jsonl or a batch's run log."""
    t = round(time.time(), 6)
    record = {"ev": event, "step": step, "t": t, **fields}
    return t, orjson.dumps(record, option=orjson.OPT_NON_STR_KEYS)


def _ends_mid_line(fd: int) -> bool:
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


def read_journal(path: Path) -> Iterator[dict[str, Any]]:
    """Every complete event; a line torn by a crash mid-write is skipped."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return
    yield from _events(data.splitlines())


def read_journal_from(path: Path, offset: int) -> tuple[list[dict[str, Any]], int]:
    """The events written after byte `offset` of a journal that may still be growing, and the
    offset to read from next: a last line still being written is left for the next call."""
    try:
        with path.open("rb") as journal:
            journal.seek(offset)
            data = journal.read()
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


def write_cassette(journal: Path, cassette: Path) -> int:
    """Every exchange a run's journal holds, as a replay cassette (`{"key", "request",
    "response"}` lines) for `--provider replay:FILE`; returns how many were written."""
    from openprose.providers.replay import exchanges

    count = 0
    with cassette.open("wb") as out:
        for request, response in exchanges(read_journal(journal)):
            key = ModelRequest.from_dict(request).key()
            record = {"key": key, "request": request, "response": response}
            out.write(orjson.dumps(record) + b"\n")
            count += 1
    return count

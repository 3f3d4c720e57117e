"""The journals this process is writing, for readers in the same process (the web view).

A run's `Journal` registers here while it is open and hands every batch it writes to the
listeners attached to it, with the journal's size after the batch. A reader attaches,
reads the file up to the size `attach` returned (everything before it is on disk), and
takes the rest from the batches, dropping any that end at or before what it read: no gap,
no event twice, and no polling of the file while the run goes on. Journals of other
processes are tailed (`read_journal_from`). Nothing is done for a journal nobody listens to
but a dict lookup when it opens and an empty loop per write.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

# (the lines just written, the journal's size after them); (b"", -1): the journal closed
Listener = Callable[[bytes, int], None]
CLOSED = -1

_open: dict[str, LiveJournal] = {}
_open_lock = threading.Lock()


class LiveJournal:
    """One journal open for writing in this process."""

    def __init__(self, path: Path, size: int) -> None:
        self.key = os.path.realpath(path)
        self.size = size
        self._listeners: list[Listener] = []
        self._lock = threading.Lock()  # batches are handed over on the run's thread

    def wrote(self, data: bytes) -> None:
        """The journal appended `data` (whole lines)."""
        with self._lock:
            self.size += len(data)
            for listener in self._listeners:
                listener(data, self.size)

    def attach(self, listener: Listener) -> int:
        """`listener` gets every batch from now on; returns the size the file has at least
        (every line before it is on disk)."""
        with self._lock:
            self._listeners.append(listener)
            return self.size

    def detach(self, listener: Listener) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def closed(self) -> None:
        with _open_lock:
            if _open.get(self.key) is self:
                del _open[self.key]
        with self._lock:
            listeners, self._listeners = self._listeners, []
        for listener in listeners:
            listener(b"", CLOSED)


def opened(path: Path, size: int) -> LiveJournal:
    """Register the journal at `path`, `size` bytes long, as written by this process."""
    live = LiveJournal(path, size)
    with _open_lock:
        _open[live.key] = live
    return live


def live_journal(path: Path) -> LiveJournal | None:
    """The journal at `path` when this process is writing it."""
    with _open_lock:
        return _open.get(os.path.realpath(path))

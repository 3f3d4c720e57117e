"""Where an edit's time goes: timestamps of its way through the server, kept in memory.

Each step (a change received, an analysis started, parsed, checked, diagnostics written...)
appends ``(event, uri, version, seconds, cpu)`` to a bounded ring; ``seconds`` is
`time.perf_counter`, the system-wide monotonic clock on Linux, so a client on the same machine
can subtract its own timestamps; ``cpu`` is the CPU time of the thread that did the step (the
difference between two steps of one thread is work; the rest of the wall time is waiting). The ring is read through the server's ``prose/analysisStats`` request (benches,
tests). Appending costs about a microsecond: always on, so what is measured is what runs.
"""

from __future__ import annotations

import time
from collections import deque

_KEPT = 512  # a burst of 30 keystrokes leaves ~100 events

Event = tuple[str, str, int | None, float, float]
# One ring per process (a process serves one client; tests start a server per module).
_events: deque[Event] = deque(maxlen=_KEPT)


def mark(event: str, uri: str, version: int | None) -> None:
    """Record that ``event`` happened now to ``version`` of document ``uri`` (any thread)."""
    _events.append((event, uri, version, time.perf_counter(), time.thread_time()))


def recent() -> list[Event]:
    """The events kept, oldest first."""
    return list(_events)

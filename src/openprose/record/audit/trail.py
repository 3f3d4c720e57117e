"""A run's `audit.ndjson`, written from its events as they are recorded (`AuditTrail`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from itertools import islice
from pathlib import Path
from typing import Any

from openprose.record.audit.translator import Translator, _lines
from openprose.record.codec import readable
from openprose.record.events import Event
from openprose.record.writer import shared_writer


def written_count(path: Path) -> int:
    """How many messages `path` holds; a last line torn by a crash is cut off first."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return 0
    end = data.rfind(b"\n") + 1
    if end != len(data):
        os.truncate(path, end)
    return data.count(b"\n", 0, end)  # the trail has no blank lines


class AuditTrail:
    """Writes one run's `audit.ndjson` from its events: each is translated as `Shared.emit`
    records it (nothing of the event is kept), and the lines go to the file only after the
    journal has written their events (`written`, a journal hook), through the process's
    background writer (`openprose.record.writer`; one thread for every run: a batch runs
    thousands in one process)."""

    def __init__(self, path: Path, run_id: str, program: str) -> None:
        self.path = path
        self.translator = translator = Translator(run_id, program, contained=True)
        self.write_error: OSError | None = None
        self.batches = 0
        # One event the journal has just recorded (a subscriber of `Shared.emit`, on the
        # event loop): its lines wait in the translator until the journal writes it. An
        # event it cannot translate stops it (`error`): the journal still has every event.
        self.add: Callable[[Event, float], None] = translator.add

    @classmethod
    def resume(
        cls, path: Path, run_id: str, program: str, journal: Iterable[Mapping[str, Any]]
    ) -> AuditTrail:
        """Continue a trail: the journal's messages not yet on disk are written first. A
        line the codec cannot decode is skipped, as the resume's replay skips it (one it
        serves stopped the resume before this)."""
        trail = cls(path, run_id, program)
        written = written_count(path)
        lines = _lines(trail.translator, readable(journal))
        trail._write(b"".join(islice(lines, written, None)))
        return trail

    @property
    def error(self) -> Exception | None:
        """What kept the trail from being whole (reported by the run; the journal has all)."""
        return self.translator.error or self.write_error

    def written(self) -> None:
        """The journal wrote every event recorded so far: their lines go to the writer."""
        if self.translator.out:
            shared_writer().put_all(AuditTrail._write_all, self, self.translator.take_chunks())

    def _write_all(self, chunks: list[bytes]) -> None:
        try:
            self._write(b"".join(chunks))
        except OSError as error:  # reported by close(); the journal has it all
            self.write_error = error

    def _write(self, lines: bytes) -> None:
        if not lines:
            return
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, lines)
        finally:
            os.close(fd)
        self.batches += 1

    def close(self) -> None:
        """Return once every event added so far is written (called after the journal's
        `close`, which wrote them all)."""
        self.written()
        shared_writer().flush()

    async def aclose(self) -> None:
        """`close` for a coroutine, without holding a thread while it waits."""
        self.written()
        await shared_writer().aflush()

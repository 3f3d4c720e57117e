"""Where a streamed answer's text goes while it arrives.

A caller that wants to watch answers grow (the live view of `prose run`) sets a sink for the
duration of a call: `with stream_text_to(sink): await provider.complete(request)`. A hosted
provider that sees a sink streams the answer (SSE) and hands each text delta to it; without
one it makes the plain request, the fast default. The finished `ModelResponse` is the same
either way, so nothing downstream (journal, replay, usage) knows the difference.

A context variable carries the sink so it passes through the wrappers between the caller and
the HTTP client (the retry layer, the recorder) without each of them knowing about it; it is
per task, so concurrent sessions each have their own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["AnswerStream", "TextSink", "current_sink", "stream_text_to"]

# Called with each piece of answer text as it arrives (a `list.append` will do).
TextSink = Callable[[str], None]


class AnswerStream:
    """The sink of one call, and whether text reached it: an attempt that starts streaming
    after an earlier one sent text (a retry) first calls `on_restart`, so the watcher can
    drop the text of the attempt that failed. `on_wait` hears of each wait before a retry
    (what failed, and when the next attempt goes), so a live view shows why it waits."""

    __slots__ = ("on_restart", "on_wait", "sent", "sink")

    def __init__(
        self,
        sink: TextSink,
        on_restart: Callable[[], None] | None = None,
        on_wait: Callable[[str], None] | None = None,
    ) -> None:
        self.sink = sink
        self.on_restart = on_restart
        self.on_wait = on_wait
        self.sent = False

    def begin(self) -> None:
        """A new attempt's answer starts here."""
        if self.sent:
            self.sent = False
            if self.on_restart is not None:
                self.on_restart()

    def __call__(self, text: str) -> None:
        self.sent = True
        self.sink(text)


_stream: ContextVar[AnswerStream | None] = ContextVar("openprose_answer_stream", default=None)


def current_sink() -> AnswerStream | None:
    return _stream.get()


@contextmanager
def stream_text_to(
    sink: TextSink | None,
    *,
    on_restart: Callable[[], None] | None = None,
    on_wait: Callable[[str], None] | None = None,
) -> Iterator[None]:
    """Stream the answers of the calls made inside the block to `sink` (None: do not);
    `on_restart` is called when a retried attempt starts the answer over, `on_wait` with
    a line saying why and how long before a retry."""
    token = _stream.set(None if sink is None else AnswerStream(sink, on_restart, on_wait))
    try:
        yield
    finally:
        _stream.reset(token)

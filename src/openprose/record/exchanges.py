"""The model exchanges a journal holds: each finished call's whole request and answer.

A tool loop's later turns are journaled as deltas (`request_delta`: the base turn's step,
the model, and only the messages added since that turn), so a long conversation costs the
journal the same per turn at turn 50 as at turn 1; `Exchanges` rebuilds the whole
requests. Cassettes (`providers.replay`), forks, `prose show` and the web view read them
here, from typed events (`openprose.record.events`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from openprose.record.events import Event, ModelTurn, SessionFailed, SessionFinished

# The events holding a request (a failed call's too: a later turn may build on it).
Exchange = SessionFinished | SessionFailed | ModelTurn


# The events holding an answered exchange (`ModelTurn`: journals of early versions).
ANSWERED = (SessionFinished, ModelTurn)


def answered(event: Event) -> SessionFinished | ModelTurn | None:
    """The event when it holds an answered exchange, else None."""
    return event if isinstance(event, ANSWERED) else None


class Exchanges:
    """Whole requests from journal events, deltas rebuilt on their base turn's request."""

    def __init__(self) -> None:
        self._requests: dict[str, dict[str, Any]] = {}  # step -> its whole request

    def request_of(self, event: Exchange) -> dict[str, Any] | None:
        """The whole request an exchange event holds; None when it holds none, or when a
        delta's base is not in the journal (a line lost to a crash)."""
        request = event.request
        delta = None if isinstance(event, ModelTurn) else event.request_delta
        if request is None and isinstance(delta, dict):
            base = self._requests.get(str(delta.get("base")))
            if base is None:
                return None
            request = {
                **base,
                "model": delta.get("model", base.get("model")),
                "messages": [*base["messages"], *delta["messages"]],
            }
        if isinstance(request, dict):
            self._requests[event.step] = request
            return request
        return None


def exchanges(events: Iterable[Event]) -> Iterator[tuple[dict[str, Any], Any]]:
    """(whole request, response) of each answered exchange in `events`, in journal order."""
    rebuilt = Exchanges()
    for event in events:
        exchange = answered(event)
        if exchange is not None:
            request = rebuilt.request_of(exchange)
            if request is not None:
                yield request, exchange.response

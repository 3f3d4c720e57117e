"""The model exchanges a journal holds: each finished call's whole request and answer.

A tool loop's later turns are journaled as deltas (`request_delta`: the base turn's step,
the model, and only the messages added since that turn), so a long conversation costs the
journal the same per turn at turn 50 as at turn 1; `Exchanges` rebuilds the whole
requests. Cassettes (`providers.replay`), `prose show` and the web view read them here.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

# journal events holding an exchange (`model_turn`: journals of early versions)
EXCHANGE_EVENTS = ("session_finished", "model_turn")


class Exchanges:
    """Whole requests from journal events, deltas rebuilt on their base turn's request."""

    def __init__(self) -> None:
        self._requests: dict[str, dict[str, Any]] = {}  # step -> its whole request

    def request_of(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """The whole request an exchange event holds; None when it holds none, or when a
        delta's base is not in the journal (a line lost to a crash)."""
        request = event.get("request")
        delta = event.get("request_delta")
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
            self._requests[str(event.get("step", ""))] = request
            return request
        return None


def exchanges(events: Iterable[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(whole request, response) of each exchange in journal events, in journal order."""
    rebuilt = Exchanges()
    for event in events:
        if event.get("ev") in EXCHANGE_EVENTS and "response" in event:
            request = rebuilt.request_of(event)
            if request is not None:
                yield request, event["response"]

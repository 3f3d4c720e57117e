"""Who listens to a run: a subscriber is `(event, t) -> None`, handed every event
`Shared.emit` records, with the time the journal gave it.

An observer (the terminal views, `RunNotice`, `openprose.events()`) is a subscriber that
may also have streaming hooks (`answer_text`, `answer_restarted`, `answer_waiting`,
`watches`; see `Shared.watching`). The tracer still takes `(name, step, fields)`: `traced`
adapts it until it moves to its own package and subscribes itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from openprose.record.codec import fields_of
from openprose.record.events import Event

if TYPE_CHECKING:
    from openprose.vm.tracing import Tracer

Subscriber = Callable[[Event, float], None]
Observer = Subscriber  # one that may have streaming hooks too


def traced(tracer: Tracer) -> Subscriber:
    """TEMPORARY (issue 30, for the telemetry/ move): the tracer's `on_event(name, step,
    fields)` fed from typed events; the lead removes it once the tracer subscribes itself."""
    wanted = tracer.events

    def feed(event: Event, t: float) -> None:
        name = event.ev
        if name in wanted:
            tracer.on_event(name, event.step, fields_of(event))

    return feed

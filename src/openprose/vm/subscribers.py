"""Adapters that let consumers written before typed events subscribe to `Shared.emit`.

A subscriber is `(event, t) -> None`. The tracer and the observers (terminal views, the
web view, `RunNotice`) still take `(name, step, fields)`; these two adapters feed them the
typed event in that form until they match on types themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from openprose.record.codec import fields_of
from openprose.record.events import Event

if TYPE_CHECKING:
    from openprose.vm.tracing import Tracer

Subscriber = Callable[[Event, float], None]
Observer = Callable[[str, str, dict[str, Any]], None]


def traced(tracer: Tracer) -> Subscriber:
    """TEMPORARY (issue 30, for the telemetry/ move): the tracer's `on_event(name, step,
    fields)` fed from typed events; the lead removes it once the tracer subscribes itself."""
    wanted = tracer.events

    def feed(event: Event, t: float) -> None:
        name = event.ev
        if name in wanted:
            tracer.on_event(name, event.step, fields_of(event))

    return feed


def observed(observer: Observer) -> Subscriber:
    """An observer of `(name, step, fields)` as a subscriber."""

    def feed(event: Event, t: float) -> None:
        observer(event.ev, event.step, fields_of(event))

    return feed

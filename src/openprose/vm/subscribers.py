"""Who listens to a run: a subscriber is `(event, t) -> None`, handed every event
`Shared.emit` records, with the time the journal gave it (the audit trail, the tracer's
`on_event`, the run's observer, whatever `Shared.subscribe` adds).

An observer (the terminal views, `RunNotice`, `openprose.events()`) is a subscriber that
may also have streaming hooks (`answer_text`, `answer_restarted`, `answer_waiting`,
`watches`; see `Shared.watching`).

A subscriber whose *class* names `only_events` (a tuple of event classes) is handed only
events of those classes: `RunNotice` acts on the run's start alone, and a call of it for
each of a fan-out's events cost ~2k instructions (rec30h). It is read from the class, so a
wrapper forwarding attributes from its instance (`Fanout`) never takes it from another.
"""

from __future__ import annotations

from collections.abc import Callable

from openprose.record.events import Event

Subscriber = Callable[[Event, float], None]
Observer = Subscriber  # one that may have streaming hooks too

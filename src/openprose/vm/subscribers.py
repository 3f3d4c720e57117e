"""Who listens to a run: a subscriber is `(event, t) -> None`, handed every event
`Shared.emit` records, with the time the journal gave it (the audit trail, the tracer's
`on_event`, the run's observer, whatever `Shared.subscribe` adds).

An observer (the terminal views, `RunNotice`, `openprose.events()`) is a subscriber that
may also have streaming hooks (`answer_text`, `answer_restarted`, `answer_waiting`,
`watches`; see `Shared.watching`).
"""

from __future__ import annotations

from collections.abc import Callable

from openprose.record.events import Event

Subscriber = Callable[[Event, float], None]
Observer = Subscriber  # one that may have streaming hooks too

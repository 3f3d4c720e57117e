"""Typed journal events for tests that care about a few fields: the rest get neutral
values (None, "", 0, false), as a consumer that does not read them never notices."""

from __future__ import annotations

import typing
from dataclasses import MISSING, fields
from typing import Any

from openprose.record.events import REGISTRY, Event

_NEUTRAL = {str: "", int: 0, float: 0.0, bool: False}


def make(name: str, step: str, given: dict[str, Any] | None = None) -> Event:
    cls = REGISTRY[name]
    hints = typing.get_type_hints(cls)
    values = dict(given or {})
    for f in fields(cls):
        if f.name not in values and f.name != "step" and f.default is MISSING:
            values[f.name] = _NEUTRAL.get(hints[f.name])
    event: Event = cls(step=step, **values)
    return event


def feed(subscriber: Any, name: str, step: str, given: dict[str, Any] | None = None) -> None:
    """Hand `subscriber` the event `make` builds (at time 0)."""
    subscriber(make(name, step, given), 0.0)

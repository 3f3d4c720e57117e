"""What the properties of `ask "question"` say, read the same way by the checker and the VM:
the options offered, the default taken when nobody answers in time, and the timeout."""

from __future__ import annotations

import re

from openprose import nodes as n

__all__ = ["duration_seconds", "properties_of", "timeout_of"]

# `timeout: 600` is seconds; a string may carry a unit: "90s", "10m", "2h", "1d".
_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def duration_seconds(text: str) -> float | None:
    """Seconds in a duration such as "90s", "10m" or "2h"; None when it is not one (or is
    not more than zero)."""
    match = _DURATION.fullmatch(text)
    if match is None:
        return None
    seconds = float(match[1]) * _UNIT_SECONDS[match[2]]
    return seconds if seconds > 0 else None


def timeout_of(value: n.PropertyValue) -> float | None:
    """The seconds a `timeout:` value stands for, or None when it is not a timeout."""
    if isinstance(value, n.NumberLit) and not isinstance(value.value, bool):
        return float(value.value) if value.value > 0 else None
    if isinstance(value, n.StringLit) and not value.interpolations:
        return duration_seconds(value.value)
    return None


def properties_of(node: n.Ask) -> dict[str, n.Property]:
    """The first property of each name (a repeated one is the checker's E009)."""
    found: dict[str, n.Property] = {}
    for prop in node.properties:
        found.setdefault(prop.name.id, prop)
    return found

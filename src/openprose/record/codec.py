"""The journal's JSON: the only code that knows how an event is written as a line.

A line is one JSON object: `ev` (the event's name), `step`, `t` (seconds since the epoch,
to the microsecond), then the event's fields in the order its class declares them
(`openprose.record.events`); an `optional()` field that is None is left out. That is the
form every version has written, so old run folders and cassettes read as they did.

Reading is forgiving the way the journal is: a field the class does not know (a newer
version added it) is ignored, a field it has a default for may be missing, and a line of
an event this version does not know becomes an `UnknownEvent` with its fields kept. A
known event missing a field it needs is `EventDamaged`, naming the field.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import MISSING, fields
from typing import Any, NamedTuple

import orjson

from openprose.record.events import OMIT, REGISTRY, Event, UnknownEvent

_META = ("ev", "step", "t")
_OPTIONS = orjson.OPT_NON_STR_KEYS  # an int-keyed dict (a race's items) writes as before
_LINE = _OPTIONS | orjson.OPT_APPEND_NEWLINE  # a journal's line, its newline written by orjson


class EventDamaged(ValueError):
    """A journal line of a known event that lacks what the event needs (`kind`: its class,
    None when the line names no event)."""

    def __init__(self, message: str, kind: type[Any] | None = None) -> None:
        super().__init__(message)
        self.kind = kind


class Recorded(NamedTuple):
    """An event and the time the journal gave it."""

    event: Event
    t: float


Fields = Callable[[Any], dict[str, Any]]  # an event -> its fields, as its line holds them
Line = Callable[[Any, float], dict[str, Any]]  # an event, its time -> the whole line's dict
Write = Callable[[Any, float], bytes]  # an event, its time -> its journal line, newline included


class _Spec(NamedTuple):
    name: str
    # (field, when it is left out), in declared order: "" never, "." when it is None,
    # another field's name when that one is None
    keys: tuple[tuple[str, str], ...]
    required: frozenset[str]  # fields a line must carry (no default)


def _left_out_when(omit: object) -> str:
    return "" if not omit else "." if omit is True else str(omit)


def _spec_of(cls: type[Any]) -> _Spec:
    keys = tuple(
        (f.name, _left_out_when(f.metadata.get(OMIT))) for f in fields(cls) if f.name != "step"
    )
    required = frozenset(
        f.name
        for f in fields(cls)
        if f.default is MISSING and f.default_factory is MISSING and f.name != "step"
    )
    return _Spec(cls.ev, keys, required)


def _compiled(
    keys: tuple[tuple[str, str], ...],
    name: str,
    params: str,
    head: tuple[tuple[str, str], ...],
    returned: str = "d",
) -> Any:
    """A function putting an event's fields in a dict (and returning `returned` of it),
    compiled from its class's fields: the journal encodes every event on the event loop.
    Every field goes in one dict display (one C-level build, in declared order), then those
    left out this time are deleted, which keeps the others' order: cheaper than a store per
    field (docs/decisions.md, record30, perf30)."""
    shown = [f"{key!r}: {value}" for key, value in head]
    deletes: list[str] = []
    for key, unless in keys:
        if not key.isidentifier():
            raise ValueError(f"field {key!r} is not a name")
        shown.append(f"{key!r}: e.{key}")
        if unless:
            when = key if unless == "." else unless
            deletes.append(f"    if e.{when} is None: del d[{key!r}]")
    source = "\n".join(
        [
            f"def {name}({params}):",
            f"    d = {{{', '.join(shown)}}}",
            *deletes,
            f"    return {returned}",
        ]
    )
    namespace: dict[str, Any] = {"_dumps": orjson.dumps}
    exec(source, namespace)  # noqa: S102 - field names of our own classes only
    return namespace[name]


class _Specs(dict[type[Any], _Spec]):
    """Each class's spec, made when the class is first encoded or decoded: a run uses a
    handful of the events."""

    def __missing__(self, cls: type[Any]) -> _Spec:
        if REGISTRY.get(getattr(cls, "ev", None)) is not cls:  # type: ignore[arg-type]
            raise KeyError(cls)  # not a journal event (`Streamed`)
        spec = self[cls] = _spec_of(cls)
        return spec


_SPECS = _Specs()


def _head(spec: _Spec) -> tuple[tuple[str, str], ...]:
    return (("ev", repr(spec.name)), ("step", "e.step"), ("t", "t"))


class _Compiled(dict[type[Any], Any]):
    """One compiled function per event class, compiled at its first use (each costs ~0.7M
    instructions to compile; a run needs one or two for a handful of classes)."""

    def __init__(self, make: Callable[[_Spec], Any], known: Mapping[type[Any], Any]) -> None:
        super().__init__(known)
        self._make = make

    def __missing__(self, cls: type[Any]) -> Any:
        made = self[cls] = self._make(_SPECS[cls])
        return made


def _unknown_fields(event: UnknownEvent) -> dict[str, Any]:
    return dict(event.fields)


def _unknown_record(event: UnknownEvent, t: float) -> dict[str, Any]:
    return {"ev": event.ev, "step": event.step, "t": t, **event.fields}


def _unknown_line(event: UnknownEvent, t: float) -> bytes:
    return orjson.dumps(_unknown_record(event, t), option=_LINE)


_FIELDS: dict[type[Any], Fields] = _Compiled(
    lambda spec: _compiled(spec.keys, "fields", "e", ()), {UnknownEvent: _unknown_fields}
)  # the event's fields in a dict, in order
_LINES: dict[type[Any], Line] = _Compiled(
    lambda spec: _compiled(spec.keys, "line", "e, t", _head(spec)),
    {UnknownEvent: _unknown_record},
)  # `ev`, `step`, `t`, then the fields
WRITERS: dict[type[Any], Write] = _Compiled(
    lambda spec: _compiled(spec.keys, "write", "e, t", _head(spec), f"_dumps(d, option={_LINE})"),
    {UnknownEvent: _unknown_line},
)
"""`WRITERS[type(event)](event, t)`: the event's journal line with its newline (`line_of`'s
dict encoded). The journal calls it for every event, two a model call: no call of `encode`
between, no copy to add the newline (rec30h)."""


def now() -> float:
    """The time an event gets: microseconds, as round(time.time(), 6) but 8x cheaper."""
    return time.time_ns() // 1000 / 1e6


def fields_of(event: Event) -> dict[str, Any]:
    """The event's fields as its line holds them (without `ev`, `step` and `t`)."""
    return _FIELDS[type(event)](event)


def line_of(event: Event, t: float) -> dict[str, Any]:
    """The dict of the event's journal line (`ev`, `step`, `t`, its fields), as read back."""
    return _LINES[type(event)](event, t)


def encode(event: Event, t: float) -> bytes:
    """The event's journal line, without the newline."""
    return WRITERS[type(event)](event, t)[:-1]


def is_event_line(record: Mapping[str, Any]) -> bool:
    """Whether a parsed line is a journal's (a cassette's lines are not)."""
    return "ev" in record


def name_in(record: Mapping[str, Any]) -> str:
    """The event name a parsed line gives (whatever it is), for a message naming it."""
    return str(record.get("ev"))


def described(record: Mapping[str, Any]) -> str:
    """A parsed line's event name and step, for a message naming a damaged line."""
    return f"{record.get('ev')}, step {record.get('step', '')!r}"


def as_record(event: Event) -> dict[str, Any]:
    """The event as its journal line holds it, without its time (`ev`, `step`, the fields):
    what the run digest shows of an error."""
    return {"ev": event.ev, "step": event.step, **fields_of(event)}


def decode(record: Mapping[str, Any]) -> Recorded:
    """The event a journal line (parsed) holds; `EventDamaged` when a field it needs is
    missing or the line has no usable `ev`."""
    name = record.get("ev")
    if not isinstance(name, str):
        raise EventDamaged("the line names no event (`ev`)")
    step = record.get("step", "")
    t = record.get("t", 0.0)
    if not isinstance(step, str) or not isinstance(t, int | float) or isinstance(t, bool):
        raise EventDamaged(f"{name}: `step` must be text and `t` a number", REGISTRY.get(name))
    cls = REGISTRY.get(name)
    if cls is None:
        kept = {k: v for k, v in record.items() if k not in _META}
        return Recorded(UnknownEvent(name, step, kept), float(t))
    spec = _SPECS[cls]
    missing = spec.required.difference(record)
    if missing:
        raise EventDamaged(f"{name}: missing {', '.join(sorted(missing))}", cls)
    values = {key: record[key] for key, _ in spec.keys if key in record}
    return Recorded(cls(step=step, **values), float(t))


def decode_line(line: bytes) -> Recorded | None:
    """The event of one journal line; None for a blank or torn line (a crash mid-write)."""
    if not line.strip():
        return None
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(record, dict):
        return None
    return decode(record)


def decode_all(records: Iterable[Mapping[str, Any]]) -> Iterator[Recorded]:
    """Each record's event, in order (`EventDamaged` at the first damaged one)."""
    for record in records:
        yield decode(record)


def readable(records: Iterable[Mapping[str, Any]]) -> Iterator[Recorded]:
    """Each record's event, in order; a damaged one is skipped, as if lost to a crash."""
    for record in records:
        try:
            yield decode(record)
        except EventDamaged:
            continue

"""The codec is the journal's one JSON form: lines written before issue 30 read as the
events they were and re-encode to the same bytes; every event round-trips."""

from __future__ import annotations

import typing
from dataclasses import fields
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from openprose.record import events as ev
from openprose.record.codec import (
    WRITERS,
    EventDamaged,
    decode,
    decode_line,
    encode,
    fields_of,
)
from tests.openprose.record.strategies import FLOAT, JSON_VALUE, TEXT, value_of

BEFORE_30 = Path(__file__).parent / "data" / "journal-before-30.jsonl"


def test_a_journal_written_before_typed_events_reads_and_writes_the_same_bytes() -> None:
    lines = BEFORE_30.read_bytes().splitlines()
    kinds = set()
    for line in lines:
        recorded = decode_line(line)
        assert recorded is not None
        assert not isinstance(recorded.event, ev.UnknownEvent), line
        kinds.add(type(recorded.event))
        assert encode(recorded.event, recorded.t) == line
    assert len(kinds) >= 25  # the sample covers most events (see data/journal-before-30.jsonl)


def test_an_event_of_a_newer_version_is_kept_whole() -> None:
    line = b'{"ev":"mcp_tool_called","step":"3","t":1.25,"server":"git","args":{"a":[1,null]}}'
    recorded = decode_line(line)
    assert recorded is not None
    assert recorded.event == ev.UnknownEvent(
        "mcp_tool_called", "3", {"server": "git", "args": {"a": [1, None]}}
    )
    assert encode(recorded.event, recorded.t) == line


def test_a_field_a_newer_version_added_is_ignored_and_a_missing_one_is_named() -> None:
    newer = {"ev": "session_served", "step": "2", "t": 1.0, "binding": "x", "shard": 4}
    assert decode(newer).event == ev.SessionServed(step="2", binding="x")
    with pytest.raises(EventDamaged, match="session_cancelled: missing attempt"):
        decode({"ev": "session_cancelled", "step": "2", "t": 1.0})
    with pytest.raises(EventDamaged, match="names no event"):
        decode({"step": "2"})
    with pytest.raises(EventDamaged, match="`step` must be text"):
        decode({"ev": "session_served", "step": 2})


def test_torn_and_blank_lines_are_no_event() -> None:
    assert decode_line(b'{"ev":"session_ser') is None
    assert decode_line(b"  ") is None
    assert decode_line(b"[1, 2]") is None


def test_an_optional_field_that_is_none_is_left_out_and_another_none_is_written() -> None:
    started = ev.SessionStarted(step="1", agent=None, model="m", binding=None, kind="session")
    line = orjson.loads(encode(started, 2.0))
    assert line == {
        "ev": "session_started",
        "step": "1",
        "t": 2.0,
        "agent": None,
        "model": "m",
        "binding": None,
        "kind": "session",
    }
    assert "context" not in fields_of(started)
    assert fields_of(ev.SessionStarted(**{**_kwargs(started), "context": ["a"]}))["context"] == [
        "a"
    ]


def test_the_union_names_every_registered_event() -> None:
    assert set(typing.get_args(ev.Event)) == {*ev.REGISTRY.values(), ev.UnknownEvent}
    assert all(cls.ev == name for name, cls in ev.REGISTRY.items())


def _kwargs(event: Any) -> dict[str, Any]:
    return {f.name: getattr(event, f.name) for f in fields(event)}


# --- every event type round-trips ------------------------------------------------------------


def _event_of(cls: type[Any]) -> st.SearchStrategy[Any]:
    hints = typing.get_type_hints(cls)
    return st.builds(cls, **{f.name: value_of(hints[f.name]) for f in fields(cls)})


_ANY_EVENT = st.one_of(*(_event_of(cls) for cls in ev.REGISTRY.values())) | st.builds(
    ev.UnknownEvent,
    TEXT.filter(lambda name: name not in ev.REGISTRY),
    TEXT,
    st.dictionaries(TEXT.filter(lambda k: k not in ("ev", "step", "t")), JSON_VALUE, max_size=3),
)


@settings(max_examples=500)
@given(_ANY_EVENT, FLOAT)
@example(ev.SessionFailed(step="", error="gave up"), 0.0)  # the tool loop's form: no attempt
@example(ev.SessionFailed(step="", attempt=1, error="refused", status=None), 0.0)
def test_every_event_round_trips(event: Any, t: float) -> None:
    line = encode(event, t)
    assert WRITERS[type(event)](event, t) == line + b"\n"  # what a journal appends
    recorded = decode(orjson.loads(line))
    assert recorded.t == t
    assert encode(recorded.event, recorded.t) == line  # the same bytes again
    kept = fields_of(event)
    if isinstance(event, ev.UnknownEvent) or all(
        f.name in kept or getattr(event, f.name) is None for f in fields(event) if f.name != "step"
    ):  # nothing was left out that it held: the same event comes back
        assert recorded.event == event

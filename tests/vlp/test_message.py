"""make_message: the seed's call shape, defaults, and refusal of invalid messages."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from vlp import VLPError, make_message, utc_timestamp, validate_vlp


def test_seed_example_call_returns_a_valid_message() -> None:
    msg = make_message(
        "claim",
        sender="ResearchAgent",
        content="Found 12 matching records in dataset",
        confidence=0.85,
        provenance=["database_query"],
        keywords=["research", "records", "dataset"],
    )
    ok, error = validate_vlp(msg)
    assert ok and error is None
    assert msg["protocol"] == "VLP/1.1"
    assert msg["id"].startswith("MSG-")
    stamp = datetime.strptime(msg["timestamp"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    assert abs(datetime.now(UTC) - stamp) < timedelta(seconds=5)


def test_ids_are_unique() -> None:
    assert len({make_message("query", sender="a", content="?")["id"] for _ in range(50)}) == 50


def test_query_confidence_defaults_to_one() -> None:
    assert make_message("query", sender="a", content="?")["confidence"] == 1.0


def test_other_types_must_declare_confidence() -> None:
    with pytest.raises(VLPError) as caught:
        make_message("claim", sender="a", content="x")
    assert [p.code for p in caught.value.problems] == ["VLP101"]


def test_rule_violations_raise_with_every_problem() -> None:
    with pytest.raises(VLPError, match="VLP201.*VLP202") as caught:
        make_message("evidence", sender="a", content="x", confidence=0.5)
    assert isinstance(caught.value, ValueError)


def test_all_optional_fields_round_trip() -> None:
    msg = make_message(
        "correction",
        sender="Operator",
        content={"fixed": True},
        confidence=0.9,
        provenance=["https://x", {"ref": "sha256:ab", "type": "hash"}],
        refers_to=["M1", "M2"],
        receiver="Archivist",
        topic="content_ops",
        session_id="S1",
        seq=4,
        payload={"n": 1},
        constraints=["tone: formal"],
        safety="review",
        extras={"trace": "t1"},
        id="C1",
        timestamp=datetime(2025, 12, 14, 11, 30, tzinfo=timezone(timedelta(hours=1))),
    )
    assert msg["timestamp"] == "2025-12-14T10:30:00.000Z"
    assert msg["safety"] == {"level": "review", "issues": []}
    assert msg["_extras"] == {"trace": "t1"}
    assert msg["refers_to"] == ["M1", "M2"] and msg["seq"] == 4 and msg["id"] == "C1"
    assert validate_vlp(msg) == (True, None)


def test_unknown_keyword_is_a_type_error_not_a_silent_typo() -> None:
    with pytest.raises(TypeError):
        make_message("claim", sender="a", content="x", confidence=0.5, provenence=["x"])  # type: ignore[call-arg]


def test_naive_datetime_is_refused() -> None:
    with pytest.raises(ValueError, match="timezone"):
        utc_timestamp(datetime(2025, 1, 1))

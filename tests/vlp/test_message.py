"""make_message: the seed's call shape, defaults, and refusal of invalid messages."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from types import MappingProxyType
from typing import Any

import orjson
import pytest

from tests.vlp.conftest import base
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


@pytest.mark.parametrize("field", ["provenance", "keywords", "constraints"])
def test_a_string_for_a_list_field_is_refused_not_split_into_characters(field: str) -> None:
    fields: dict[str, Any] = {"sender": "a", "content": "x", "confidence": 0.5, field: "database"}
    with pytest.raises(VLPError) as caught:
        make_message("claim", **fields)
    [problem] = caught.value.problems
    assert problem.code == "VLP102" and f"'{field}'" in problem.message


@pytest.mark.parametrize(
    ("field", "value"),
    [("refers_to", 5), ("safety", 5), ("extras", [1]), ("payload", [("a", 1)]), ("content", 3)],
)
def test_wrong_types_are_a_vlp_error_never_a_stray_type_error(field: str, value: Any) -> None:
    fields: dict[str, Any] = {"sender": "a", "content": "x", "confidence": 0.5, field: value}
    with pytest.raises(VLPError) as caught:
        make_message("response", **fields)
    assert "VLP102" in [p.code for p in caught.value.problems]


def test_tuples_are_lists_and_mappings_are_dicts() -> None:
    msg = make_message(
        "response",
        sender="a",
        content=MappingProxyType({"k": 1}),
        confidence=0.5,
        refers_to=("M1", "M2"),
        keywords=("audit",),
    )
    assert msg["refers_to"] == ["M1", "M2"] and msg["keywords"] == ["audit"]
    assert type(msg["content"]) is dict
    assert validate_vlp(msg) == (True, None)


def _nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def test_values_json_cannot_carry_are_refused_with_their_place() -> None:
    looped: dict[str, Any] = {}
    looped["self"] = looped
    cases: list[tuple[dict[str, Any], str]] = [
        ({"content": {"ids": {1, 2}}}, "'content.ids' holds a set"),
        ({"payload": {1: "one"}}, "'payload' has key 1"),
        ({"extras": {"score": float("nan")}}, "'_extras.score' is nan"),
        ({"payload": {"raw": b"\x00"}}, "'payload.raw' holds a bytes"),
        ({"payload": {"deep": _nested(300)}}, "nested too deeply"),
        ({"payload": looped}, "nested too deeply"),
    ]
    for fields, expected in cases:
        made: dict[str, Any] = {"sender": "a", "content": "x", "confidence": 0.5, **fields}
        with pytest.raises(VLPError, match=expected.replace("[", r"\[")) as caught:
            make_message("claim", **made)
        assert {p.code for p in caught.value.problems} == {"VLP102"}
    # Nesting orjson can still write is fine.
    msg = make_message(
        "claim", sender="a", content="x", confidence=0.5, payload={"d": _nested(250)}
    )
    assert orjson.loads(orjson.dumps(msg)) == msg


def test_extras_under_its_wire_name() -> None:
    msg = make_message("claim", sender="a", content="x", confidence=0.5, _extras={"trace": 1})
    assert msg["_extras"] == {"trace": 1}
    with pytest.raises(TypeError, match="not both"):
        make_message("claim", sender="a", content="x", confidence=0.5, extras={}, _extras={})


@pytest.mark.parametrize(
    "surrogate",
    [
        {"\ud800x": 1},  # an unknown field
        {"content": {"\udc00": 1}},
        {"content": "a\udc00b"},
        {"payload": {"k": ["\ud83d"]}},
    ],
)
def test_lone_surrogates_are_refused_alike_by_every_path(surrogate: dict[str, Any]) -> None:
    from vlp import Message, is_valid, message_problems, validate_vlp

    msg = {**base(), **surrogate}
    ok, reason = validate_vlp(msg)
    assert not ok and reason is not None and "VLP102" in reason and "lone surrogate" in reason
    assert not is_valid(msg) and message_problems(msg)
    with pytest.raises(ValueError, match="lone surrogate"):
        Message.from_dict(msg)
    reason.encode("utf-8")  # the report itself prints

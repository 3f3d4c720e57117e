"""The hand-written validator: spec rules, problem codes, and agreement with the schema."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings

from tests.vlp.conftest import base, messages
from vlp import message_problems, validate_vlp
from vlp.validate import check_message, is_surely_valid


def codes(msg: Any) -> list[str]:
    return [p.code for p in message_problems(msg)]


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(messages())
def test_validator_agrees_with_the_json_schema(schema_validator: Any, msg: dict[str, Any]) -> None:
    msg = orjson.loads(orjson.dumps(msg))  # exactly what a stream would deliver
    schema_ok = schema_validator.is_valid(msg)
    assert (check_message(msg) is None) == schema_ok, (msg, list(schema_validator.iter_errors(msg)))
    assert validate_vlp(msg)[0] == schema_ok
    if is_surely_valid(msg):  # the fast path may only say yes to valid messages
        assert schema_ok


MUTATIONS: list[tuple[str, Any]] = [
    ("confidence", None),
    ("confidence", 0.95),
    ("confidence", 1.5),
    ("confidence", "0.5"),
    ("type", "evidence"),
    ("type", "response"),
    ("type", "query"),
    ("type", "task"),
    ("type", "session_context"),
    ("provenance", []),
    ("provenance", ["db"]),
    ("provenance", [{"ref": "r"}]),
    ("provenance", [{"hash": "h"}]),
    ("provenance", "db"),
    ("refers_to", "MSG000"),
    ("refers_to", []),
    ("refers_to", ["a", 1]),
    ("refers_to", None),
    ("safety", {"level": "review"}),
    ("safety", {"level": "block", "issues": []}),
    ("safety", {"issues": []}),
    ("safety", {"level": "safe", "requires_human": "yes"}),
    ("timestamp", "2025-02-29T00:00:00Z"),
    ("timestamp", "2024-02-29T00:00:00.5Z"),
    ("seq", 2),
    ("seq", -1),
    ("seq", 1.0),
    ("session_id", "S1"),
    ("session_id", ""),
    ("id", ""),
    ("sender", None),
    ("content", {"k": 1}),
    ("content", [1]),
    ("keywords", ["a"]),
    ("keywords", [1]),
    ("constraints", "x"),
    ("_extras", []),
    ("protocol", "VLP/1.2"),
    ("receiver", 3),
    ("topic", "ops"),
    ("payload", {"n": 1}),
]


def test_validator_agrees_with_schema_on_a_mutated_corpus(schema_validator: Any) -> None:
    """A second, deterministic corpus: realistic messages with 0-3 random mutations each."""
    rng = random.Random(2025)
    verdicts = []
    for _ in range(3000):
        msg = base(provenance=["https://example.org/a"], keywords=["audit"])
        for field, value in rng.sample(MUTATIONS, rng.randint(0, 3)):
            if value is None:
                msg.pop(field, None)
            else:
                msg[field] = value
        schema_ok = schema_validator.is_valid(msg)
        assert validate_vlp(msg)[0] == schema_ok, (msg, list(schema_validator.iter_errors(msg)))
        assert not is_surely_valid(msg) or schema_ok
        verdicts.append(schema_ok)
    assert 0.2 < sum(verdicts) / len(verdicts) < 0.8  # both kinds well represented


def test_seed_example_message_is_valid() -> None:
    msg = {
        "id": "MSG001",
        "protocol": "VLP/1.1",
        "type": "claim",
        "timestamp": "2025-12-14T10:30:00Z",
        "session_id": "S-2025-12-14-agent-abc123",
        "seq": 1,
        "sender": "TheObserver",
        "receiver": "TheArchivist",
        "content": "Cross-posted 3 new articles to the forum.",
        "confidence": 0.95,
        "provenance": ["medium_api", "substack_api"],
        "keywords": ["content", "publishing"],
        "safety": {"level": "safe", "issues": []},
    }
    assert validate_vlp(msg) == (True, None)
    assert is_surely_valid(msg)


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"confidence": None}, "VLP101"),
        ({"id": 7}, "VLP102"),
        ({"sender": ""}, "VLP103"),
        ({"protocol": "VLP/1.0"}, "VLP104"),
        ({"type": "rumour"}, "VLP105"),
        ({"type": "observation"}, "VLP106"),
        ({"timestamp": "2025-12-14T10:30:00+02:00"}, "VLP107"),
        ({"timestamp": "2023-02-29T10:30:00Z"}, "VLP107"),
        ({"confidence": 1.2}, "VLP108"),
        ({"seq": -1}, "VLP108"),
        ({"provenance": [{"type": "url"}]}, "VLP109"),
        ({"safety": {"level": "danger"}}, "VLP110"),
        ({"safety": {"level": "review", "issues": [{"detail": "no code"}]}}, "VLP111"),
        ({"refers_to": []}, "VLP112"),
        ({"type": "evidence", "provenance": ["p"]}, "VLP201"),
        ({"type": "evidence", "refers_to": "MSG000"}, "VLP202"),
        ({"type": "response"}, "VLP203"),
        ({"type": "correction"}, "VLP203"),
        ({"confidence": 0.9}, "VLP204"),
        ({"type": "session_context"}, "VLP205"),
    ],
)
def test_each_problem_gets_its_code(fields: dict[str, Any], code: str) -> None:
    assert code in codes(base(**fields))


def test_error_names_the_field_and_reason() -> None:
    ok, error = validate_vlp(base(type="evidence"))
    assert not ok and error is not None
    assert "VLP201" in error and "refers_to" in error and "VLP202" in error


def test_high_confidence_is_earned_by_provenance_or_review() -> None:
    assert codes(base(confidence=0.95, provenance=["db"])) == []
    assert codes(base(confidence=0.95, safety={"level": "review"})) == []
    assert codes(base(confidence=0.95, provenance=[])) == ["VLP204"]
    assert codes(base(confidence=0.95, safety={"level": "safe"})) == ["VLP204"]
    assert codes(base(confidence=0.95, safety={"level": "block"})) == ["VLP204"]
    assert codes(base(confidence=0.89)) == []


def test_query_is_exempt_from_the_high_confidence_rule() -> None:
    # Decision (docs/decisions.md, VLP): queries default to confidence 1.0 and assert nothing.
    assert codes(base(type="query", confidence=1.0)) == []
    assert codes(base(type="notice", confidence=1.0)) == ["VLP204"]


def test_refers_to_may_be_a_string_or_a_list() -> None:
    assert codes(base(type="response", refers_to="MSG000")) == []
    assert codes(base(type="response", refers_to=["MSG000", "MSG002"])) == []
    assert "VLP103" in codes(base(type="response", refers_to=["MSG000", ""]))


def test_structured_provenance_and_extras() -> None:
    msg = base(
        confidence=0.95,
        provenance=[
            {"ref": "https://x", "hash": "sha256:ab", "fetched_at": "2025-12-14T10:30:00Z"}
        ],
        _extras={"vendor": {"trace": 1}},
        payload={"n": 3},
        topic="content_ops",
    )
    assert codes(msg) == []
    assert "VLP107" in codes(base(provenance=[{"ref": "r", "fetched_at": "yesterday"}]))


def test_integral_float_seq_counts_as_integer_like_json_schema() -> None:
    assert codes(base(seq=3.0)) == []
    assert codes(base(seq=2.5)) == ["VLP102"]


def test_non_objects_and_booleans() -> None:
    assert codes([1, 2]) == ["VLP002"]
    assert codes(base(confidence=True)) == ["VLP102"]
    for field in ("content", "receiver", "safety"):
        msg = base()
        msg[field] = None  # JSON null is a wrong type, not a missing field
        assert codes(msg) == ["VLP102"], field


def test_unknown_fields_are_allowed() -> None:
    assert codes(base(context_metrics={"context_depth": 4}, vendor_field=1)) == []

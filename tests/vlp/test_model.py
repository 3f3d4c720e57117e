"""The pydantic model accepts exactly what the validator accepts."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tests.vlp.conftest import base
from vlp import Message, make_message


def test_model_round_trips_a_message() -> None:
    msg = make_message(
        "notice",
        sender="A",
        content="drift",
        confidence=0.8,
        refers_to="M1",
        safety={"level": "review", "issues": [{"code": "tone", "detail": "d"}]},
        extras={"k": 1},
        provenance=[{"ref": "r", "hash": "h"}],
    )
    model = Message.from_dict(msg)
    assert model.type == "notice" and model.safety_level == "review"
    assert model.safety is not None and model.safety.issues is not None
    assert model.safety.issues[0].code == "tone"
    assert model.extras == {"k": 1}
    assert model.to_dict() == msg


def test_model_refuses_rule_violations_with_codes() -> None:
    with pytest.raises(ValidationError, match="VLP204"):
        Message.from_dict(base(confidence=0.99))


def test_model_create_and_unknown_fields_kept() -> None:
    model = Message.create("query", sender="A", content="?")
    assert model.confidence == 1.0
    kept = Message.from_dict(base(vendor="x"))
    assert kept.to_dict()["vendor"] == "x"


def test_a_model_cannot_be_edited_into_an_invalid_message() -> None:
    model = Message.from_dict(base(safety={"level": "review"}, confidence=0.95))
    with pytest.raises(ValidationError, match="frozen"):
        model.confidence = 0.99
    assert model.safety is not None
    with pytest.raises(ValidationError, match="frozen"):
        model.safety.level = "safe"
    assert model.to_dict()["safety"]["level"] == "review"


def test_the_model_requires_what_the_wire_requires() -> None:
    with pytest.raises(ValidationError, match="VLP101 missing required field 'protocol'"):
        Message.from_dict(base(protocol=None))
    with pytest.raises(ValidationError, match="VLP102 'content.s' holds a set"):
        Message.from_dict(base(content={"s": {1}}))

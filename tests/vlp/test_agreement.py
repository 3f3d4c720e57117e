"""One source of truth: the packaged JSON Schema and the Python validator (all its entry
points: explaining validator, dict fast path, NDJSON line fast path, pydantic model) give
the same verdict on a deterministic corpus that is checked to be broad: every field with
values on both sides of each boundary and of the wrong JSON types, every message type,
every rule, extra fields, and random combinations of all of these.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from pydantic import ValidationError

from vlp import CODES, MESSAGE_TYPES, Message, validate_vlp
from vlp.fastpath import is_surely_valid_line
from vlp.validate import check_message, is_surely_valid

ABSENT = object()  # the field is left out

TIMESTAMPS = [
    "2025-12-14T10:30:00Z",
    "2025-12-14T10:30:00.5Z",
    "2025-12-14T10:30:00.123456789Z",
    "2024-02-29T23:59:60Z",
    "2000-02-29T00:00:00Z",
    "1900-02-29T00:00:00Z",
    "2023-02-29T00:00:00Z",
    "2025-04-31T00:00:00Z",
    "2025-00-10T00:00:00Z",
    "2025-12-14T24:00:00Z",
    "2025-12-14T10:60:00Z",
    "2025-12-14T10:30:61Z",
    "2025-12-14T10:30:60Z",
    "2025-12-14T10:30:00+00:00",
    "2025-12-14t10:30:00z",
    "2025-12-14T10:30:00",
    "2025-12-14T10:30:00.Z",
    "2025-12-14T10:30Z",
    "2025-12-14T10:30:00Z\n",
    " 2025-12-14T10:30:00Z",
    "",
]

# Values for every field of the spec (and two unknown ones): valid ones, boundary values on
# both sides, and wrong JSON types (null included).
FIELD_VALUES: dict[str, list[Any]] = {
    "id": [ABSENT, "", "M", "MSG-0001", 7, None, ["M"]],
    "protocol": [ABSENT, "VLP/1.1", "VLP/1.0", "VLP/1.1 ", "vlp/1.1", 1.1, None],
    "type": [ABSENT, *MESSAGE_TYPES, "observation", "alert", "task", "Claim", "", 3, None],
    "timestamp": [ABSENT, *TIMESTAMPS, 1734172200, None],
    "sender": [ABSENT, "", "A", 1, None, {}],
    "content": [ABSENT, "", "text", {}, {"k": [1, {"n": None}]}, [], 0, True, None],
    "confidence": [
        ABSENT,
        0,
        0.0,
        -0.0,
        5e-324,
        0.5,
        0.8999999999999999,
        0.9,
        0.9000000000000001,
        1,
        1.0,
        1.0000000000000002,
        -1e-9,
        2,
        10**30,
        "0.5",
        True,
        False,
        None,
        [0.5],
    ],
    "session_id": [ABSENT, "", "S1", 1, None],
    "seq": [ABSENT, 0, 1, 2**63, -1, 1.0, 1.5, 1e300, "1", True, None],
    "receiver": [ABSENT, "", "B", 1, None],
    "topic": [ABSENT, "", "content_ops", ["t"], None],
    "payload": [ABSENT, {}, {"a": [1]}, [], "x", None],
    "provenance": [
        ABSENT,
        [],
        ["db"],
        [""],
        ["https://x", {"ref": "r"}],
        [{"ref": ""}],
        [{"ref": 1}],
        [{}],
        [{"ref": "r", "type": "url", "hash": "sha256:ab"}],
        [{"ref": "r", "type": 1}],
        [{"ref": "r", "hash": None}],
        [{"ref": "r", "fetched_at": "2025-12-14T10:30:00Z"}],
        [{"ref": "r", "fetched_at": "2025-12-14"}],
        [{"ref": "r", "vendor": 1}],
        [1],
        [None],
        [["db"]],
        "db",
        {},
        None,
    ],
    "keywords": [ABSENT, [], ["a", ""], ["a", 1], "a", None],
    "constraints": [ABSENT, [], ["tone: formal"], [None], {}, None],
    "safety": [
        ABSENT,
        {"level": "safe"},
        {"level": "review"},
        {"level": "block"},
        {"level": "Review"},
        {"level": None},
        {},
        {"issues": []},
        {"level": "safe", "issues": []},
        {"level": "review", "issues": [{"code": "tone", "detail": "informal"}]},
        {"level": "safe", "issues": [{"code": ""}]},
        {"level": "safe", "issues": [{"detail": "d"}]},
        {"level": "safe", "issues": [{"code": "c", "detail": 1}]},
        {"level": "safe", "issues": [{"code": "c", "vendor": 1}]},
        {"level": "safe", "issues": ["c"]},
        {"level": "safe", "issues": {}},
        {"level": "review", "requires_human": True},
        {"level": "safe", "requires_human": "yes"},
        {"level": "safe", "vendor": 1},
        "review",
        [],
        None,
    ],
    "refers_to": [ABSENT, "M0", "", ["M0"], ["M0", "M1"], [], [""], ["M0", 1], 1, None, {}],
    "_extras": [ABSENT, {}, {"a": {"b": 1}}, [], "x", None],
    "x-vendor": [ABSENT, 1, None, {"any": []}],
    "extras": [ABSENT, "not _extras", None],
    "context_metrics": [ABSENT, {"context_integrity": 0.5}],
}


def _base(kind: str) -> dict[str, Any]:
    """A minimal valid message of each type."""
    msg: dict[str, Any] = {
        "id": "M1",
        "protocol": "VLP/1.1",
        "type": kind,
        "timestamp": "2025-12-14T10:30:00Z",
        "sender": "Operator",
        "content": "c",
        "confidence": 0.5,
    }
    if kind in ("evidence", "response", "correction"):
        msg["refers_to"] = "M0"
    if kind == "evidence":
        msg["provenance"] = ["db"]
    if kind == "session_context":
        msg["session_id"] = "S1"
    return msg


def _full(kind: str) -> dict[str, Any]:
    """A valid message of each type carrying every optional field."""
    return _base(kind) | {
        "session_id": "S1",
        "seq": 3,
        "receiver": "Archivist",
        "topic": "content_ops",
        "payload": {"n": 1},
        "provenance": ["https://x", {"ref": "r", "hash": "h"}],
        "keywords": ["audit"],
        "constraints": ["tone: formal"],
        "safety": {"level": "review", "issues": [{"code": "tone"}], "requires_human": True},
        "refers_to": ["M0"],
        "_extras": {"trace": "t"},
        "confidence": 0.95,
    }


def _with(msg: dict[str, Any], field: str, value: Any) -> dict[str, Any]:
    changed = dict(msg)
    if value is ABSENT:
        changed.pop(field, None)
    else:
        changed[field] = value
    return changed


def corpus() -> Iterator[tuple[str, dict[str, Any]]]:
    """(origin, message): every base, each base with each single field value, then random
    combinations of two to five field values."""
    bases = [_base(kind) for kind in MESSAGE_TYPES] + [_full(kind) for kind in MESSAGE_TYPES]
    for msg in bases:
        yield "base", msg
    for msg in bases:
        for field, values in FIELD_VALUES.items():
            for value in values:
                yield f"single:{field}", _with(msg, field, value)
    rng = random.Random(20251214)
    fields = sorted(FIELD_VALUES)
    for _ in range(6000):
        msg = rng.choice(bases)
        for field in rng.sample(fields, rng.randint(2, 5)):
            msg = _with(msg, field, rng.choice(FIELD_VALUES[field]))
        yield "random", msg


def _line(msg: dict[str, Any]) -> bytes | None:
    try:
        return orjson.dumps(msg)
    except orjson.JSONEncodeError:  # integers beyond 64 bits
        return None


def _model_accepts(msg: dict[str, Any]) -> bool:
    """Whether the model takes ``msg``; when it does, it must give the same message back."""
    try:
        model = Message.from_dict(msg)
    except ValidationError:
        return False
    assert model.to_dict() == msg
    return True


def test_every_entry_point_agrees_with_the_schema_on_a_broad_corpus(
    schema_validator: Any,
) -> None:
    seen_codes: set[str] = set()
    verdicts: dict[str, set[bool]] = {}  # origin or type -> verdicts seen
    random_valid = random_total = 0
    for origin, msg in corpus():
        schema_ok = schema_validator.is_valid(msg)
        problems = check_message(msg)
        context = (origin, msg, [e.message for e in schema_validator.iter_errors(msg)], problems)
        assert (problems is None) == schema_ok, context
        assert validate_vlp(msg)[0] == schema_ok, context
        assert _model_accepts(msg) == schema_ok, context
        assert not is_surely_valid(msg) or schema_ok, context
        data = _line(msg)
        assert data is None or not is_surely_valid_line(data) or schema_ok, context
        seen_codes.update(problem.code for problem in problems or [])
        verdicts.setdefault(origin, set()).add(schema_ok)
        if isinstance(msg.get("type"), str):
            verdicts.setdefault(f"type:{msg['type']}", set()).add(schema_ok)
        if origin == "random":
            random_total += 1
            random_valid += schema_ok

    # The corpus is broad: every per-message problem code occurs...
    per_message = {code for code in CODES if code[3] in "12"}
    assert per_message <= seen_codes, sorted(per_message - seen_codes)
    # ...every type has valid and invalid messages...
    for kind in MESSAGE_TYPES:
        assert verdicts[f"type:{kind}"] == {True, False}, kind
    # ...every field has values on both sides, except the unknown ones, always accepted...
    for field in FIELD_VALUES:
        expected = {True} if field in ("x-vendor", "extras", "context_metrics") else {True, False}
        assert verdicts[f"single:{field}"] == expected, field
    # ...and random combinations are neither almost all valid nor almost all invalid.
    assert 0.1 < random_valid / random_total < 0.9


@pytest.mark.parametrize("kind", MESSAGE_TYPES)
def test_the_corpus_bases_are_valid(kind: str, schema_validator: Any) -> None:
    for msg in (_base(kind), _full(kind)):
        assert schema_validator.is_valid(msg) and validate_vlp(msg) == (True, None)

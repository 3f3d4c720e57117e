"""Shared fixtures and hypothesis strategies for the vlp tests."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import strategies as st

import vlp


def base(**fields: Any) -> dict[str, Any]:
    """A valid claim, with ``fields`` overriding or adding fields (None deletes one)."""
    msg: dict[str, Any] = {
        "id": "MSG001",
        "protocol": "VLP/1.1",
        "type": "claim",
        "timestamp": "2025-12-14T10:30:00Z",
        "sender": "Operator",
        "content": "Published 3 articles.",
        "confidence": 0.8,
    }
    for key, value in fields.items():
        if value is None:
            msg.pop(key, None)
        else:
            msg[key] = value
    return msg


@pytest.fixture
def dialogue() -> list[dict[str, Any]]:
    """The spec's example dialogue, made valid (see docs/decisions.md, VLP)."""
    return [
        base(id="MSG001", confidence=0.95, provenance=["https://medium.com/@vigilith/article-1"]),
        base(
            id="MSG002",
            type="query",
            sender="Archivist",
            content="Please provide links.",
            confidence=1.0,
            refers_to="MSG001",
        ),
        base(
            id="MSG003",
            type="evidence",
            refers_to="MSG001",
            confidence=1.0,
            content="links",
            provenance=["https://medium.com/@vigilith/article-1"],
        ),
        base(
            id="MSG004",
            type="notice",
            sender="Archivist",
            content="Tone drift.",
            confidence=0.8,
            refers_to="MSG001",
            safety={"level": "review", "issues": [{"code": "off_brand_tone"}]},
        ),
        base(
            id="MSG005",
            type="correction",
            content="Adjusted tone to formal style.",
            confidence=0.9,
            refers_to="MSG001",
            provenance=["https://medium.com/@vigilith/article-2-v2"],
        ),
    ]


# --- generated corpus of valid and invalid messages -------------------------------------

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.floats(-2, 2, allow_nan=False)
    | st.text(max_size=4)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


def mostly(good: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Usually a well-formed value, sometimes any JSON value at all."""
    return st.one_of(good, good, good, json_values)


ids = st.sampled_from(["MSG001", "MSG002", "x", "", "MSG-9"])
timestamps = st.one_of(
    st.datetimes().map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%S") + "Z"),
    st.sampled_from(
        [
            "2025-12-14T10:30:00Z",
            "2025-12-14T10:30:00.123456Z",
            "2024-02-29T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "2000-02-29T12:00:00Z",
            "1900-02-29T12:00:00Z",
            "2025-04-31T00:00:00Z",
            "2025-13-01T00:00:00Z",
            "2025-12-14T24:00:00Z",
            "2025-12-14T23:59:60Z",
            "2025-12-14T10:30:00+00:00",
            "2025-12-14T10:30:00Z\n",
            "2025-12-14 10:30:00Z",
            "2025-12-14T10:30:00.Z",
            "２０２５-12-14T10:30:00Z",
        ]
    ),
)
provenance_items = st.one_of(
    st.text(min_size=1, max_size=6),
    st.just(""),
    st.fixed_dictionaries(
        {"ref": mostly(st.text(min_size=1, max_size=5))},
        optional={
            "type": mostly(st.text(max_size=3)),
            "hash": st.text(max_size=3),
            "fetched_at": timestamps,
        },
    ),
    st.fixed_dictionaries({}, optional={"type": st.text(max_size=3)}),
    json_scalars,
)
safety_objects = st.fixed_dictionaries(
    {"level": mostly(st.sampled_from(["safe", "review", "block"]))},
    optional={
        "issues": mostly(
            st.lists(
                st.fixed_dictionaries(
                    {"code": mostly(st.text(min_size=1, max_size=4))},
                    optional={"detail": mostly(st.text(max_size=4))},
                ),
                max_size=2,
            )
        ),
        "requires_human": mostly(st.booleans()),
    },
)
confidences = st.one_of(
    st.floats(0, 1, allow_nan=False),
    st.sampled_from([0, 1, 0.9, 0.8999999, 1.0, -0.1, 1.01, 5, True]),
)
types = st.sampled_from(
    [
        "claim",
        "evidence",
        "query",
        "response",
        "correction",
        "notice",
        "session_context",
        "observation",
        "Claim",
    ]
)


@st.composite
def messages(draw: st.DrawFn) -> dict[str, Any]:
    msg = draw(
        st.fixed_dictionaries(
            {
                "id": mostly(ids),
                "protocol": mostly(st.sampled_from(["VLP/1.1", "VLP/1.1", "VLP/1.0"])),
                "type": mostly(types),
                "timestamp": mostly(timestamps),
                "sender": mostly(st.sampled_from(["Operator", "", "A"])),
                "content": mostly(
                    st.one_of(
                        st.text(max_size=5),
                        st.dictionaries(st.text(max_size=3), json_scalars, max_size=2),
                    )
                ),
                "confidence": mostly(confidences),
            },
            optional={
                "session_id": mostly(st.sampled_from(["S1", "", "S-2"])),
                "seq": mostly(st.one_of(st.integers(-2, 5), st.just(3.0), st.just(2.5))),
                "receiver": mostly(st.text(max_size=3)),
                "topic": mostly(st.text(max_size=3)),
                "payload": mostly(st.dictionaries(st.text(max_size=3), json_scalars, max_size=2)),
                "provenance": mostly(st.lists(provenance_items, max_size=3)),
                "keywords": mostly(st.lists(st.text(max_size=3), max_size=3)),
                "constraints": mostly(st.lists(st.text(max_size=3), max_size=2)),
                "safety": mostly(safety_objects),
                "refers_to": mostly(st.one_of(ids, st.lists(ids, max_size=3))),
                "_extras": mostly(st.dictionaries(st.text(max_size=3), json_scalars, max_size=2)),
                "x-unknown": json_values,
            },
        )
    )
    for field in (
        draw(st.sets(st.sampled_from(sorted(msg)), max_size=2)) if draw(st.booleans()) else ()
    ):
        del msg[field]
    return msg


@pytest.fixture(scope="session")
def schema_validator() -> Any:
    jsonschema = pytest.importorskip("jsonschema")
    return jsonschema.Draft202012Validator(vlp.load_schema())

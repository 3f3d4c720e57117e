"""Creating messages in code: ``make_message`` fills in id, protocol and timestamp and
refuses to return anything that is not a valid VLP/1.1 message."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from vlp.errors import VLPError
from vlp.schema import PROTOCOL
from vlp.validate import message_problems

#: Queries assert nothing, so they may omit confidence (docs/decisions.md, VLP).
QUERY_DEFAULT_CONFIDENCE = 1.0


def utc_timestamp(moment: datetime | None = None) -> str:
    """RFC 3339 UTC timestamp with millisecond precision, e.g. ``2025-12-14T10:30:00.000Z``."""
    moment = datetime.now(UTC) if moment is None else moment
    if moment.tzinfo is None:
        raise ValueError("timestamp datetime must be timezone-aware")
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def new_message_id() -> str:
    """A fresh unique message id (``MSG-`` and a UUID4 in hex)."""
    return f"MSG-{uuid.uuid4().hex}"


def _listed(value: object) -> object:
    """A sequence as a list (mappings inside as dicts); anything else, strings and bytes
    included, unchanged for the validator to name: "db" is not split into characters."""
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray)):
        return [dict(item) if isinstance(item, Mapping) else item for item in value]
    return value


def _mapped(value: object) -> object:
    return dict(value) if isinstance(value, Mapping) else value


def _safety_object(safety: object) -> object:
    if isinstance(safety, str):
        return {"level": safety, "issues": []}
    return _mapped(safety)


def make_message(
    type: str,
    *,
    sender: str,
    content: str | Mapping[str, Any],
    confidence: float | None = None,
    provenance: Sequence[str | Mapping[str, Any]] | None = None,
    keywords: Sequence[str] | None = None,
    refers_to: str | Sequence[str] | None = None,
    receiver: str | None = None,
    topic: str | None = None,
    session_id: str | None = None,
    seq: int | None = None,
    payload: Mapping[str, Any] | None = None,
    constraints: Sequence[str] | None = None,
    safety: str | Mapping[str, Any] | None = None,
    extras: Mapping[str, Any] | None = None,
    id: str | None = None,
    timestamp: str | datetime | None = None,
    _extras: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A new, valid VLP/1.1 message dict, or VLPError listing every problem.

    ``safety`` may be a level name (``"review"``) or a full safety object; ``extras``
    (or ``_extras``, the wire name) becomes ``_extras``; ``refers_to`` may be one id or a
    list. Confidence is required except for queries, where it defaults to 1.0. Values of
    the wrong type are not coerced: ``provenance="db"`` is refused, not split into
    characters, and so is anything JSON cannot carry.
    """
    if _extras is not None:
        if extras is not None:
            raise TypeError("give extras or _extras, not both")
        extras = _extras
    if confidence is None and type == "query":
        confidence = QUERY_DEFAULT_CONFIDENCE
    if isinstance(timestamp, datetime):
        timestamp = utc_timestamp(timestamp)
    msg: dict[str, Any] = {
        "id": new_message_id() if id is None else id,
        "protocol": PROTOCOL,
        "type": type,
        "timestamp": utc_timestamp() if timestamp is None else timestamp,
    }
    optional: list[tuple[str, object]] = [
        ("session_id", session_id),
        ("seq", seq),
        ("sender", sender),
        ("receiver", receiver),
        ("topic", topic),
        ("content", _mapped(content)),
        ("confidence", confidence),
        ("provenance", _listed(provenance)),
        ("keywords", _listed(keywords)),
        ("constraints", _listed(constraints)),
        ("payload", _mapped(payload)),
        ("refers_to", _listed(refers_to)),
        ("safety", None if safety is None else _safety_object(safety)),
        ("_extras", _mapped(extras)),
    ]
    msg.update((key, value) for key, value in optional if value is not None)
    problems = message_problems(msg)
    if problems:
        raise VLPError(problems)
    return msg

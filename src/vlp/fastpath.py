"""Is this NDJSON line *surely* a valid message? Decoded and checked in C by msgspec.

Most lines of a stream hold valid messages, so the question worth making cheap is "is this
one fine?". msgspec answers it for the field shapes (types, enums, lengths, ranges) while
decoding the bytes, without building a dict, and the few cross-field rules (truth serum,
per-type requirements) run on the decoded object. False means "not sure": the caller then
parses the line with orjson and asks the explaining validator
(:func:`vlp.validate.check_message`), which, with the schema, is the reference. Tests prove
that whatever this accepts, orjson parses and that validator accepts.

:class:`LineShape` covers the common message only. orjson is our parser of record, and
msgspec's parser admits integer literals beyond the double range that orjson rejects; such
a number could only hide in a free-form value, so the shape has none: string content, no
payload, _extras, object provenance or unknown fields. Messages with those take the slower
dict path (:func:`vlp.validate.is_surely_valid`), with the same verdicts.
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

import msgspec
from msgspec import UNSET, UnsetType

from vlp.schema import MESSAGE_TYPES
from vlp.validate import timestamp_is_valid

Text = Annotated[str, msgspec.Meta(min_length=1)]
Confidence = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
Count = Annotated[int, msgspec.Meta(ge=0)]
MessageType = Literal[
    "claim", "evidence", "query", "response", "correction", "notice", "session_context"
]
assert set(get_args(MessageType)) == set(MESSAGE_TYPES), "the fast path knows every type"


class _Issue(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    code: Text
    detail: str | UnsetType = UNSET


class _Safety(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    level: Literal["safe", "review", "block"]
    issues: list[_Issue] | UnsetType = UNSET
    requires_human: bool | UnsetType = UNSET


class LineShape(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    """The common VLP/1.1 message, every value typed.

    The timestamp is a plain string here: :func:`vlp.validate.timestamp_is_valid` checks it
    with a cache that is much cheaper than the pattern for a stream's repeating minutes.
    """

    id: Text
    protocol: Literal["VLP/1.1"]
    type: MessageType
    timestamp: str
    sender: Text
    content: str
    confidence: Confidence
    # Absent fields the thread checks read have plain defaults no valid value can take
    # ("" and -1): the checks compare whole columns of them without testing for UNSET.
    session_id: Text = ""
    seq: Count = -1
    receiver: str | UnsetType = UNSET
    topic: str | UnsetType = UNSET
    refers_to: Text | Annotated[list[Text], msgspec.Meta(min_length=1)] = ""
    provenance: list[Text] | UnsetType = UNSET
    keywords: list[str] | UnsetType = UNSET
    constraints: list[str] | UnsetType = UNSET
    safety: _Safety | UnsetType = UNSET


_HIGH_CONFIDENCE = 0.9


def _rules_hold(msg: LineShape) -> bool:
    """The cross-field rules of the schema's ``allOf`` and the main timestamp."""
    kind = msg.type
    if kind == "evidence":
        if not msg.refers_to or not msg.provenance:
            return False
    elif kind == "response" or kind == "correction":
        if not msg.refers_to:
            return False
    elif kind == "session_context" and not msg.session_id:
        return False
    if msg.confidence >= _HIGH_CONFIDENCE and kind != "query" and not msg.provenance:
        safety = msg.safety
        if safety is UNSET or safety.level != "review":
            return False
    return timestamp_is_valid(msg.timestamp)


_decode_line = msgspec.json.Decoder(LineShape).decode
_NOT_SURE = (msgspec.MsgspecError, RecursionError, UnicodeDecodeError)


def is_surely_valid_line(line: bytes) -> bool:
    """True only for an NDJSON line holding a valid message that orjson parses."""
    try:
        return _rules_hold(_decode_line(line))
    except _NOT_SURE:
        return False


def surely_valid_fields(line: bytes) -> tuple[str, str, str | list[str], str, int] | None:
    """For a line :func:`is_surely_valid_line` accepts, what the thread checks read of it:
    ``(id, type, refers_to, session_id, seq)`` ("" and -1 when absent); else None. Only
    these small values outlive the call, so the decoded message's memory is reused at once.
    """
    try:
        shape = _decode_line(line)
    except _NOT_SURE:
        return None
    if _rules_hold(shape):
        return shape.id, shape.type, shape.refers_to, shape.session_id, shape.seq
    return None

"""Hand-written validator for one VLP/1.1 message: the schema's field shapes plus the truth serum.

It agrees with ``vlp-1.1.schema.json`` (a test proves it on a generated corpus) but runs
much faster than a generic JSON Schema engine: the valid path is straight-line dict
lookups and type tests, and problems are only described once something is wrong.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from operator import itemgetter
from typing import Any, TypeAlias

from vlp.errors import Problem, new_problem
from vlp.schema import (
    MESSAGE_TYPES,
    PROTOCOL,
    RESERVED_TYPES,
    SAFETY_LEVELS,
    TIMESTAMP_PATTERN,
)

# Problems as (code, message) until the caller says where they were found, so each
# Problem is built once.
_Found: TypeAlias = list[tuple[str, str]] | None
_MISSING: Any = object()
_TYPES = frozenset(MESSAGE_TYPES)
_LEVELS = frozenset(SAFETY_LEVELS)
_timestamp_match = TIMESTAMP_PATTERN.match
_HIGH_CONFIDENCE = 0.9
_NUMBER_TEXT = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_JSON_TYPE_NAMES = {
    str: "a string",
    bool: "a boolean",
    int: "a number",
    float: "a number",
    dict: "an object",
    list: "an array",
    type(None): "null",
}


def _shown(value: object) -> str:
    return _JSON_TYPE_NAMES.get(type(value), type(value).__name__)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_integer(value: object) -> bool:
    # JSON Schema counts 3.0 as an integer; mirror it so schema and validator agree.
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _add(found: _Found, code: str, message: str) -> list[tuple[str, str]]:
    if found is None:
        found = []
    found.append((code, message))
    return found


def _string_problem(
    found: _Found, field: str, value: object, *, required: bool, nonempty: bool
) -> _Found:
    """Describe why ``value`` is not an acceptable string for ``field`` (if it is not)."""
    if value is _MISSING:
        return _add(found, "VLP101", f"missing required field '{field}'") if required else found
    if not isinstance(value, str):
        return _add(found, "VLP102", f"'{field}' must be a string, got {_shown(value)}")
    if nonempty and not value:
        return _add(found, "VLP103", f"'{field}' must not be empty")
    return found


def _string_list_problem(found: _Found, field: str, value: object) -> _Found:
    if not isinstance(value, list):
        return _add(found, "VLP102", f"'{field}' must be an array of strings, got {_shown(value)}")
    for index, item in enumerate(value):
        if not isinstance(item, str):
            found = _add(
                found, "VLP102", f"'{field}[{index}]' must be a string, got {_shown(item)}"
            )
    return found


def _timestamp_problem(found: _Found, field: str, value: object) -> _Found:
    if not isinstance(value, str):
        return _add(found, "VLP102", f"'{field}' must be a string, got {_shown(value)}")
    if not _timestamp_match(value):
        message = f"'{field}' {value!r} is not an RFC 3339 UTC date-time like 2025-12-14T10:30:00Z"
        return _add(found, "VLP107", message + _timestamp_fix(value))
    return found


def _timestamp_fix(stamp: str) -> str:
    """How to write a date-time given another way (an offset such as +01:00, lowercase
    t/z, a space for 'T', no seconds, no zone) as VLP does; "" when ``stamp`` is no
    date-time at all."""
    text = stamp.strip()
    if len(text) < 16 or not text[:4].isdigit():
        return ""
    text = text[:10] + "T" + text[11:] if text[10:11] in ("t", " ") else text
    text = text[:-1] + "+00:00" if text[-1:] in ("z", "Z") else text
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return ""
    fraction = re.match(r"[.,](\d{1,6})", text[19:])
    digits = len(fraction.group(1)) if fraction else 0
    rule = " (VLP/1.1 writes UTC with 'T' and 'Z')"
    if moment.utcoffset() is None:
        return f"{rule}; write '{_z_spelling(moment, digits)}' if the time is in UTC"
    return f"{rule}; write '{_z_spelling(moment.astimezone(UTC), digits)}'"


def _z_spelling(moment: datetime, digits: int) -> str:
    shown = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if digits:
        shown += "." + f"{moment.microsecond:06d}"[:digits]
    return shown + "Z"


def _provenance_problem(found: _Found, value: object) -> _Found:
    if not isinstance(value, list):
        return _add(found, "VLP102", f"'provenance' must be an array, got {_shown(value)}")
    for index, item in enumerate(value):
        if isinstance(item, str):
            if not item:
                found = _add(found, "VLP109", f"'provenance[{index}]' is an empty string")
            continue
        if not isinstance(item, dict):
            found = _add(
                found,
                "VLP109",
                f"'provenance[{index}]' must be a string or an object, got {_shown(item)}",
            )
            continue
        where = f"provenance[{index}]"
        ref = item.get("ref", _MISSING)
        if ref is _MISSING:
            found = _add(found, "VLP109", f"'{where}' object lacks 'ref'")
        else:
            found = _string_problem(found, f"{where}.ref", ref, required=True, nonempty=True)
        for key in ("type", "hash"):
            if key in item:
                found = _string_problem(
                    found, f"{where}.{key}", item[key], required=False, nonempty=False
                )
        if "fetched_at" in item:
            found = _timestamp_problem(found, f"{where}.fetched_at", item["fetched_at"])
    return found


def _safety_problem(found: _Found, value: object) -> _Found:
    if not isinstance(value, dict):
        return _add(found, "VLP102", f"'safety' must be an object, got {_shown(value)}")
    level = value.get("level", _MISSING)
    if level is _MISSING:
        found = _add(found, "VLP101", "missing required field 'safety.level'")
    elif not isinstance(level, str) or level not in _LEVELS:
        found = _add(
            found, "VLP110", f"'safety.level' must be safe, review or block, got {level!r}"
        )
    issues = value.get("issues", _MISSING)
    if issues is not _MISSING:
        if not isinstance(issues, list):
            found = _add(found, "VLP102", f"'safety.issues' must be an array, got {_shown(issues)}")
        else:
            for index, issue in enumerate(issues):
                where = f"safety.issues[{index}]"
                if not isinstance(issue, dict):
                    found = _add(
                        found, "VLP102", f"'{where}' must be an object, got {_shown(issue)}"
                    )
                    continue
                code = issue.get("code", _MISSING)
                if not isinstance(code, str) or not code:
                    found = _add(found, "VLP111", f"'{where}.code' must be a non-empty string")
                if "detail" in issue:
                    found = _string_problem(
                        found, f"{where}.detail", issue["detail"], required=False, nonempty=False
                    )
    human = value.get("requires_human", _MISSING)
    if human is not _MISSING and not isinstance(human, bool):
        found = _add(
            found, "VLP102", f"'safety.requires_human' must be a boolean, got {_shown(human)}"
        )
    return found


def _refers_to_problem(found: _Found, value: object) -> _Found:
    if isinstance(value, str):
        return _add(found, "VLP103", "'refers_to' must not be empty") if not value else found
    if not isinstance(value, list):
        return _add(
            found, "VLP102", f"'refers_to' must be a string or an array, got {_shown(value)}"
        )
    if not value:
        return _add(found, "VLP112", "'refers_to' is an empty array")
    for index, item in enumerate(value):
        found = _string_problem(found, f"refers_to[{index}]", item, required=True, nonempty=True)
    return found


def _wrapped_messages(msg: dict[Any, Any]) -> tuple[str, str] | None:
    """VLP002 for an object that is no message but holds a list of them (an API's
    `{"messages": [...]}`) or is a model API's response whose text holds them: one problem
    that says where they are, not seven missing fields."""
    if "protocol" in msg:
        return None
    completion = _completion_text(msg)
    if completion is not None:
        where, text = completion
        holds = f'"protocol": "{PROTOCOL}"' in text.replace('":"', '": "')
        return (
            "VLP002",
            f"not a message: a model API's response; its reply text ({where})"
            + (
                " holds the message(s): validate that text (e.g. jq -r "
                f"'.{where}' FILE | vlp validate -)"
                if holds
                else " is where a VLP message would be"
            ),
        )
    if "id" in msg:
        return None
    for key, value in msg.items():
        if isinstance(value, list) and any(
            isinstance(item, dict) and item.get("protocol") == PROTOCOL for item in value
        ):
            return (
                "VLP002",
                (
                    f"not a message: this object holds {len(value)} message(s) under {key!r};"
                    " write them one a line (NDJSON) or as a JSON array"
                ),
            )
    return None


def _completion_text(msg: dict[Any, Any]) -> tuple[str, str] | None:
    """``(path, text)`` of the reply in an OpenAI, Anthropic or Gemini response object."""
    choices = msg.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message")
        if isinstance(message, dict) and isinstance(message.get("content"), str):
            return "choices[0].message.content", message["content"]
    content = msg.get("content")
    if msg.get("type") == "message" and isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, dict)]
        if texts and isinstance(texts[0], str):
            return "content[0].text", texts[0]
    candidates = msg.get("candidates")
    if isinstance(candidates, list) and candidates and isinstance(candidates[0], dict):
        parts = candidates[0].get("content", {})
        parts = parts.get("parts") if isinstance(parts, dict) else None
        if isinstance(parts, list) and parts and isinstance(parts[0], dict):
            text = parts[0].get("text")
            if isinstance(text, str):
                return "candidates[0].content.parts[0].text", text
    return None


def check_message(msg: Any, line: int | None = None) -> list[Problem] | None:
    """None when ``msg`` is a valid VLP/1.1 message, else every problem found.

    Complete for every shape the schema allows, and explains each problem; the hot
    path asks :func:`is_surely_valid` first and only falls back to this. Given the
    ``line`` the message was read from, the problems carry it and the message's id.
    """
    found = _explain(msg)
    if found is None:
        return None
    if line is None:
        return [Problem(code, message) for code, message in found]
    ident = msg.get("id") if isinstance(msg, dict) else None
    if not isinstance(ident, str):
        ident = None
    return [new_problem(code, message, line, ident) for code, message in found]


def _explain(msg: Any) -> _Found:
    if not isinstance(msg, dict):
        return [("VLP002", f"a message must be a JSON object, got {_shown(msg)}")]
    wrapped = _wrapped_messages(msg)
    if wrapped:
        return [wrapped]
    found: _Found = None
    get = msg.get

    value = get("id", _MISSING)
    if value.__class__ is not str or not value:
        found = _string_problem(found, "id", value, required=True, nonempty=True)
    value = get("protocol", _MISSING)
    if value != PROTOCOL:
        if value is _MISSING:
            found = _add(found, "VLP101", "missing required field 'protocol'")
        else:
            message = f"'protocol' must be {PROTOCOL!r}, got {value!r}"
            if isinstance(value, str) and value.strip().upper() == PROTOCOL:
                message += f" (the protocol id is exact: write {PROTOCOL!r})"
            found = _add(found, "VLP104", message)
    kind = get("type", _MISSING)
    if kind.__class__ is not str or kind not in _TYPES:
        if kind is _MISSING:
            found = _add(found, "VLP101", "missing required field 'type'")
        elif kind in RESERVED_TYPES:
            found = _add(found, "VLP106", f"type {kind!r} is reserved for a later VLP version")
        else:
            message = f"unknown type {kind!r}; expected one of {', '.join(MESSAGE_TYPES)}"
            if isinstance(kind, str) and kind.strip().lower() in _TYPES:
                message += f" (types are lowercase: write {kind.strip().lower()!r})"
            found = _add(found, "VLP105", message)
    value = get("timestamp", _MISSING)
    if value.__class__ is not str or not timestamp_is_valid(value):  # the pattern, cached
        if value is _MISSING:
            found = _add(found, "VLP101", "missing required field 'timestamp'")
        else:
            found = _timestamp_problem(found, "timestamp", value)
    value = get("sender", _MISSING)
    if value.__class__ is not str or not value:
        found = _string_problem(found, "sender", value, required=True, nonempty=True)
    value = get("content", _MISSING)
    if value.__class__ is not str and value.__class__ is not dict:
        if value is _MISSING:
            found = _add(found, "VLP101", "missing required field 'content'")
        elif not isinstance(value, (str, dict)):
            found = _add(
                found, "VLP102", f"'content' must be a string or an object, got {_shown(value)}"
            )
    confidence = get("confidence", _MISSING)
    confidence_is_number = confidence.__class__ is float or _is_number(confidence)
    if not confidence_is_number:
        if confidence is _MISSING:
            found = _add(found, "VLP101", "missing required field 'confidence'")
        else:
            message = f"'confidence' must be a number, got {_shown(confidence)}"
            if isinstance(confidence, str) and _NUMBER_TEXT.fullmatch(confidence.strip()):
                message += f"; write {confidence.strip()} without quotes"
            found = _add(found, "VLP102", message)
    elif not 0 <= confidence <= 1:
        message = f"'confidence' must be between 0 and 1, got {confidence!r}"
        if confidence.__class__ is int and 1 < confidence <= 100:
            message += f" (a percentage? write {confidence / 100:g})"
        found = _add(found, "VLP108", message)

    # Optional fields: most messages carry few, so test membership before looking closer.
    value = get("session_id", _MISSING)
    if value is not _MISSING and (value.__class__ is not str or not value):
        found = _string_problem(found, "session_id", value, required=False, nonempty=True)
    value = get("seq", _MISSING)
    if value is not _MISSING and (value.__class__ is not int or value < 0):
        if not _is_integer(value):
            found = _add(found, "VLP102", f"'seq' must be an integer, got {_shown(value)}")
        elif value < 0:
            found = _add(found, "VLP108", f"'seq' must be >= 0, got {value!r}")
    for field in ("receiver", "topic"):
        value = get(field, _MISSING)
        if value is not _MISSING and not isinstance(value, str):
            found = _add(found, "VLP102", f"'{field}' must be a string, got {_shown(value)}")
    for field in ("payload", "_extras"):
        value = get(field, _MISSING)
        if value is not _MISSING and not isinstance(value, dict):
            found = _add(found, "VLP102", f"'{field}' must be an object, got {_shown(value)}")
    provenance = get("provenance", _MISSING)
    if provenance is not _MISSING:
        if provenance.__class__ is list:
            for item in provenance:
                if item.__class__ is not str or not item:
                    found = _provenance_problem(found, provenance)
                    break
        else:
            found = _provenance_problem(found, provenance)
    for field in ("keywords", "constraints"):
        value = get(field, _MISSING)
        if value is not _MISSING:
            if value.__class__ is list:
                for item in value:
                    if item.__class__ is not str:
                        found = _string_list_problem(found, field, value)
                        break
            else:
                found = _string_list_problem(found, field, value)
    safety = get("safety", _MISSING)
    if safety is not _MISSING:
        found = _safety_problem(found, safety)
    refers_to = get("refers_to", _MISSING)
    if refers_to is not _MISSING and (refers_to.__class__ is not str or not refers_to):
        found = _refers_to_problem(found, refers_to)

    # Truth serum.
    has_provenance = isinstance(provenance, list) and len(provenance) > 0
    if kind == "evidence":
        if refers_to is _MISSING:
            found = _add(
                found, "VLP201", "evidence must carry 'refers_to' naming the claim it supports"
            )
        if not has_provenance:
            found = _add(found, "VLP202", "evidence must carry at least one provenance item")
    elif kind == "response" or kind == "correction":
        if refers_to is _MISSING:
            found = _add(
                found, "VLP203", f"{kind} must carry 'refers_to' naming the message it answers"
            )
    elif kind == "session_context" and "session_id" not in msg:
        found = _add(found, "VLP205", "session_context must carry 'session_id'")
    if (
        confidence_is_number
        and confidence >= _HIGH_CONFIDENCE
        and kind != "query"
        and not has_provenance
        and not (isinstance(safety, dict) and safety.get("level") == "review")
    ):
        found = _add(
            found,
            "VLP204",
            f"confidence {confidence!r} >= 0.9 needs provenance or safety.level 'review'",
        )
    return found


# Per-type rules as bit flags, so the fast path looks the type up once.
_NEEDS_REFERS_TO, _NEEDS_PROVENANCE, _NEEDS_SESSION, _ASSERTS = 1, 2, 4, 8
_RULES = {
    "claim": _ASSERTS,
    "evidence": _NEEDS_REFERS_TO | _NEEDS_PROVENANCE | _ASSERTS,
    "query": 0,  # asks, asserts nothing: exempt from the high-confidence rule
    "response": _NEEDS_REFERS_TO | _ASSERTS,
    "correction": _NEEDS_REFERS_TO | _ASSERTS,
    "notice": _ASSERTS,
    "session_context": _NEEDS_SESSION | _ASSERTS,
}
assert set(_RULES) == _TYPES, "every schema type needs its rules"

# The timestamp pattern is the costliest check of a valid message, while a stream's
# timestamps share their "YYYY-MM-DDTHH:MM" prefix run after run. So a known-good prefix
# followed by ":SSZ" passes with two set lookups; every other stamp goes to the pattern,
# which records the prefixes of those it accepts.
# Not :60 — a leap second is valid at 23:59 only, so the pattern decides those.
_SECOND_TAILS = frozenset(f":{second:02d}Z" for second in range(60))
_MINUTE_END = 16  # len("YYYY-MM-DDTHH:MM")
_MINUTES_KEPT = 1024  # bounds the memory of the cache whatever the stream
_known_minutes: set[str] = set()


def timestamp_is_valid(stamp: str) -> bool:
    """The schema's timestamp pattern, with a cache of the minutes it has accepted."""
    if stamp[_MINUTE_END:] in _SECOND_TAILS and stamp[:_MINUTE_END] in _known_minutes:
        return True
    if not _timestamp_match(stamp):
        return False
    if len(_known_minutes) >= _MINUTES_KEPT:
        _known_minutes.clear()
    _known_minutes.add(stamp[:_MINUTE_END])
    return True


_minute = itemgetter(slice(None, _MINUTE_END))
_second = itemgetter(slice(_MINUTE_END, None))


def bad_timestamps(stamps: list[str]) -> list[int]:
    """Indexes of the stamps the schema's pattern refuses, for a whole column at once.

    A stamp is valid when its minute ("YYYY-MM-DDTHH:MM") is a valid one and ":SSZ" ends
    it with seconds 00-59: so the column passes with set operations once each new minute
    is tried (as minute + ":00Z") against the pattern. The stamps with another minute or
    ending — fractions, leap seconds, bad stamps — are found by searching the column for
    each such minute or ending (in C) and judged by :func:`timestamp_is_valid`.
    """
    # Each column is cut once: a stream with a few bad stamps has one in most batches,
    # and the searches below need the columns (endings: only then).
    minutes = list(map(_minute, stamps))
    distinct = set(minutes)
    for minute in distinct.difference(_known_minutes):
        if len(minute) == _MINUTE_END and _timestamp_match(minute + ":00Z"):
            if len(_known_minutes) >= _MINUTES_KEPT:
                _known_minutes.clear()
            _known_minutes.add(minute)
    odd_minutes = distinct.difference(_known_minutes)
    if not odd_minutes and _SECOND_TAILS.issuperset(map(_second, stamps)):
        return []
    endings = list(map(_second, stamps))
    odd_endings = set(endings).difference(_SECOND_TAILS)
    suspects: set[int] = set()
    for column, odd in ((minutes, odd_minutes), (endings, odd_endings)):
        for part in odd:
            index = -1
            for _ in range(column.count(part)):
                index = column.index(part, index + 1)
                suspects.add(index)
    return sorted(index for index in suspects if not timestamp_is_valid(stamps[index]))


def is_surely_valid(msg: Any) -> bool:
    """Fast test for the common shape of a valid message.

    True only for valid messages; False means "not sure" and the caller must ask
    :func:`check_message`, which handles the rarer shapes (object provenance items, safety
    issues, integral floats as seq...) and explains what is wrong. Lookups of missing
    keys or of wrong types raise, which the ``try`` turns into "not sure": a valid
    message pays nothing for that.
    """
    try:
        rules = _RULES[msg["type"]]
        ident = msg["id"]
        sender = msg["sender"]
        content = msg["content"]
        confidence = msg["confidence"]
        stamp = msg["timestamp"]
        if not (
            ident.__class__ is str
            and ident
            and sender.__class__ is str
            and sender
            and (content.__class__ is str or content.__class__ is dict)
            and (confidence.__class__ is float or confidence.__class__ is int)
            and 0.0 <= confidence <= 1.0  # float constants: the common case compares faster
            and msg["protocol"] == PROTOCOL
            and stamp.__class__ is str
            and timestamp_is_valid(stamp)
        ):
            return False
        # Optional fields, unrolled on purpose: a loop over names costs more than the checks.
        earned = False  # has provenance, or is flagged for review
        if "provenance" in msg:
            value = msg["provenance"]
            if value.__class__ is not list:
                return False
            if value:
                for item in value:
                    if item.__class__ is not str or not item:
                        return False
                earned = True
            elif rules & _NEEDS_PROVENANCE:
                return False
        elif rules & _NEEDS_PROVENANCE:
            return False
        if "refers_to" in msg:
            value = msg["refers_to"]
            if value.__class__ is not str or not value:
                if value.__class__ is not list or not value:
                    return False
                for item in value:
                    if item.__class__ is not str or not item:
                        return False
        elif rules & _NEEDS_REFERS_TO:
            return False
        if "session_id" in msg:
            value = msg["session_id"]
            if value.__class__ is not str or not value:
                return False
        elif rules & _NEEDS_SESSION:
            return False
        if "safety" in msg:
            value = msg["safety"]
            level = value["level"]
            if level not in _LEVELS:
                return False
            if level == "review":
                earned = True
            if len(value) != 1:  # only {"level": ..., "issues": []} beyond the level
                if len(value) != 2:
                    return False
                value = value["issues"]
                if value.__class__ is not list or value:
                    return False
        if confidence >= _HIGH_CONFIDENCE and rules and not earned:
            return False
        if "seq" in msg:
            value = msg["seq"]
            if value.__class__ is not int or value < 0:
                return False
        if "receiver" in msg and msg["receiver"].__class__ is not str:
            return False
        if "keywords" in msg:
            value = msg["keywords"]
            if value.__class__ is not list:
                return False
            for item in value:
                if item.__class__ is not str:
                    return False
        if "topic" in msg and msg["topic"].__class__ is not str:
            return False
        if "payload" in msg and msg["payload"].__class__ is not dict:
            return False
        if "_extras" in msg and msg["_extras"].__class__ is not dict:
            return False
        if "constraints" in msg:
            value = msg["constraints"]
            if value.__class__ is not list:
                return False
            for item in value:
                if item.__class__ is not str:
                    return False
        return True
    except (KeyError, TypeError, AttributeError):
        return False


#: Arrays and objects one inside another, the message included, that orjson will write.
_MAX_DEPTH = 254
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_NOT_TEXT = "which is not Unicode text and JSON cannot carry"


def _shown_key(key: str) -> str:
    """A key as problems name it: lone surrogates as escapes, so the report prints."""
    return key.encode("utf-8", "backslashreplace").decode("utf-8") if not key.isascii() else key


def json_problems(msg: Mapping[str, Any]) -> list[Problem]:
    """Values JSON cannot carry (sets, bytes, NaN, non-string keys, nesting deeper than
    the writer allows, loops) anywhere in ``msg``.

    The validator checks JSON-shaped data; a message built in Python could still hold
    values a serialiser would refuse or silently change, so makers and writers ask this.
    """
    found: list[Problem] = []
    # (where, value, number of arrays/objects around the value, the message included)
    stack: list[tuple[str, object, int]] = []
    for key, value in msg.items():
        if not isinstance(key, str):
            found.append(Problem("VLP102", f"the message has key {key!r}; JSON keys are strings"))
            continue
        if not key.isascii() and _LONE_SURROGATE.search(key):
            found.append(Problem("VLP102", f"a field name holds a lone surrogate, {_NOT_TEXT}"))
        stack.append((_shown_key(key), value, 1))
    while stack:
        where, value, depth = stack.pop()
        if isinstance(value, str):
            if not value.isascii() and _LONE_SURROGATE.search(value):
                found.append(Problem("VLP102", f"'{where}' holds a lone surrogate, {_NOT_TEXT}"))
            continue
        if value is None or isinstance(value, (bool, int)):
            continue
        if isinstance(value, float):
            if not math.isfinite(value):
                found.append(Problem("VLP102", f"'{where}' is {value!r}, which JSON cannot hold"))
        elif isinstance(value, (list, dict)) and depth >= _MAX_DEPTH:
            found.append(Problem("VLP102", f"'{where}' is nested too deeply (or loops)"))
        elif isinstance(value, list):
            stack.extend((f"{where}[{i}]", item, depth + 1) for i, item in enumerate(value))
        elif isinstance(value, dict):
            for key, item in value.items():
                if isinstance(key, str):
                    stack.append((f"{where}.{_shown_key(key)}", item, depth + 1))
                    if not key.isascii() and _LONE_SURROGATE.search(key):
                        found.append(
                            Problem(
                                "VLP102", f"'{where}' has a key with a lone surrogate, {_NOT_TEXT}"
                            )
                        )
                else:
                    found.append(
                        Problem("VLP102", f"'{where}' has key {key!r}; JSON keys are strings")
                    )
        else:
            found.append(
                Problem(
                    "VLP102", f"'{where}' holds a {type(value).__name__}, which JSON cannot hold"
                )
            )
    return found


def message_problems(msg: object) -> list[Problem]:
    """Every schema and truth-serum problem of one message (empty when it is valid), and
    every value JSON cannot carry (see :func:`json_problems`): the same verdict as
    :meth:`vlp.Message.from_dict` and every writer."""
    found = [] if is_surely_valid(msg) else (check_message(msg) or [])
    if isinstance(msg, dict):
        found += json_problems(msg)
    return found


def is_valid(msg: object) -> bool:
    """True when ``msg`` is a valid VLP/1.1 message."""
    return not message_problems(msg)


def validate_vlp(msg: object) -> tuple[bool, str | None]:
    """``(True, None)`` for a valid message, else ``(False, "CODE reason; ...")``."""
    found = message_problems(msg)
    if not found:
        return True, None
    return False, "; ".join(str(problem) for problem in found)

"""Keys written twice in one JSON object, found where they are.

JSON parsers keep one value of a repeated key — most the last, some the first — so a
message with two ``safety`` keys (or two ``level`` keys in its safety object) means
different things to different readers. orjson and msgspec keep the last silently; this
module finds every repetition with its position and every value given, for the texts a
cheap scan in C flags (:func:`vlp._keyscan.may_repeat_keys`): the exact walk is slow, the scan is not.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import orjson

_WHITESPACE = " \t\r\n"
_VALUE = json.JSONDecoder()
_scan_string = json.decoder.scanstring  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class DuplicateKey:
    """A key given more than once in one object: ``path`` names it (``safety.level``,
    ``provenance[1].ref``), ``position`` is where its last repetition starts in the text
    and ``first`` where its first occurrence does, ``values`` every value, in order."""

    path: str
    position: int
    first: int
    values: tuple[Any, ...]


def find_duplicate_keys(text: str, start: int = 0) -> list[DuplicateKey]:
    """Every repeated key of the JSON value starting at ``start`` of ``text`` (after
    whitespace), in text order. Text that is not JSON gives what was found before the
    error: the caller has parsed it already."""
    found: list[DuplicateKey] = []
    try:
        _walk(text, _skip(text, start), "", found)
    except (ValueError, IndexError, RecursionError):
        pass
    return sorted(found, key=lambda duplicate: duplicate.position)


def _skip(text: str, position: int) -> int:
    while position < len(text) and text[position] in _WHITESPACE:
        position += 1
    return position


def _walk(text: str, position: int, path: str, found: list[DuplicateKey]) -> int:
    """Walk the value at ``position``; returns where it ends."""
    opening = text[position]
    if opening == "{":
        return _walk_object(text, position, path, found)
    if opening == "[":
        position = _skip(text, position + 1)
        index = 0
        if text[position] == "]":
            return position + 1
        while True:
            position = _skip(text, _walk(text, position, f"{path}[{index}]", found))
            index += 1
            if text[position] == "]":
                return position + 1
            position = _skip(text, position + 1)  # the comma
    return _VALUE.raw_decode(text, position)[1]


def _walk_object(text: str, position: int, path: str, found: list[DuplicateKey]) -> int:
    seen: dict[str, list[tuple[int, int, int]]] = {}  # key -> (key at, value at, value end)
    position = _skip(text, position + 1)
    if text[position] == "}":
        return position + 1
    while True:
        key_at = position
        key, position = _scan_string(text, position + 1)
        position = _skip(text, _skip(text, position) + 1)  # past the colon
        name = f"{path}.{key}" if path else key
        end = _walk(text, position, name, found)
        seen.setdefault(key, []).append((key_at, position, end))
        position = _skip(text, end)
        if text[position] == "}":
            break
        position = _skip(text, position + 1)
    for key, places in seen.items():
        if len(places) > 1:
            values = tuple(_VALUE.raw_decode(text, at)[0] for _, at, _ in places)
            name = f"{path}.{key}" if path else key
            found.append(DuplicateKey(name, places[-1][0], places[0][0], values))
    return position + 1


def describe(duplicate: DuplicateKey, first_at: str, at: str) -> str:
    """The problem's text: what is repeated, where (``first_at``, ``at``: "column 12"),
    and what to do."""
    shown = ", ".join(_shown(value) for value in duplicate.values)
    count = len(duplicate.values)
    where = f"{first_at}, then {at}" if count == 2 else f"first at {first_at}, last at {at}"
    return (
        f"key '{duplicate.path}' is given {count} times ({where}; values {shown}): JSON "
        "readers disagree on which one counts (most take the last, some the first); keep one"
    )


def _shown(value: Any) -> str:
    text = orjson.dumps(value).decode()
    return text if len(text) <= 40 else text[:37] + "..."

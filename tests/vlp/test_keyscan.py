"""The C key scan (src/vlp/_keyscan.c) against a plain reference written here, on JSON and
on hostile bytes: it must agree everywhere, never read out of bounds, and never miss a
repeated key. At the end, the module's line splitter against ``bytes.split``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from vlp._keyscan import lines_repeating_keys, may_repeat_keys, split_lines

MAX_DEPTH = 128
MAX_OBJECT_KEYS = 64
MAX_OPEN_KEYS = 512


def reference(data: bytes) -> bool:
    """The scan as specified, one byte at a time: a string after '{' or ',' in an object
    is a key; a key met twice in its object, an escaped key, too many keys or containers,
    an unterminated string or a stray closer answer True."""
    open_: list[tuple[bool, list[bytes]]] = []  # (is an object, its keys so far)
    expect_key: list[bool] = []
    keys_open = 0
    at = 0
    while at < len(data):
        byte = data[at : at + 1]
        if byte == b'"':
            end = at + 1
            while end < len(data) and data[end : end + 1] != b'"':
                end += 2 if data[end : end + 1] == b"\\" else 1
            if end >= len(data):
                return True
            if open_ and expect_key[-1]:
                expect_key[-1] = False
                key, keys = data[at + 1 : end], open_[-1][1]
                if b"\\" in key or len(keys) >= MAX_OBJECT_KEYS or keys_open >= MAX_OPEN_KEYS:
                    return True
                if key in keys:
                    return True
                keys.append(key)
                keys_open += 1
            at = end + 1
            continue
        if byte in (b"{", b"["):
            if len(open_) == MAX_DEPTH:
                return True
            open_.append((byte == b"{", []))
            expect_key.append(byte == b"{")
        elif byte in (b"}", b"]"):
            if not open_:
                return True
            keys_open -= len(open_.pop()[1])
            expect_key.pop()
        elif byte == b"," and open_ and open_[-1][0]:
            expect_key[-1] = True
        at += 1
    return False


# Bytes that steer the scan, mixed with ones that must not: NUL, invalid UTF-8, spaces.
_HOSTILE = st.lists(
    st.sampled_from(
        [
            b"{",
            b"}",
            b"[",
            b"]",
            b'"',
            b"\\",
            b",",
            b":",
            b"a",
            b"b",
            b" ",
            b"\x00",
            b"\xff",
            b"\xc3",
            b'"a"',
            b'"\\"',
            b'\\"',
            b"\\\\",
            b"1",
        ]
    ),
    max_size=80,
).map(b"".join)


@settings(max_examples=1500, deadline=None)
@given(st.one_of(_HOSTILE, st.binary(max_size=200)))
@example(b'"')  # unterminated
@example(b'"abc\\')  # a backslash as the last byte
@example(b'{"a\\"b":1}')
@example(b'{"a":1,"a\\\\":2}')
@example(b"}")
@example(b"\x00{\x00}")
@example(b'{"\xff":1,"\xff":2}')
def test_the_scan_agrees_with_the_reference_on_any_bytes(data: bytes) -> None:
    assert may_repeat_keys(data) is reference(data)
    assert may_repeat_keys(bytearray(data)) is reference(data)
    assert may_repeat_keys(memoryview(data)) is reference(data)


_KEYS = st.sampled_from(["a", "b", "ab", "é", ":", '"', "\\", "\x00", "{", ","])
_JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=6)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(st.tuples(_KEYS, inner), max_size=5),
    ),
    max_leaves=20,
)


def _written(value: Any, ascii_only: bool) -> str:
    """JSON text of ``value``, lists of pairs written as objects (keys may repeat)."""
    if isinstance(value, list) and value and all(isinstance(v, tuple) for v in value):
        pairs = (
            f"{json.dumps(k, ensure_ascii=ascii_only)}:{_written(v, ascii_only)}" for k, v in value
        )
        return "{" + ",".join(pairs) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_written(v, ascii_only) for v in value) + "]"
    return json.dumps(value, ensure_ascii=ascii_only)


def _repeats(value: Any) -> bool:
    if isinstance(value, list) and value and all(isinstance(v, tuple) for v in value):
        keys = [k for k, _ in value]
        return len(keys) != len(set(keys)) or any(_repeats(v) for _, v in value)
    if isinstance(value, list):
        return any(_repeats(v) for v in value)
    return False


@settings(max_examples=800, deadline=None)
@given(_JSON, st.booleans())
@example([("a", 1), ("\\", 2)], False)
@example([("a", [("b", 1), ("b", 2)])], True)
def test_on_json_the_scan_never_misses_a_repeated_key(value: Any, ascii_only: bool) -> None:
    """On JSON: a repeated key is always flagged; a text without one is flagged only for
    a key holding an escape (written ``\\"``, ``\\\\``, ``\\u....``)."""
    text = _written(value, ascii_only)
    data = text.encode()
    flagged = may_repeat_keys(data)
    assert flagged is reference(data)
    if _repeats(value):
        assert flagged
    elif flagged:
        escaped = any(
            json.dumps(key, ensure_ascii=ascii_only) != f'"{key}"' for key in _all_keys(value)
        )
        assert escaped


def _all_keys(value: Any) -> list[str]:
    if isinstance(value, list) and value and all(isinstance(v, tuple) for v in value):
        return [k for k, _ in value] + [key for _, v in value for key in _all_keys(v)]
    if isinstance(value, list):
        return [key for v in value for key in _all_keys(v)]
    return []


def test_the_limits_answer_may_repeat_and_stay_in_bounds() -> None:
    distinct = ",".join(f'"k{index}":{index}' for index in range(MAX_OBJECT_KEYS))
    assert may_repeat_keys(("{" + distinct + "}").encode()) is False
    assert may_repeat_keys(("{" + distinct + ',"more":1}').encode()) is True
    assert may_repeat_keys(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH) is False
    assert may_repeat_keys(b"[" * (MAX_DEPTH + 1)) is True
    assert may_repeat_keys(b"[" * 1_000_000) is True
    assert may_repeat_keys(b'{"a":' * 1_000_000) is True
    assert may_repeat_keys(b'"' + b"\\" * 1_000_001) is True  # escapes to the end
    assert may_repeat_keys(b"") is False


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_HOSTILE, st.binary(max_size=40)), max_size=20))
def test_lines_flags_exactly_the_lines_that_may_repeat(lines: list[bytes]) -> None:
    assert lines_repeating_keys(lines) == [i for i, line in enumerate(lines) if reference(line)]


@pytest.mark.parametrize("bad", [(b"{}",), [b"{}", "{}"], [bytearray(b"{}")], None])
def test_lines_takes_a_list_of_bytes_only(bad: Any) -> None:
    with pytest.raises(TypeError, match="list of bytes"):
        lines_repeating_keys(bad)


def test_may_repeat_keys_takes_bytes_like_only() -> None:
    with pytest.raises(TypeError):
        may_repeat_keys("{}")  # type: ignore[arg-type]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from([b"\n", b"\r", b"\x00", b"{}", b"\xff", b" "])).map(b"".join))
@example(b"")
@example(b"\n")
@example(b"\n\n")
@example(b"{}\n{}")
def test_split_lines_cuts_exactly_where_bytes_split_does(data: bytes) -> None:
    pieces = split_lines(data)
    assert pieces == data.split(b"\n")
    assert all(type(piece) is bytes for piece in pieces)
    assert split_lines(bytearray(data)) == split_lines(memoryview(data)) == pieces


def test_split_lines_takes_bytes_like_only() -> None:
    with pytest.raises(TypeError):
        split_lines("{}\n{}")  # type: ignore[arg-type]


def test_split_lines_gives_bytes_without_a_newline_back_uncopied() -> None:
    data = b"{}" * 1000
    assert split_lines(data)[0] is data  # a chunk inside one long line costs no copy
    assert split_lines(bytearray(data)) == [data]

"""The C table of byte strings (src/vlp/_keytable.c) against a plain dict written here: any
keys (random bytes, str with escapes, surrogates and NUL, huge ones), any order of inserts,
batches, lookups and truncations; exact (equal bytes only), atomic batches, bounded memory."""

from __future__ import annotations

import pickle
import tracemalloc
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from vlp._keytable import KeyTable

INT64 = st.integers(-(2**63), 2**63 - 1)
# Few distinct bytes, so that keys repeat, share prefixes and differ by one byte; and any.
_BYTES = st.one_of(
    st.lists(
        st.sampled_from([b"", b"a", b"b", b"\x00", b"\xff", b"\\", b'"', b"\xed\xa0\x80"]),
        max_size=4,
    ).map(b"".join),
    st.binary(max_size=40),
)
_PIECES = ["a", "b", "é", "\x00", "\\", '"', "\\u0061", "\ud800", "\U0001f600"]
_TEXT = st.one_of(
    st.lists(st.sampled_from(_PIECES), max_size=4).map("".join),
    st.text(st.characters(exclude_categories=()), max_size=20),  # surrogates too
)
KEYS = st.one_of(_BYTES, _TEXT)


def as_bytes(key: str | bytes) -> bytes:
    """What the table keys on: the bytes, a str's UTF-8 (lone surrogates as surrogatepass)."""
    return key if isinstance(key, bytes) else key.encode("utf-8", "surrogatepass")


class Reference:
    """The table as specified: a dict of bytes in insertion order."""

    def __init__(self) -> None:
        self.values: dict[bytes, int] = {}

    def add_all(self, keys: list[str | bytes], values: list[int]) -> bool:
        fresh = [as_bytes(key) for key in keys]
        if len(set(fresh)) < len(fresh) or any(key in self.values for key in fresh):
            return False
        self.values.update(zip(fresh, values))
        return True

    def truncate(self, length: int) -> None:
        self.values = dict(list(self.values.items())[:length])


class AgainstTheReference(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.table = KeyTable()
        self.reference = Reference()

    @initialize(key=KEYS, value=INT64)
    def start(self, key: str | bytes, value: int) -> None:
        self.table[key] = value
        self.reference.values[as_bytes(key)] = value

    @rule(key=KEYS, value=INT64)
    def set(self, key: str | bytes, value: int) -> None:
        self.table[key] = value
        self.reference.values[as_bytes(key)] = value

    @rule(keys=st.lists(KEYS, max_size=40), data=st.data())
    def add_all(self, keys: list[str | bytes], data: st.DataObject) -> None:
        values = data.draw(st.lists(INT64, min_size=len(keys), max_size=len(keys)))
        assert self.table.add_all(keys, values) is self.reference.add_all(keys, values)

    @rule(keys=st.lists(KEYS, max_size=40))
    def get_all(self, keys: list[str | bytes]) -> None:
        absent = object()
        expected = [self.reference.values.get(as_bytes(key), absent) for key in keys]
        assert self.table.get_all(keys, absent) == expected

    @rule(key=KEYS)
    def lookups(self, key: str | bytes) -> None:
        expected = self.reference.values.get(as_bytes(key))
        assert self.table.get(key) == expected
        assert self.table.get(key, "absent") == ("absent" if expected is None else expected)
        assert (key in self.table) is (expected is not None)
        if expected is None:
            with pytest.raises(KeyError):
                self.table[key]
        else:
            assert self.table[key] == expected

    @rule(data=st.data())
    def truncate(self, data: st.DataObject) -> None:
        length = data.draw(st.integers(0, len(self.reference.values)))
        self.table.truncate(length)
        self.reference.truncate(length)

    @invariant()
    def same_keys(self) -> None:
        assert len(self.table) == len(self.reference.values)
        stored = list(self.reference.values)
        assert self.table.get_all(stored, None) == list(self.reference.values.values())


AgainstTheReference.TestCase.settings = settings(
    max_examples=300, stateful_step_count=40, deadline=None
)
test_the_table_agrees_with_a_dict = AgainstTheReference.TestCase


@settings(max_examples=300, deadline=None)
@given(st.lists(KEYS, max_size=300), st.integers(0, 300))
@example([b"a", "a", b"\xc3\xa9", "é", b"\xed\xa0\x80", "\ud800", b"", ""], 3)
@example(["x"] * 3, 0)
def test_batches_and_truncation_through_many_resizes(keys: list[str | bytes], cut: int) -> None:
    """Keys added one batch at a time from an empty table (it starts with 8 slots, so it
    resizes), then the latest forgotten: the table equals the reference at each step."""
    table, reference = KeyTable(), Reference()
    for start in range(0, len(keys), 7):
        batch = keys[start : start + 7]
        values = list(range(start, start + len(batch)))
        assert table.add_all(batch, values) is reference.add_all(batch, values)
    assert len(table) == len(reference.values)
    assert table.get_all(keys, -1) == [reference.values.get(as_bytes(k), -1) for k in keys]
    length = min(cut, len(table))
    table.truncate(length)
    reference.truncate(length)
    assert table.get_all(keys, -1) == [reference.values.get(as_bytes(k), -1) for k in keys]
    assert table.add_all(list(reference.values), [0] * length) is (length == 0)


def test_a_str_is_its_utf8_and_equal_bytes_are_one_key() -> None:
    table = KeyTable()
    table["é"] = 1
    assert table[b"\xc3\xa9"] == 1 and "e" not in table and b"\xe9" not in table
    table["\ud800"] = 2  # a lone surrogate: what surrogatepass writes
    assert table[b"\xed\xa0\x80"] == 2 and len(table) == 2
    table[b"\xc3\xa9"] = 3  # the same key: its value replaced
    assert table["é"] == 3 and len(table) == 2


def test_huge_keys_and_many_keys() -> None:
    table = KeyTable()
    big = b"\\" * (1 << 22)
    table[big] = 1
    assert table[big] == 1 and big[:-1] not in table and big + b"\\" not in table
    keys = [f"MSG{number:08d}" for number in range(200_000)]
    assert table.add_all(keys, range(200_000))
    assert table.get_all(keys[::997], None) == list(range(200_000))[::997]
    assert table.add_all(["fresh", keys[-1]], [0, 0]) is False and "fresh" not in table
    table.truncate(1)
    assert len(table) == 1 and table.get_all(keys[::997], None) == [None] * len(keys[::997])
    assert table[big] == 1


def test_memory_is_bounded_by_the_keys() -> None:
    """32 bytes an entry (room for at most twice the keys), 8 a slot (at most 4 slots a
    key), the bytes at most twice: under 130 bytes an 11-byte key (a dict of str keys and
    int values: ~120, in objects all over the heap)."""
    keys = [f"MSG{number:08d}" for number in range(100_000)]
    tracemalloc.start()
    try:
        table = KeyTable()
        for start in range(0, len(keys), 256):
            batch = keys[start : start + 256]
            table.add_all(batch, range(start, start + len(batch)))
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(table) == 100_000
    assert held < 130 * 100_000


@pytest.mark.parametrize(
    ("keys", "values", "error"),
    [
        (["a", 1], [1, 2], TypeError),  # a key neither str nor bytes
        (["a", ["b"]], [1, 2], TypeError),  # a list (an unhashable reference)
        (["a", "b"], [1, "2"], TypeError),
        (["a", "b"], [1, 1.0], TypeError),
        (["a", "b"], [1, 2**63], OverflowError),
        (["a", "b"], [1, -(2**63) - 1], OverflowError),
        (["a", "b"], [1], ValueError),
    ],
)
def test_a_batch_that_fails_adds_nothing(keys: list[Any], values: list[Any], error: type) -> None:
    table = KeyTable()
    table["z"] = 0
    with pytest.raises(error):
        table.add_all(keys, values)
    assert len(table) == 1 and "a" not in table and table["z"] == 0


def test_wrong_arguments_and_what_the_table_does_not_do() -> None:
    table = KeyTable()
    table["a"] = 2**63 - 1
    assert table["a"] == 2**63 - 1
    table["a"] = -(2**63)
    assert table["a"] == -(2**63)
    with pytest.raises(OverflowError):
        table["a"] = 2**63
    with pytest.raises(TypeError):
        table[1] = 1  # type: ignore[index]
    with pytest.raises(TypeError):
        table["b"] = True and 1.5  # type: ignore[assignment]
    with pytest.raises(TypeError):
        del table["a"]  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        table.get_all(["a", None], 0)
    with pytest.raises(TypeError):
        table.get()  # type: ignore[call-overload]
    with pytest.raises(TypeError):
        table.add_all(["a"])  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        KeyTable(1)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        pickle.dumps(table)
    for length in (-1, 2):
        with pytest.raises(ValueError):
            table.truncate(length)
    assert len(table) == 1 and table.get_all(iter(["a", "b"]), 0) == [-(2**63), 0]

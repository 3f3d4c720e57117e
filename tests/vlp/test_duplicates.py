"""Keys given twice in one object (VLP005): found on every reading path, located, and
never silently resolved by `vlp gate`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.vlp.conftest import base
from vlp._keyscan import may_repeat_keys
from vlp.cli import main
from vlp.duplicates import find_duplicate_keys
from vlp.errors import Problem
from vlp.ndjson import read_records, scan
from vlp.thread import ThreadChecker

TWO_SAFETIES = (
    b'{"id":"M1","protocol":"VLP/1.1","type":"notice","timestamp":"2025-12-14T10:30:00Z",'
    b'"sender":"Op","content":"x","confidence":0.5,'
    b'"safety":{"level":"block"},"safety":{"level":"safe"}}'
)
TWO_LEVELS = TWO_SAFETIES.replace(
    b'"safety":{"level":"block"},"safety":{"level":"safe"}',
    b'"safety":{"level":"block","level":"safe"}',
)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_validate_reports_the_key_both_columns_and_the_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.ndjson"
    path.write_bytes(orjson.dumps(base()) + b"\n" + TWO_SAFETIES + b"\n" + TWO_LEVELS + b"\n")
    code, out = run(capsys, "validate", str(path))
    assert code == 1
    lines = out.splitlines()
    first, second = TWO_SAFETIES.index(b'"safety"') + 1, TWO_SAFETIES.rindex(b'"safety"') + 1
    assert lines[0] == (
        f"{path}:2: VLP005 key 'safety' is given 2 times (column {first}, then column "
        f'{second}; values {{"level":"block"}}, {{"level":"safe"}}): JSON readers disagree '
        "on which one counts (most take the last, some the first); keep one"
    )
    assert lines[1].startswith(f"{path}:3: VLP005 key 'safety.level' is given 2 times")
    assert lines[-1] == "INVALID: 3 message(s), 1 valid, 2 problem(s) in 1 file(s)"


@pytest.mark.parametrize("line", [TWO_SAFETIES, TWO_LEVELS])
def test_gate_halts_when_any_value_says_block(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: bytes
) -> None:
    """The parsed message says safe (the last value); another reader would see block."""
    path = tmp_path / "t.ndjson"
    path.write_bytes(line + b"\n" + orjson.dumps(base(id="M2")) + b"\n")
    code, out = run(capsys, "gate", str(path))
    assert code == 4, out
    assert "halt: M1 (line 1): safety.level is block in one of the values" in out
    assert "halted: M1, M2" in out


def test_gate_holds_a_message_repeating_any_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.ndjson"
    path.write_bytes(orjson.dumps(base())[:-1] + b',"confidence":0.5}\n')
    code, out = run(capsys, "gate", str(path))
    assert code == 3, out
    assert "key 'confidence' is given 2 times" in out


def test_show_says_which_value_it_shows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t.ndjson"
    path.write_bytes(TWO_SAFETIES + b"\n")
    _, out = run(capsys, "show", str(path))
    assert f"{path}:1: VLP005 key 'safety' is given twice; shown: the last value" in out


def test_a_pretty_printed_document_names_lines_and_the_array_element(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    message = json.loads(TWO_SAFETIES)  # the last value; written back with a repetition
    text = json.dumps([base(), message], indent=2).replace(
        '"safety": {', '"safety": {"level": "block"},\n    "safety": {'
    )
    path = tmp_path / "t.json"
    path.write_text(text)
    code, out = run(capsys, "validate", str(path))
    assert code == 1
    second = text[: text.rindex('"safety"')].count("\n") + 1
    assert f"{path}:{second}: VLP005 element [1]: key 'safety' is given 2 times (line " in out


def test_the_same_value_twice_is_reported_too(tmp_path: Path) -> None:
    line = orjson.dumps(base())[:-1] + b',"sender":"Operator"}'
    assert json.loads(line)["sender"] == "Operator"
    found: list[Problem] = []
    scan(tmp_path.joinpath("x").write_bytes(line) and tmp_path / "x", found.append)
    assert [p.code for p in found] == ["VLP005"]


# A key repeated somewhere in a valid message: top level, nested objects, array items.
PLACES = st.sampled_from(
    [
        ("top", "sender", '"Other"'),
        ("top", "confidence", "0.1"),
        ("top", "safety", '{"level":"review"}'),
        ("safety", "level", '"block"'),
        ("issue", "code", '"x"'),
        ("provenance", "ref", '"r2"'),
        ("content", "n", "2"),
    ]
)


def _with_repeat(place: str, key: str, value: str, spaced: bool) -> bytes:
    msg: dict[str, Any] = base(
        safety={"level": "safe", "issues": [{"code": "c"}]},
        provenance=[{"ref": "r"}],
    )
    if place == "content":
        msg["content"] = {"n": 1}
    text = json.dumps(msg) if spaced else orjson.dumps(msg).decode()
    colon = ": " if spaced else ":"
    anchor = {
        "top": "{",
        "safety": '"safety"' + colon + "{",
        "issue": '"issues"' + colon + "[{",
        "provenance": '"provenance"' + colon + "[{",
        "content": '"content"' + colon + "{",
    }[place]
    at = text.index(anchor) + len(anchor)
    return (text[:at] + f'"{key}"{colon}{value}, ' + text[at:]).encode()


@settings(max_examples=60, deadline=None)
@given(place=PLACES, spaced=st.booleans(), padding=st.integers(0, 700))
def test_every_repetition_is_found_on_every_path(
    tmp_path_factory: pytest.TempPathFactory,
    place: tuple[str, str, str],
    spaced: bool,
    padding: int,
) -> None:
    """Among valid lines (a whole batch of them, so the batch count is exercised), the
    line with the repetition, and only it, gets VLP005 from `scan` (the fast path) and
    from `read_records` (the dict path)."""
    line = _with_repeat(*place, spaced)
    assert find_duplicate_keys(line.decode())
    before = [orjson.dumps(base(id=f"B{i}", content="a:b\\c")) for i in range(padding)]
    after = [orjson.dumps(base(id=f"A{i}", content="a:b\\c")) for i in range(padding)]
    path = tmp_path_factory.mktemp("d") / "t.ndjson"
    path.write_bytes(b"\n".join([*before, line, *after]) + b"\n")
    for thread in (None, ThreadChecker()):
        found: list[Problem] = []
        scan(path, found.append, thread=thread)
        assert [(p.code, p.line) for p in found] == [("VLP005", padding + 1)]
    records = [r for r in read_records(path) if r.problems]
    assert [(r.line, [p.code for p in r.problems]) for r in records] == [(padding + 1, ["VLP005"])]
    assert records[0].duplicates[0].path.endswith(place[1])


_JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.lists(st.tuples(st.sampled_from(["a", "b", "é", ":"]), inner), max_size=4),
    ),
    max_leaves=12,
)


def _written(value: Any) -> str:
    """JSON text of ``value``, lists of pairs written as objects (keys may repeat)."""
    if isinstance(value, list) and value and all(isinstance(v, tuple) for v in value):
        return "{" + ", ".join(f"{json.dumps(k)}: {_written(v)}" for k, v in value) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_written(v) for v in value) + "]"
    return json.dumps(value)


def _repeats(value: Any) -> int:
    if isinstance(value, list) and value and all(isinstance(v, tuple) for v in value):
        keys = [k for k, _ in value]
        return len(keys) - len(set(keys)) + sum(_repeats(v) for _, v in value)
    if isinstance(value, list):
        return sum(_repeats(v) for v in value)
    return 0


@settings(max_examples=300, deadline=None)
@given(_JSON, st.integers(0, 3))
def test_the_walk_finds_every_repetition_and_the_scan_flags_it(value: Any, pad: int) -> None:
    """Over any JSON (objects with repeated keys, escapes, colons in strings), the exact
    walk finds each key given more than once in its object, and the cheap key scan never
    misses a text that has one."""
    text = " " * pad + _written(value)
    found = find_duplicate_keys(text)
    repeated_keys = sum(len(d.values) - 1 for d in found)
    assert repeated_keys == _repeats(value)
    assert may_repeat_keys(text.encode()) or not found


@pytest.mark.parametrize(
    ("text", "may_repeat"),
    [
        (b'{"a:b":1,"a":2,"b":"a"}', False),  # colons and keys inside strings are not keys
        (b'{"a":{"a":1},"b":[{"a":1},{"a":2}]}', False),  # the same key in other objects
        (b'{"a":1,"a":2}', True),
        (b'{"a":{"b":1,"b":2}}', True),
        (b'{"a":1,"\\u0061":2}', True),  # an escaped key: the exact walk decides (it is "a")
        (b'{"\\"":1,"\\"":2}', True),
    ],
)
def test_the_key_scan_flags_what_may_repeat(text: bytes, may_repeat: bool) -> None:
    assert may_repeat_keys(text) is may_repeat
    assert bool(find_duplicate_keys(text.decode())) is may_repeat

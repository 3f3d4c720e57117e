"""The shortcuts of the hot path never change a verdict or a report."""

from __future__ import annotations

import io
import subprocess
import sys
from typing import Any

import msgspec
import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.fuzz.mutations import corpus, mutated
from tests.vlp.conftest import base, json_values, messages, timestamps
from tests.vlp.test_agreement import corpus as agreement_corpus
from vlp import Problem, read_records, scan
from vlp import validate as validate_module
from vlp._keyscan import may_repeat_keys
from vlp.fastpath import (
    SchemaNotCompiled,
    _decode_open,
    _decode_plain,
    _long_number,
    compile_schema,
    decode_lines,
    is_surely_valid_line,
)
from vlp.schema import TIMESTAMP_PATTERN, load_schema
from vlp.validate import bad_timestamps, check_message, is_surely_valid


def wire(msg: Any) -> Any:
    return orjson.loads(orjson.dumps(msg))


# Stamps that share minutes, so that the fast path meets minutes it has learnt.
minutes = st.sampled_from(
    [
        "2025-12-14T10:30",
        "2024-02-29T23:59",
        "2023-02-29T10:30",
        "2025-04-31T00:00",
        "2025-12-31T23:58",
    ]
)
tails = st.sampled_from(
    [":00Z", ":59Z", ":60Z", ":61Z", ":7Z", ":00.5Z", ":00z", ":00Z\n", ":0aZ", "", ":00"]
)


@settings(max_examples=300)
@given(st.lists(st.tuples(minutes, tails), min_size=1, max_size=8))
def test_learnt_minutes_never_admit_an_invalid_timestamp(stamps: list[tuple[str, str]]) -> None:
    for minute, tail in stamps:
        stamp = minute + tail
        msg = base(timestamp=stamp)
        assert is_surely_valid(msg) == bool(TIMESTAMP_PATTERN.match(stamp)), stamp
        assert (check_message(msg) is None) == bool(TIMESTAMP_PATTERN.match(stamp)), stamp


def test_a_learnt_minute_still_checks_the_seconds() -> None:
    assert is_surely_valid(base(timestamp="2025-12-14T10:30:00Z"))
    assert not is_surely_valid(base(timestamp="2025-12-14T10:30:60Z"))  # not a leap second
    assert is_surely_valid(base(timestamp="2025-12-31T23:59:00Z"))
    assert is_surely_valid(base(timestamp="2025-12-31T23:59:60Z"))  # leap second
    for stamp in ("2025-12-14T10:30:61Z", "2025-12-14T10:30:6Z", "2025-12-14T10:30:00Z "):
        assert not is_surely_valid(base(timestamp=stamp))
        assert [p.code for p in check_message(base(timestamp=stamp)) or []] == ["VLP107"]


def test_the_minute_cache_stays_bounded() -> None:
    for hour in range(24):
        for minute in range(60):
            assert is_surely_valid(base(timestamp=f"2025-12-14T{hour:02d}:{minute:02d}:00Z"))
    assert len(validate_module._known_minutes) <= validate_module._MINUTES_KEPT


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(messages())
def test_fast_path_agrees_with_the_full_validator(msg: dict[str, Any]) -> None:
    msg = wire(msg)
    for _ in range(2):  # the second time with whatever the first one taught the caches
        assert not is_surely_valid(msg) or check_message(msg) is None


def test_located_problems_carry_line_and_id() -> None:
    problems = check_message(base(id="M7", confidence=-1), 12)
    assert problems == [Problem("VLP108", "'confidence' must be between 0 and 1, got -1", 12, "M7")]
    assert check_message([1], 3) == [
        Problem("VLP002", "a message must be a JSON object, got an array", 3, None)
    ]
    assert check_message(base(id=5), 4) == [
        Problem("VLP102", "'id' must be a string, got a number", 4, None)
    ]


lines = st.one_of(
    st.builds(lambda m: orjson.dumps(wire(m)), messages()),
    st.just(orjson.dumps(base())),
    st.sampled_from([b"", b"{bad", b"[1]", b"  ", b'"text"']),
)


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(lines, max_size=40), st.integers(1, 200))
def test_scan_reports_like_the_record_reader_with_and_without_on_message(
    body: list[bytes], chunk: int
) -> None:
    data = b"\n".join(body) + b"\n"
    expected = [p for r in read_records(io.BytesIO(data), chunk_bytes=chunk) for p in r.problems]
    alone: list[Problem] = []
    summary = scan(io.BytesIO(data), alone.append, chunk_bytes=chunk)
    beside: list[Problem] = []
    seen: list[int] = []
    again = scan(io.BytesIO(data), beside.append, lambda m, n: seen.append(n), chunk_bytes=chunk)
    assert alone == beside == expected  # same problems, in line order
    assert summary == again
    assert summary.valid == len(seen) and seen == sorted(seen)


def line_verdict(line: bytes) -> bool:
    """The reference verdict on a line: orjson parses it and the explaining validator
    finds nothing wrong."""
    try:
        msg = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return check_message(msg) is None


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(messages())
def test_the_line_check_only_accepts_what_orjson_and_the_validator_accept(
    msg: dict[str, Any],
) -> None:
    line = orjson.dumps(wire(msg))
    if is_surely_valid_line(line):
        assert line_verdict(line)


def test_the_line_check_accepts_the_common_messages() -> None:
    # Otherwise the fast path would be sound but useless.
    common = [
        base(),
        base(type="evidence", refers_to="M1", provenance=["db"], seq=3, session_id="S"),
        base(type="query", confidence=1.0, receiver="Ops", keywords=["a"], topic="t"),
        base(confidence=0.95, safety={"level": "review", "issues": [{"code": "C"}]}),
        base(type="response", refers_to=["M1", "M2"], constraints=["x"]),
    ]
    for msg in common:
        assert check_message(msg) is None
        assert is_surely_valid_line(orjson.dumps(msg)), msg


CLAIM = orjson.dumps(base(content="c"))
BORDER_LINES = [
    # msgspec keeps a 400-digit integer; orjson, our parser of record, rejects it.
    CLAIM[:-1] + b',"extra":1' + b"0" * 400 + b"}",
    CLAIM.replace(b'"c"', b'{"n":1' + b"0" * 400 + b"}"),
    # Duplicate keys: the last one counts, as for orjson (0.95 without provenance: VLP204).
    CLAIM[:-1] + b',"confidence":0.95}',
    CLAIM.replace(b'"c"', b'"\\ud800"'),  # lone surrogate
    CLAIM.replace(b'"c"', b'"\xff"'),  # not UTF-8
    CLAIM[:-1] + b',"seq":3.0}',  # integral float: the schema's integer, not msgspec's
    CLAIM[:-1] + b',"seq":18446744073709551616}',  # 2**64
    orjson.dumps(base(confidence=1)),
    orjson.dumps(base(confidence=True)),
    orjson.dumps(base(safety={"level": "review", "issues": [{"code": "C", "extra": 1}]})),
    orjson.dumps(base(provenance=[{"ref": "db"}])),
    CLAIM[:-1] + b',"receiver":null}',
    orjson.dumps(base(timestamp="2025-02-29T10:30:00Z")),
    CLAIM + b"  \r",
]


def test_border_lines_get_the_reference_verdict_from_scan() -> None:
    for line in BORDER_LINES:
        expected = line_verdict(line)
        assert not is_surely_valid_line(line) or expected, line
        problems: list[Problem] = []
        summary = scan(io.BytesIO(line + b"\n"), problems.append)
        assert summary.valid == int(expected), line
        reference = [p for r in read_records(io.BytesIO(line + b"\n")) for p in r.problems]
        assert problems == reference, line


# --- the decoders compiled from the schema --------------------------------------------


def _schema_and_validator_accept(line: bytes, schema_validator: Any) -> bool:
    try:
        msg = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return schema_validator.is_valid(msg) and check_message(msg) is None


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(messages())
def test_what_the_compiled_decoders_accept_the_schema_accepts(
    schema_validator: Any, msg: dict[str, Any]
) -> None:
    line = orjson.dumps(msg)
    if is_surely_valid_line(line):
        assert _schema_and_validator_accept(line, schema_validator), msg


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(corpus("thread.ndjson", "thread.json")))
def test_mutated_lines_the_decoders_accept_are_valid(schema_validator: Any, data: bytes) -> None:
    for line in data.split(b"\n"):
        if is_surely_valid_line(line):
            assert _schema_and_validator_accept(line, schema_validator), line


def _has_unknown_fields(msg: dict[str, Any]) -> bool:
    """Whether the message or one of its typed objects has a field the schema does not
    name (allowed, but left to orjson: msgspec would skip its value unchecked)."""
    props = load_schema()["properties"]
    objects: list[tuple[Any, Any]] = [(msg, props)]
    for item in msg.get("provenance") or []:
        objects.append((item, props["provenance"]["items"]["oneOf"][1]["properties"]))
    safety = msg.get("safety")
    if isinstance(safety, dict):
        objects.append((safety, props["safety"]["properties"]))
        for issue in safety.get("issues") or []:
            objects.append((issue, props["safety"]["properties"]["issues"]["items"]["properties"]))
    return any(isinstance(value, dict) and set(value) - set(known) for value, known in objects)


def test_the_decoders_settle_the_valid_messages_of_the_agreement_corpus(
    schema_validator: Any,
) -> None:
    """Not uselessly careful: every valid message is settled without the dict path, but
    the shapes left to it on purpose (unknown fields, an integral float as seq, a number
    orjson reads but cannot write)."""
    valid = settled = 0
    for _, msg in agreement_corpus():
        if not schema_validator.is_valid(msg) or isinstance(msg.get("seq"), float):
            continue
        try:
            line = orjson.dumps(msg)
        except orjson.JSONEncodeError:
            continue
        if _has_unknown_fields(msg):
            continue
        valid += 1
        settled += is_surely_valid_line(line)
    assert valid > 1000 and settled == valid, (settled, valid)


@pytest.mark.parametrize(
    "field", ["content", "payload", "_extras", "x-vendor", "provenance", "safety"]
)
def test_an_integer_orjson_refuses_is_never_surely_valid(field: str) -> None:
    """msgspec reads integers of any length; orjson, our parser of record, refuses those
    beyond the double range: a line holding one anywhere is left to orjson."""
    huge = b"1" * 400
    value = {
        "content": b'{"n": ' + huge + b"}",
        "payload": b'{"n": [' + huge + b"]}",
        "_extras": b'{"n": ' + huge + b"}",
        "x-vendor": huge,
        "provenance": b'[{"ref": "r", "n": ' + huge + b"}]",
        "safety": b'{"level": "safe", "vendor": ' + huge + b"}",
    }[field]
    rest = {key: item for key, item in base().items() if key != field}
    line = orjson.dumps(rest)[:-1] + b',"' + field.encode() + b'":' + value + b"}"
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(line)
    assert not is_surely_valid_line(line)
    small = line.replace(huge, b"12345678901234567890")  # beyond 64 bits, still a double
    # Unknown fields are always left to orjson (msgspec would skip them unchecked).
    assert is_surely_valid_line(small) == (field in ("content", "payload", "_extras"))


@pytest.mark.parametrize(
    "pairs",
    [
        b'"confidence":0.5,"confidence":0.7',
        b'"confidence":0.7,"confidence":0.7',  # the same value twice: still a repetition
        b'"type":"evidence","type":"claim"',
        b'"safety":{"level":"block"},"safety":{"level":"safe"}',
        b'"safety":{"level":"block","level":"safe"}',
        b'"provenance":[{"ref":"a","ref":"b"}],"confidence":0.95',
        b'"content":{"n":1,"n":2}',
    ],
)
def test_a_repeated_key_is_never_surely_valid(pairs: bytes) -> None:
    """orjson and msgspec keep a repeated key's last value silently; other readers keep
    the first. The fast path leaves such a line to the explaining path (VLP005)."""
    repeated = {p.split(b'"')[1].decode() for p in [pairs]}
    msg = {k: v for k, v in base().items() if k not in repeated}
    line = orjson.dumps(msg)[:-1] + b"," + pairs + b"}"
    assert not is_surely_valid_line(line)
    assert is_surely_valid_line(orjson.dumps(orjson.loads(line)))  # without the repetition


@given(st.lists(st.sampled_from(["a\\u003a", "b:", "c\\u003A"]), max_size=3))
def test_escaped_colons_do_not_hide_a_repeated_key(pieces: list[str]) -> None:
    """A colon written as an escape counts as none in the text and one when written back,
    which could cancel the colon a repeated key adds: such a line is always looked at."""
    content = "".join(pieces)
    line = orjson.dumps(base())[:-1] + b',"topic":"' + content.encode() + b'","topic":"t"}'
    assert not is_surely_valid_line(line)


@pytest.mark.parametrize(
    "change",
    [
        lambda s: s["properties"]["sender"].update(pattern="^[A-Z]"),
        lambda s: s.update(additionalProperties=False),
        lambda s: s["properties"].update(score={"type": "number", "multipleOf": 0.5}),
        lambda s: s["allOf"].append(
            {"if": {"required": ["topic"]}, "then": {"required": ["receiver"]}}
        ),
        lambda s: s["properties"]["type"]["enum"].append("observation"),
        lambda s: s["$defs"]["utc_timestamp"].update(maxLength=30),
    ],
)
def test_a_schema_construct_the_compiler_does_not_know_is_refused(change: Any) -> None:
    """The fast path is compiled from the schema; a construct it cannot compile stops it
    (at import, so in every test run) instead of being silently ignored."""
    schema = load_schema()
    change(schema)
    with pytest.raises(SchemaNotCompiled):
        compile_schema(schema, open_values=False)


# A column of stamps: runs of learnt minutes broken by fractions, leap seconds, bad
# minutes, bad endings, short or empty stamps and stamps that repeat.
column_stamps = st.one_of(
    st.tuples(minutes, tails).map("".join),
    timestamps,
    st.sampled_from(["", "2025", "14/12/2025 10:30", "2025-12-14T10:30:00Z", "\u00e92025"]),
)


@settings(max_examples=400)
@given(st.lists(column_stamps, max_size=60), st.booleans())
def test_a_column_of_stamps_gets_the_patterns_verdict_stamp_by_stamp(
    stamps: list[str], forget: bool
) -> None:
    if forget:  # also from a cold cache: every minute met for the first time
        validate_module._known_minutes.clear()
    expected = [index for index, stamp in enumerate(stamps) if not TIMESTAMP_PATTERN.match(stamp)]
    assert bad_timestamps(stamps) == expected


def reference_verdict(line: bytes) -> bool:
    """Surely valid as decode_lines judged before it gated the open decoder: either
    decoder accepts the line, it holds no integer orjson refuses, the columns
    (timestamp, high-confidence rule) pass, and the key scan finds no key that may repeat
    (a key written with an escape is left to the exact walk)."""
    try:
        _decode_plain(line)
    except (msgspec.MsgspecError, RecursionError, UnicodeDecodeError):
        try:
            _decode_open(line)
        except (msgspec.MsgspecError, RecursionError, UnicodeDecodeError):
            return False
        if _long_number(line):
            return False
    return check_message(orjson.loads(line)) is None and not may_repeat_keys(line)


_HUGE = "@@huge@@"  # written as an integer orjson refuses (310 digits)
free_form = st.one_of(
    st.dictionaries(st.text(max_size=3), json_values, max_size=3),
    st.just({"n": _HUGE}),
)


@st.composite
def lines_with_free_form_values(draw: st.DrawFn) -> bytes:
    """A message with object content, payload or _extras, alone or beside other flaws."""
    msg = wire(draw(messages()))
    for field in draw(st.sets(st.sampled_from(["content", "payload", "_extras"]), min_size=1)):
        msg[field] = draw(free_form)
    return orjson.dumps(msg).replace(f'"{_HUGE}"'.encode(), b"9" * 310)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.one_of(lines_with_free_form_values(), messages().map(orjson.dumps)), max_size=12)
)
# A key written with an escape (found by the key scan's change, vlp35e): doubted, then settled.
@example([orjson.dumps(base(type="session_context", session_id="S", content={'"': 1}))])
def test_the_open_decoder_is_asked_only_when_it_can_change_the_verdict(lines: list[bytes]) -> None:
    """decode_lines tries the open decoder only on lines the plain one refused on a free-form
    field; the verdicts are those of trying it on every refused line."""
    doubtful = decode_lines(lines)[1]
    assert doubtful == [index for index, line in enumerate(lines) if not reference_verdict(line)]


def test_a_line_refused_for_its_object_content_is_still_settled_by_the_open_decoder() -> None:
    lines = [
        orjson.dumps(base(type="session_context", session_id="S", content={"n": 1})),
        orjson.dumps(base(payload={"a": [1, 2]}, _extras={"t": "x"})),
        orjson.dumps(base(content={"a": 1}, confidence=2)),  # refused for content, then range
        orjson.dumps(base(confidence=2)),  # refused, not for a free-form value
    ]
    assert decode_lines(lines)[1] == [2, 3]


_OPEN_DECODER_PROBE = """
import sys
from vlp.fastpath import _open_decoder, decode_lines
shapes, doubtful = decode_lines([sys.stdin.buffer.read()])
print(doubtful, _open_decoder.cache_info().currsize)
"""


@pytest.mark.parametrize(
    ("msg", "compiled"),
    [
        (base(), 0),
        (base(type="session_context", session_id="S1", content={"summary": "closed"}), 1),
    ],
)
def test_the_open_decoder_is_compiled_only_for_a_free_form_value(
    msg: dict[str, Any], compiled: int
) -> None:
    """Start-up: a stream without free-form values never pays for the open decoder, and a
    line with one is still settled by it (not left doubtful)."""
    assert check_message(msg) is None  # valid
    line = orjson.dumps(msg)
    done = subprocess.run(
        [sys.executable, "-c", _OPEN_DECODER_PROBE],
        input=line,
        capture_output=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.decode().split() == ["[]", str(compiled)]

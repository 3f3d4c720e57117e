"""NDJSON/JSON reading survives every kind of bad line; the writer appends whole lines."""

from __future__ import annotations

import io
import multiprocessing
import tracemalloc
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.vlp.conftest import base
from vlp import NdjsonWriter, VLPError, append_message, read_messages, read_records, scan
from vlp.line_reader import is_framing


def line(msg: Any) -> bytes:
    return orjson.dumps(msg) + b"\n"


def summary_of(data: bytes, **options: Any) -> tuple[list[tuple[int | None, str]], Any]:
    found: list[tuple[int | None, str]] = []
    result = scan(io.BytesIO(data), lambda p: found.append((p.line, p.code)), **options)
    return found, result


def test_bad_lines_are_reported_with_line_numbers_and_good_ones_kept() -> None:
    data = (
        line(base(id="A"))
        + b"{not json\n"
        + b"\n"
        + b"[1, 2]\n"
        + line(base(id="B", confidence=0.99))
        + b"x" * 300
        + b"\n"
        + line(base(id="C"))
    )
    records = list(read_records(io.BytesIO(data), max_line_bytes=200))
    assert [(r.line, [p.code for p in r.problems]) for r in records] == [
        (1, []),
        (2, ["VLP001"]),
        (4, ["VLP002"]),
        (5, ["VLP204"]),
        (6, ["VLP003"]),
        (7, []),
    ]
    assert records[3].problems[0].id == "B"
    assert [m["id"] for m in read_messages(io.BytesIO(data), max_line_bytes=200)] == ["A", "C"]
    found, result = summary_of(data, max_line_bytes=200)
    assert found == [(2, "VLP001"), (4, "VLP002"), (5, "VLP204"), (6, "VLP003")]
    assert (result.messages, result.valid, result.problems) == (6, 2, 4)


@pytest.mark.parametrize("chunk", [1, 3, 7, 64, 1 << 20])
def test_line_numbers_do_not_depend_on_chunking(chunk: int) -> None:
    data = line(base(id="A")) + b"y" * 250 + b"\n" + b"z" * 260 + line(base(id="B")) + b"{}"
    codes = [
        (r.line, [p.code for p in r.problems][:1], r.ok)
        for r in read_records(io.BytesIO(data), max_line_bytes=200, chunk_bytes=chunk)
    ]
    assert codes == [
        (1, [], True),
        (2, ["VLP003"], False),
        (3, ["VLP003"], False),
        (4, ["VLP101"], False),
    ]


def test_chunk_boundaries_and_limits_agree_exactly() -> None:
    good = line(base(id="A"))
    limit = len(good) - 1  # the newline is not part of the line
    for chunk in (1, 2, 5, 50):
        records = list(read_records(io.BytesIO(good * 3), max_line_bytes=limit, chunk_bytes=chunk))
        assert [r.ok for r in records] == [True] * 3, chunk
        records = list(
            read_records(io.BytesIO(good * 3), max_line_bytes=limit - 1, chunk_bytes=chunk)
        )
        assert [r.problems[0].code for r in records] == ["VLP003"] * 3, chunk


def test_crlf_bom_blank_lines_and_missing_final_newline() -> None:
    data = (
        b"\xef\xbb\xbf" + orjson.dumps(base(id="A")) + b"\r\n  \r\n\n" + orjson.dumps(base(id="B"))
    )
    assert [(r.line, r.ok) for r in read_records(io.BytesIO(data))] == [(1, True), (4, True)]


def test_json_array_document_reports_element_lines(tmp_path: Path) -> None:
    path = tmp_path / "thread.json"
    text = (
        "[\n"
        + ",\n".join(
            orjson.dumps(m, option=orjson.OPT_INDENT_2).decode()
            for m in [base(id="A"), base(id="B", confidence=2), "oops"]
        )
        + "\n]\n"
    )
    path.write_text(text)
    records = list(read_records(path))
    lines = text.splitlines()
    assert [r.line for r in records] == [i + 1 for i, t in enumerate(lines) if t in ("{", '"oops"')]
    assert [[p.code for p in r.problems] for r in records] == [[], ["VLP108", "VLP204"], ["VLP002"]]


def test_pretty_single_object_and_broken_document(tmp_path: Path) -> None:
    path = tmp_path / "one.json"
    path.write_bytes(orjson.dumps(base(), option=orjson.OPT_INDENT_2))
    assert [r.ok for r in read_records(path)] == [True]
    path.write_text('{\n  "id": "A",\n  "type": \n}\n')
    [record] = list(read_records(path))
    assert record.line == 4 and record.problems[0].code == "VLP001"


@settings(max_examples=150)
@given(
    st.lists(
        st.one_of(
            # Lines that would make the input look like one JSON document are fuzzed separately.
            st.binary(max_size=40).filter(
                lambda b: b"\n" not in b and not b.lstrip().startswith(b"[") and b.strip() != b"{"
            ),
            st.builds(
                lambda m: orjson.dumps(m),
                st.dictionaries(st.text(max_size=5), st.integers(-1000, 1000), max_size=3),
            ),
            st.just(orjson.dumps(base())),
        ),
        max_size=12,
    ),
    st.integers(1, 64),
)
def test_reader_never_crashes_and_accounts_for_every_line(lines: list[bytes], chunk: int) -> None:
    data = b"\n".join(lines)
    records = list(read_records(io.BytesIO(data), max_line_bytes=30, chunk_bytes=chunk))
    numbers = [r.line for r in records]
    assert numbers == sorted(set(numbers))
    texts = data.removeprefix(b"\xef\xbb\xbf").split(b"\n")  # a leading BOM is not content
    # Blank and code fence lines are framing, not records (see line_reader.is_framing).
    expected = [i + 1 for i, text in enumerate(texts) if not is_framing(text)]
    assert numbers == expected
    _, result = summary_of(data, max_line_bytes=30, chunk_bytes=chunk)
    assert result.messages == len(records)
    assert result.valid == sum(r.ok for r in records)


@settings(max_examples=150)
@given(st.binary(max_size=200), st.integers(1, 64))
def test_reader_never_crashes_on_arbitrary_bytes(data: bytes, chunk: int) -> None:
    records = list(read_records(io.BytesIO(data), max_line_bytes=50, chunk_bytes=chunk))
    assert all(r.problems or r.ok for r in records)
    assert summary_of(data, max_line_bytes=50, chunk_bytes=chunk)[1].messages == len(records)


def test_ndjson_whose_first_line_is_an_array_is_still_read_line_by_line() -> None:
    data = b"[1]\n" + line(base(id="A")) + b"{bad\n"
    assert [(r.line, r.ok) for r in read_records(io.BytesIO(data))] == [
        (1, False),
        (2, True),
        (3, False),
    ]


def test_memory_stays_bounded_on_a_huge_line(tmp_path: Path) -> None:
    path = tmp_path / "big.ndjson"
    with path.open("wb") as out:
        out.write(line(base(id="A")))
        out.write(b'{"content": "' + b"a" * (30 << 20) + b'"}\n')  # one 30 MiB line
        for index in range(2000):
            out.write(line(base(id=f"M{index}")))
    found: list[str] = []
    tracemalloc.start()
    try:
        result = scan(path, lambda p: found.append(p.code), max_line_bytes=1 << 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert found == ["VLP003"] and result.valid == 2001
    assert peak < 6 << 20  # chunk + limit, never the 30 MiB line


def test_reader_is_lazy() -> None:
    class OneChunkThenFail(io.RawIOBase):
        calls = 0

        def readable(self) -> bool:
            return True

        def readinto(self, buffer: Any) -> int:
            self.calls += 1
            if self.calls > 1:
                raise AssertionError("read past what was needed")
            data = line(base(id="A")) * 2
            buffer[: len(data)] = data
            return len(data)

    first = next(read_records(OneChunkThenFail()))  # type: ignore[arg-type]
    assert first.ok


def test_writer_refuses_invalid_messages_and_appends(tmp_path: Path) -> None:
    path = tmp_path / "out.ndjson"
    with NdjsonWriter(path) as writer:
        writer.write(base(id="A"))
        with pytest.raises(VLPError, match="VLP204"):
            writer.write(base(id="B", confidence=0.95))
    append_message(path, base(id="C"))
    assert [m["id"] for m in read_messages(path)] == ["A", "C"]
    with pytest.raises(ValueError, match="closed"):
        writer.write(base(id="D"))


def _append_many(path: str, worker: int) -> None:
    with NdjsonWriter(path) as writer:
        for index in range(200):
            writer.write(base(id=f"W{worker}-{index}", content="x" * (500 + worker * 300)))


def test_concurrent_writers_never_interleave_lines(tmp_path: Path) -> None:
    path = tmp_path / "shared.ndjson"
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_append_many, args=(str(path), w)) for w in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    records = list(read_records(path))
    assert len(records) == 600 and all(r.ok for r in records)


def test_scan_counts_valid_messages_the_fast_path_leaves_to_the_full_validator() -> None:
    rare = [
        base(id="A", seq=3.0),
        base(id="B", provenance=[{"ref": "r"}], confidence=0.95),
        base(id="C", safety={"level": "review", "issues": [{"code": "x"}]}, confidence=0.95),
    ]
    data = b"".join(line(m) for m in rare * 30) + b"\n\n" + b"{broken\n"
    seen: list[int] = []
    found, result = summary_of(data)
    assert found == [(93, "VLP001")]
    assert (result.messages, result.valid, result.problems) == (91, 90, 1)
    scan(io.BytesIO(data), lambda p: None, lambda msg, number: seen.append(number))
    assert seen == list(range(1, 91))


def test_deeply_nested_input_is_an_error_not_a_crash() -> None:
    for data in (
        b"[" * 100_000,
        b"[" * 100_000 + b"]" * 100_000,
        b'{"a":' * 5000 + b"1" + b"}" * 5000,
    ):
        records = list(read_records(io.BytesIO(data)))
        assert records and all(
            r.problems and r.problems[0].code in ("VLP001", "VLP002") for r in records
        )


def test_unreadable_lines_say_where_and_why() -> None:
    data = line(base(id="A")) + b'{"id": "\xff\xfe"}\n' + b'{"id": "B",, }\n'
    expected = [
        (2, "not UTF-8: byte 0xff at byte 9 of the line"),
        (3, "invalid JSON at column 12: "),
    ]
    messages = [(p.line, p.message) for r in read_records(io.BytesIO(data)) for p in r.problems]
    found: list[tuple[int | None, str]] = []
    scan(io.BytesIO(data), lambda p: found.append((p.line, p.message)))
    for reported in (messages, found):
        assert [(n, text[: len(e)]) for (n, text), (_, e) in zip(reported, expected)] == expected
        assert "line 1 column" not in "".join(text for _, text in reported)


def test_a_document_names_the_line_of_its_bad_byte(tmp_path: Path) -> None:
    path = tmp_path / "thread.json"
    path.write_bytes(b'[\n  {"id": "A"},\n  {"id": "\xff"}\n]\n')
    [record] = list(read_records(path))
    assert record.line == 3
    assert record.problems[0].message == "not UTF-8: byte 0xff at byte 11 of the line"


def test_problems_in_a_one_line_array_name_their_element(tmp_path: Path) -> None:
    path = tmp_path / "thread.json"
    path.write_bytes(orjson.dumps([base(id="A"), 5, base(id="C", confidence=2)]))
    problems = [p for r in read_records(path) for p in r.problems]
    assert [(p.line, p.code, p.message.split(":")[0]) for p in problems] == [
        (1, "VLP002", "element [1]"),
        (1, "VLP108", "element [2]"),
        (1, "VLP204", "element [2]"),
    ]


def test_writer_refuses_what_json_cannot_carry(tmp_path: Path) -> None:
    path = tmp_path / "out.ndjson"
    with NdjsonWriter(path) as writer:
        with pytest.raises(VLPError, match="'payload.score' is nan"):
            writer.write(base(id="A", payload={"score": float("nan")}))
        with pytest.raises(VLPError, match="holds a set"):
            writer.write(base(id="B", content={"s": {1}}))
    assert path.read_bytes() == b""


def test_memory_stays_bounded_however_many_lines(tmp_path: Path) -> None:
    path = tmp_path / "many.ndjson"
    good, bad = line(base(content="x" * 200)), line(base(confidence=0.99))
    block = (good * 19 + bad + b"{oops\n") * 500  # ~2.4 MB
    with path.open("wb") as out:
        for _ in range(5):  # ~12 MB, 52,500 lines, 5,000 of them bad
            out.write(block)
    counts = {"records": 0, "messages": 0, "problems": 0}

    def on_problem(problem: Any) -> None:
        counts["problems"] += 1

    def on_message(msg: Any, number: int) -> None:
        counts["messages"] += 1

    tracemalloc.start()
    try:
        for _ in read_records(path):
            counts["records"] += 1
        scan(path, on_problem, on_message)
        summary = scan(path, on_problem)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert counts["records"] == summary.messages == 52_500
    assert counts["messages"] == summary.valid == 47_500
    assert counts["problems"] == 2 * summary.problems == 2 * 5_000
    # A few chunks' worth. Bad lines once leaked their whole batch each, through a cycle
    # between a kept exception and its frame: 21 MB here.
    assert peak < 8 << 20


def test_an_object_with_its_first_key_on_the_brace_line_is_one_document() -> None:
    text = orjson.dumps(base(id="A"), option=orjson.OPT_INDENT_2).replace(b"{\n  ", b"{ ", 1)
    assert not text.startswith(b"{\n")
    assert [(r.line, r.ok) for r in read_records(io.BytesIO(text))] == [(1, True)]
    found, summary = summary_of(text)
    assert found == [] and (summary.messages, summary.valid) == (1, 1)


def test_ndjson_with_a_broken_first_line_still_reports_line_by_line() -> None:
    data = b'{"id": "A",\n' + line(base(id="B")) + b"{oops\n" + line(base(id="C"))
    records = list(read_records(io.BytesIO(data), chunk_bytes=16))
    assert [(r.line, r.ok) for r in records] == [(1, False), (2, True), (3, False), (4, True)]
    found, summary = summary_of(data, chunk_bytes=16)
    assert found == [(1, "VLP001"), (3, "VLP001")] and summary.valid == 2


def test_documents_accept_exactly_what_ndjson_lines_accept(tmp_path: Path) -> None:
    """orjson is the parser of record for both: the json module alone would take these."""
    claim = orjson.dumps(base(id="A", content="PLACE"))
    for value in (b'"\\ud800"', b"1e400", b"1" + b"0" * 400, b"NaN"):
        message = claim.replace(b'"PLACE"', value)
        for data in (b"[" + message + b"]", b"{\n" + message[1:], message + b"\n"):
            [record] = list(read_records(io.BytesIO(data)))
            assert [p.code for p in record.problems] == ["VLP001"], data
    big = claim.replace(b'"PLACE"', b'{"n": ' + b"1" + b"0" * 30 + b"}")
    documents = [next(read_records(io.BytesIO(d))) for d in (b"[" + big + b"]", big + b"\n")]
    assert documents[0].message == documents[1].message  # 1e30 a float in both


@pytest.mark.parametrize("end", [b"", b"\n"])
def test_an_over_long_first_line_is_never_taken_for_a_document(end: bytes) -> None:
    data = line(base(content="x" * 100_000))[:-1] + end
    [record] = list(read_records(io.BytesIO(data), max_line_bytes=50_000))
    assert [p.code for p in record.problems] == ["VLP003"]
    found, _ = summary_of(data, max_line_bytes=50_000)
    assert found == [(1, "VLP003")]

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
    expected = [i + 1 for i, text in enumerate(texts) if text.strip()]
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

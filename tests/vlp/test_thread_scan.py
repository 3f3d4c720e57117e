"""`vlp validate`'s thread checks (columns of decoded lines) agree with the checker fed one
message at a time, and an invalid line yields its own problem only."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any
from unittest.mock import patch

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.vlp.conftest import base
from tests.vlp.thread_oracle import OracleChecker
from vlp import Problem, ThreadChecker, scan, scan_columns
from vlp.cli import main
from vlp.ndjson import read_records
from vlp.schema import KIND_CODES

KINDS = ["claim", "query", "notice", "response", "correction", "evidence", "session_context"]


@st.composite
def thread_line(draw: st.DrawFn, index: int) -> bytes:
    """A line of a thread: mostly plain valid messages, with duplicate ids, forward,
    dangling and self references, seq gaps and repeats, and invalid or broken lines."""
    kind = draw(st.sampled_from(KINDS))
    ident = f"M{draw(st.integers(0, index + 2))}" if draw(st.booleans()) else f"M{index}"
    fields: dict[str, Any] = {"id": ident, "type": kind}
    if kind in ("response", "correction", "evidence") or draw(st.booleans()):
        fields["refers_to"] = draw(
            st.one_of(
                st.builds(lambda n: f"M{n}", st.integers(max(0, index - 6), index + 3)),
                st.lists(st.builds(lambda n: f"M{n}", st.integers(0, index + 2)), min_size=1),
            )
        )
    if kind == "evidence":
        fields["provenance"] = ["db"]
    if kind == "session_context":
        fields["content"] = {"summary": "done"}
    session = draw(st.sampled_from(["S1", "S2", None]))
    if session is not None or kind == "session_context":
        fields["session_id"] = session or "S3"
        fields["seq"] = draw(
            st.sampled_from([index, index + 1, index + 3, 0, 2.0, 2**63 + index, 2**64 - 1])
        )
    msg = base(**fields)
    flaw = draw(st.sampled_from(["none"] * 6 + ["confidence", "cut", "blank", "list"]))
    if flaw == "confidence":
        msg["confidence"] = 2
    data = orjson.dumps(msg)
    if flaw == "cut":
        return data[:-3]
    if flaw == "blank":
        return b""
    if flaw == "list":
        return b"[" + data + b"]"
    return data


@st.composite
def threads(draw: st.DrawFn) -> list[bytes]:
    count = draw(st.integers(1, 160))
    return [draw(thread_line(index)) for index in range(count)]


def one_at_a_time(data: bytes) -> list[tuple[str, int | None, str | None]]:
    """Every problem, found by the plain oracle fed message by message (the reference)."""
    oracle = OracleChecker()
    found: list[Problem] = []
    for record in read_records(io.BytesIO(data)):
        found.extend(record.problems)
        if record.ok:
            found.extend(oracle.valid(record.message, record.line))
        else:
            raw = data.split(b"\n")[record.line - 1]
            found.extend(oracle.invalid(record.message, raw, record.line))
    found.extend(oracle.finish())
    return sorted((p.code, p.line, p.id, p.message) for p in found)


# Found by this test (commit efd750b): a blank first line, a valid message, a cut one (it
# ends on a key) was taken for a stream of JSON documents.
_FOUND_CUT = orjson.dumps(base(id="M1", type="claim", session_id="S1", seq=1))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(threads(), st.sampled_from([3, 64, 1 << 20]))
@example(
    [b"", orjson.dumps(base(id="M0", type="claim")), _FOUND_CUT[: _FOUND_CUT.index(b'"seq"') + 5]],
    3,
)
@example(
    [b"", orjson.dumps(base(id="M0", type="claim")), _FOUND_CUT[: _FOUND_CUT.index(b'"seq"') + 5]],
    64,
)
def test_columns_agree_with_one_message_at_a_time(lines: list[bytes], chunk: int) -> None:
    data = b"\n".join(lines) + b"\n"
    if data.lstrip().startswith(b"["):
        return  # one JSON document, not NDJSON: not what this test is about
    checker = ThreadChecker()
    found: list[Problem] = []
    scan(io.BytesIO(data), found.append, thread=checker, chunk_bytes=chunk)
    found.extend(checker.finish())
    assert sorted((p.code, p.line, p.id, p.message) for p in found) == one_at_a_time(data)


def test_one_bad_line_is_one_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = [base(id=f"M{n}", session_id="S", seq=n) for n in range(1, 6)]
    lines = [orjson.dumps(msg) for msg in good]
    lines[1] = orjson.dumps({**good[1], "timestamp": "yesterday"})  # invalid, seq 2
    lines[3] = orjson.dumps(good[3]).replace(b'"sender":', b'"sender"')  # unparsable, seq 4
    path = tmp_path / "t.ndjson"
    path.write_bytes(b"\n".join(lines) + b"\n")
    code = main(["validate", str(path)])
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    assert [line.split()[1] for line in out[:-1]] == ["VLP107", "VLP001"], out
    assert "VLP304" not in "\n".join(out) and "VLP302" not in "\n".join(out)


def test_a_reference_to_an_invalid_message_is_not_a_second_problem() -> None:
    lines = [
        orjson.dumps(base(id="A", timestamp="yesterday")),
        orjson.dumps(base(id="R", type="response", refers_to="A")),
    ]
    checker = ThreadChecker()
    found: list[Problem] = []
    scan(io.BytesIO(b"\n".join(lines)), found.append, thread=checker)
    found.extend(checker.finish())
    assert [p.code for p in found] == ["VLP107"]


@st.composite
def fields_columns(draw: st.DrawFn) -> list[tuple[str, int, Any, str, int]]:
    """ThreadFields of consecutive lines, valid (type code 1..7) or invalid (code 0, what
    could be salvaged). Most lines are clean (a new id, a reference to an earlier line, the
    next seq of their session), so whole columns pass; the others bring repeated ids,
    forward, dangling and self references, evidence to non-claims, list references, seq
    that jump, repeat or are too large to count, lines without an id."""
    count = draw(st.integers(1, 120))
    rows = []
    seqs = {"S1": 0, "S2": 100}
    for index in range(count):
        code = draw(st.sampled_from([0, 1, 1, 1, 2, 2, 3, 4, 5, 5, 6, 7]))
        session = draw(st.sampled_from(["", "S1", "S1", "S2"]))
        if draw(st.integers(0, 9)) < 8:  # clean
            ident = f"M{index}"
            refs = draw(st.sampled_from(["", f"M{max(0, index - 1)}", f"M{index // 2}"]))
            seqs[session or "S1"] += 1
            seq = seqs[session or "S1"] if session else -1
        else:
            ident = draw(st.sampled_from([f"M{max(0, index - 3)}", "", "X", f"M{index}"]))
            refs = draw(
                st.sampled_from(
                    [
                        f"M{max(0, index - 9)}",
                        f"M{index + 2}",
                        ident or "Y",
                        "NOPE",
                        [f"M{index - 1}"],
                    ]
                )
            )
            seq = draw(st.sampled_from([-1, index, 0, 2**63 + 1, seqs.get(session, 0) + 2]))
        if code and not ident:
            ident = f"M{index}"
        if not code:
            refs = ""
            seq = -1 if seq >= 2**63 else seq  # salvage keeps only seq below 2**63
        rows.append((ident, code, refs if code else "", session, seq))
    return rows


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fields_columns(), st.integers(1, 5))
def test_batches_give_the_problems_of_one_message_at_a_time(
    rows: list[tuple[str, int, Any, str, int]], batches: int
) -> None:
    """Same problems, same order, same state after: batch by batch (columns) and message by
    message through the plain oracle."""
    kinds = [None, *KIND_CODES]
    oracle = OracleChecker()
    expected: list[Problem] = []
    for line, (ident, code, refs, session, seq) in enumerate(rows, 1):
        if code:
            msg = {"id": ident, "type": kinds[code], "refers_to": refs or None}
            if session:
                msg["session_id"] = session
            if seq >= 0:
                msg["seq"] = seq
            expected += oracle.valid({k: v for k, v in msg.items() if v is not None}, line)
        else:
            salvaged = {"id": ident or None, "session_id": session or None}
            salvaged["seq"] = seq if seq >= 0 else None
            expected += oracle.invalid(salvaged, None, line)
    expected += oracle.finish()
    checker = ThreadChecker()
    found: list[Problem] = []
    size = -(-len(rows) // batches)
    for start in range(0, len(rows), size):
        part = rows[start : start + size]
        ids, codes, refs, sessions, seqs = (list(column) for column in zip(*part))
        found += checker.add_batch((ids, codes, refs, sessions, seqs), start + 1)
    found += checker.finish()
    assert found == expected


def scanned(data: bytes, chunk: int = 1 << 20) -> list[Problem]:
    checker = ThreadChecker()
    found: list[Problem] = []
    scan(io.BytesIO(data), found.append, thread=checker, chunk_bytes=chunk)
    return found + checker.finish()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(threads(), st.sampled_from([1, 2, 3, 8, 64]), st.sampled_from([64, 1 << 20]))
def test_the_report_does_not_depend_on_the_slices_a_chunk_is_checked_in(
    lines: list[bytes], size: int, chunk: int
) -> None:
    """A chunk's lines are decoded and checked in slices (for the CPU caches): invalid
    lines anywhere among valid ones, and problems that cross slices (duplicates, forward
    references, seq gaps), give the same report, in the same order, whatever the slices."""
    data = b"\n".join(lines) + b"\n"
    if data.lstrip().startswith(b"["):
        return  # one JSON document, not NDJSON
    whole = scanned(data, chunk)
    with patch.object(scan_columns, "THREAD_SLICE", size):
        sliced = scanned(data, chunk)
    assert sliced == whole
    assert sorted((p.code, p.line, p.id, p.message) for p in sliced) == one_at_a_time(data)

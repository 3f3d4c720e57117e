"""`net.parser` on any bytes: every split of a valid answer parses the same, and anything
else is one of the contract's failures (hypothesis)."""

from __future__ import annotations

import contextlib
import gc
import gzip
import weakref

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from openprose.net.errors import AnswerTooLarge, ConnectionBroke, HttpFailure, NotHttp
from openprose.net.parser import ResponseHead, ResponseParser
from tests.support.raw_http_server import (
    answer,
)


class _Collected:
    def __init__(self) -> None:
        self.head: ResponseHead | None = None
        self.body = b""
        self.ended = False

    def on_head(self, head: ResponseHead) -> None:
        self.head = head

    def on_body(self, piece: bytes) -> None:
        self.body += piece

    def on_end(self) -> None:
        self.ended = True


def _parse(pieces: list[bytes], *, eof: bool = True) -> _Collected:
    collected = _Collected()
    parser = ResponseParser(collected, max_body=1_000_000)
    for piece in pieces:
        parser.feed(piece)
    if eof:
        parser.feed_eof()
    return collected


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


VALID_ANSWERS = [
    answer(b'{"choices": []}', headers="x-request-id: r1\r\n"),
    b"HTTP/1.1 100 Continue\r\n\r\n" + answer(b"after continue"),
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n10;x=y\r\n0123456789abcdef\r\n0\r\nt: 1\r\n\r\n",
    answer(gzip.compress(b"inflated " * 50), headers="content-encoding: gzip\r\n"),
    b"HTTP/1.0 200 OK\r\n\r\nuntil the end",
    b"HTTP/1.1 204 No Content\r\n\r\n",
    b"HTTP/1.1 200 OK\ncontent-length: 3\n\nbare",  # bare LF line breaks
]


@settings(max_examples=300, deadline=None)
@given(
    which=st.integers(0, len(VALID_ANSWERS) - 1), cuts=st.lists(st.integers(0, 10_000), max_size=12)
)
def test_any_split_of_a_valid_answer_parses_the_same(which: int, cuts: list[int]) -> None:
    data = VALID_ANSWERS[which]
    whole = _parse([data])
    split = _parse(_split(data, cuts))
    assert whole.ended and split.ended
    assert split.head == whole.head and split.body == whole.body


@pytest.mark.parametrize("data", VALID_ANSWERS)
def test_an_answer_arriving_a_byte_at_a_time_parses_the_same(data: bytes) -> None:
    whole = _parse([data])
    trickled = _parse([data[i : i + 1] for i in range(len(data))])
    assert trickled.ended and (trickled.head, trickled.body) == (whole.head, whole.body)


def test_a_head_trickling_in_is_refused_at_its_limit() -> None:
    parser = ResponseParser(_Collected(), max_head=1000)
    parser.feed(b"HTTP/1.1 200 OK\r\n")
    with pytest.raises(AnswerTooLarge, match="headers are over 1000 bytes"):
        for _ in range(2000):
            parser.feed(b"x")


def test_header_lines_are_read_as_a_mature_client_reads_them() -> None:
    head = _parse(
        [
            b"HTTP/1.1 200 OK\r\nX-A: 1\r\nx-a: 2\r\nEmpty:\r\nSpaced: \t v w  \r\n",
            b"Latin: caf\xe9\xa0\r\ncontent-length: 0\r\n\r\n",
        ]
    ).head
    assert head is not None and head.keep_alive
    assert head.headers == {
        "x-a": "1, 2",  # a repeated header, joined
        "empty": "",
        "spaced": "v w",
        "latin": "caf\xe9\xa0",
        "content-length": "0",
    }
    assert not _parse([b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"]).head.keep_alive  # type: ignore[union-attr]
    assert not _parse([b"HTTP/1.0 200 OK\r\ncontent-length: 0\r\n\r\n"]).head.keep_alive  # type: ignore[union-attr]


def test_an_obsolete_folded_header_line_is_refused_as_node_refuses_it() -> None:
    with pytest.raises(NotHttp, match="a header line of the answer is malformed"):
        _parse([b"HTTP/1.1 200 OK\r\nFolded: one\r\n two\r\ncontent-length: 0\r\n\r\n"])


def test_the_valid_answers_parse_to_what_was_sent() -> None:
    assert _parse([VALID_ANSWERS[2]]).body == b"abc0123456789abcdef"
    assert _parse([VALID_ANSWERS[3]]).body == b"inflated " * 50
    assert _parse([VALID_ANSWERS[6]]).body == b"bar"


@settings(max_examples=500, deadline=None)
@given(
    data=st.one_of(
        st.binary(max_size=300),
        st.sampled_from(VALID_ANSWERS).flatmap(
            lambda valid: st.tuples(st.integers(0, len(valid)), st.binary(max_size=20)).map(
                lambda cut: valid[: cut[0]] + cut[1]
            )
        ),
    ),
    cuts=st.lists(st.integers(0, 400), max_size=6),
)
def test_arbitrary_bytes_only_ever_give_the_contracts_failures(
    data: bytes, cuts: list[int]
) -> None:
    try:
        _parse(_split(data, cuts))
    except HttpFailure:
        pass


# --- the wire's edges, fuzzed: always an answer or one clear failure -------------------------

_CLEAR_FAILURES = (NotHttp, AnswerTooLarge, ConnectionBroke)


def _outcome(pieces: list[bytes], **limits: int) -> _Collected | HttpFailure:
    collected = _Collected()
    parser = ResponseParser(collected, **limits)  # type: ignore[arg-type]
    try:
        for piece in pieces:
            parser.feed(piece)
        parser.feed_eof()
    except _CLEAR_FAILURES as failure:
        assert str(failure)  # a message a person can read, never empty
        return failure
    return collected


@settings(max_examples=400, deadline=None)
@given(
    version=st.sampled_from([b"HTTP/1.1", b"HTTP/1.0", b"HTTP/2", b"HTTP/1.", b"http/1.1", b""]),
    status=st.one_of(st.integers(0, 1000).map(lambda n: str(n).encode()), st.binary(max_size=5)),
    reason=st.binary(max_size=30),
    separator=st.sampled_from([b" ", b"", b"  ", b"\t"]),
)
@example(version=b"HTTP/1.1", status=b"101", reason=b"", separator=b" ")
@example(version=b"HTTP/1.1", status=b"100", reason=b"", separator=b" ")  # interim, then cut
def test_any_status_line_is_an_answer_or_a_clear_failure(
    version: bytes, status: bytes, reason: bytes, separator: bytes
) -> None:
    line = version + separator + status + b" " + reason + b"\r\n"
    outcome = _outcome([line + b"content-length: 2\r\n\r\nok"])
    if isinstance(outcome, _Collected):
        assert outcome.head is not None and 200 <= outcome.head.status <= 999
        assert outcome.body in (b"ok", b"")  # 204 and 304 have no body


@settings(max_examples=400, deadline=None)
@given(
    size=st.one_of(
        st.integers(0, 2**70).map(lambda n: b"%x" % n),
        st.binary(max_size=20),
        st.sampled_from([b"-1", b"0x5", b" 5", b"5 ", b"5;ext", b"5;" + b"e" * 5000, b""]),
    ),
    data=st.binary(max_size=40),
    cuts=st.lists(st.integers(0, 200), max_size=4),
)
@example(size=b"ffffffffffffffffff", data=b"x", cuts=[])  # overflows 64 bits
# one byte more than sent: the chunk takes the CR, and the bare LF left ends it
@example(size=b"5;!", data=b"\x00\x00\x00\x00", cuts=[])
def test_any_chunk_size_is_an_answer_or_a_clear_failure(
    size: bytes, data: bytes, cuts: list[int]
) -> None:
    wire = (
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
        + size
        + b"\r\n"
        + data
        + b"\r\n0\r\n\r\n"
    )
    outcome = _outcome(_split(wire, cuts))
    if isinstance(outcome, _Collected):  # the body is what followed the size line
        assert outcome.ended and outcome.body == (data + b"\r")[: len(outcome.body)]


@settings(max_examples=60, deadline=None)
@given(
    count=st.integers(0, 3000),
    name=st.binary(min_size=1, max_size=12),
    value=st.binary(max_size=40),
)
def test_a_flood_of_headers_is_refused_at_the_head_limit(
    count: int, name: bytes, value: bytes
) -> None:
    head = b"HTTP/1.1 200 OK\r\n" + (name + b": " + value + b"\r\n") * count
    wire = head + b"content-length: 0\r\n\r\n"
    outcome = _outcome([wire], max_head=16 * 1024)
    if len(wire) > 16 * 1024:
        assert isinstance(outcome, AnswerTooLarge | NotHttp)
    elif isinstance(outcome, _Collected):
        assert outcome.ended


def test_a_flood_of_trailers_is_refused() -> None:
    wire = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n"
    outcome = _outcome([wire] + [b"x-t: 1\r\n"] * 20_000, max_head=16 * 1024)
    assert isinstance(outcome, AnswerTooLarge)
    assert "chunk framing and trailers are over 16384 bytes" in str(outcome)


@settings(max_examples=300, deadline=None)
@given(which=st.integers(0, len(VALID_ANSWERS) - 1), cut=st.integers(0, 10_000))
def test_a_truncated_answer_is_cut_off_clearly_or_was_complete(which: int, cut: int) -> None:
    data = VALID_ANSWERS[which]
    outcome = _outcome([data[: cut % (len(data) + 1)]])
    if isinstance(outcome, HttpFailure):
        assert isinstance(outcome, ConnectionBroke | NotHttp)
    else:
        assert outcome.ended  # read-until-close, or the cut came after the end


@pytest.mark.parametrize("ending", ["complete", "refused", "cut off"])
def test_a_parser_is_freed_without_the_cyclic_garbage_collector(ending: str) -> None:
    """llhttp's object holds the parser's callbacks: the parser lets go of it at the end, so
    at 10,000 answers a run does not hold 10,000 parsers (and their answers) until a GC."""
    wire = {
        "complete": [answer(b"ok")],
        "refused": [b"HTTP/1.1 200 OK\r\nbad header line\r\n\r\n"],
        "cut off": [b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nok"],
    }[ending]
    collected = _Collected()
    sink = weakref.ref(collected)
    parser = ResponseParser(collected)
    del collected
    gc.disable()
    try:
        with contextlib.suppress(HttpFailure):
            for piece in wire:
                parser.feed(piece)
            parser.feed_eof()
        del parser
        assert sink() is None
    finally:
        gc.enable()

"""`net.parser` on any bytes: every split of a valid answer parses the same, and anything
else is one of the contract's failures (hypothesis)."""

from __future__ import annotations

import gzip

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openprose.net.errors import (
    AnswerTooLarge,
    HttpFailure,
    NotHttp,
)
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

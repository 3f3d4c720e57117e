"""Reading server-sent events and assembling streamed answers, piece by piece."""

from __future__ import annotations

from collections.abc import AsyncIterator

import orjson
import pytest

from openprose.providers.anthropic import _EventAssembler
from openprose.providers.http_client import _server_sent_events
from openprose.providers.http_errors import BadAnswer
from openprose.providers.openai import _ChunkAssembler


async def lines(*chunks: bytes) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


async def events_of(*chunks: bytes) -> list[tuple[str, bytes]]:
    return [event async for event in _server_sent_events(lines(*chunks))]


async def test_events_are_split_on_blank_lines_with_names_comments_and_crlf() -> None:
    got = await events_of(
        b": keep-alive comment\n",
        b"event: message_start\r\n",
        b'data: {"a": 1}\r\n',
        b"\r\n",
        b"data: first line\n",
        b"data:second line\n",
        b"id: 7\n",
        b"\n",
        b"data: [DONE]",  # the last event without its blank line
    )
    assert got == [
        ("message_start", b'{"a": 1}'),
        ("message", b"first line\nsecond line"),
        ("message", b"[DONE]"),
    ]


async def test_chunk_boundaries_fall_anywhere_and_lines_have_no_length_limit() -> None:
    body = b"event: a\r\ndata: " + b"x" * 300_000 + b"\r\n\r\ndata: two\n\n"
    pieces = [body[i : i + 7_001] for i in range(0, len(body), 7_001)]
    got = await events_of(*pieces)
    assert got == [("a", b"x" * 300_000), ("message", b"two")]


def chunk(delta: dict[str, object], **extra: object) -> bytes:
    return orjson.dumps(
        {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": delta}], **extra}
    )


def test_openai_chunks_assemble_text_and_a_tool_call_without_an_id() -> None:
    assembler = _ChunkAssembler("m")
    pieces = [
        assembler.feed("message", chunk({"role": "assistant", "content": "Hel"})),
        assembler.feed("message", chunk({"content": "lo"})),
        assembler.feed(
            "message",
            chunk(
                {"tool_calls": [{"index": 0, "function": {"name": "look", "arguments": '{"x"'}}]}
            ),
        ),
        assembler.feed(
            "message", chunk({"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]})
        ),
        assembler.feed(
            "message",
            orjson.dumps({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2}}),
        ),
    ]
    assert pieces == ["Hel", "lo", "", "", ""] and not assembler.finished
    assembler.feed("message", b"[DONE]")
    assert assembler.finished
    response = assembler.response(None)
    assert response.text == "Hello" and response.request_id == "c1"
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("call_0", "look", {"x": 1})
    ]
    assert (response.usage.input_tokens, response.usage.output_tokens) == (3, 2)


def test_anthropic_events_out_of_order_or_not_json_are_clear_errors() -> None:
    assembler = _EventAssembler("m")
    assert assembler.feed("ping", b'{"type": "ping"}') == ""
    with pytest.raises(BadAnswer, match="content block 3, which never started"):
        assembler.feed(
            "content_block_delta",
            b'{"type": "content_block_delta", "index": 3, "delta": {"type": "text_delta", "text": "x"}}',
        )
    with pytest.raises(BadAnswer, match="an event is not JSON: 'oops'"):
        assembler.feed("message", b"oops")


def test_openai_text_that_is_not_a_string_is_named() -> None:
    with pytest.raises(BadAnswer, match=r"choices\[0\].delta.content is 5, not a string"):
        _ChunkAssembler("m").feed("message", chunk({"content": 5}))

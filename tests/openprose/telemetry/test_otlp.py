"""The hand-written OTLP/protobuf span encoder writes exactly the SDK's bytes."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra is not installed")
pytest.importorskip("opentelemetry.exporter.otlp.proto.common", reason="no OTLP exporter")

from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.trace import SpanKind, StatusCode

from openprose.telemetry.otel import SCOPE, span_of
from openprose.telemetry.otlp import CALL, STATEMENT, Record, SpanEncoder, expand

RESOURCE = Resource.create({"service.name": "openprose-test", "deployment.environment": "ci"})

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),  # beyond int64 the SDK drops it
    st.floats(allow_nan=False),
    st.text(max_size=300),
)
values = st.one_of(scalars, st.lists(scalars, max_size=4))
ids64 = st.integers(min_value=1, max_value=2**64 - 1)
records = st.tuples(
    st.text(max_size=40),
    st.integers(min_value=1, max_value=2**128 - 1).map(lambda t: f"{t:032x}"),
    ids64,
    st.none() | ids64,
    st.sampled_from([kind.value for kind in SpanKind]),
    st.sampled_from([code.value for code in StatusCode]),
    st.none() | st.text(max_size=60),
    st.integers(min_value=0, max_value=2**63),
    st.integers(min_value=0, max_value=2**63),
    st.dictionaries(st.text(max_size=30), values, max_size=12),
)


def sdk_bytes(batch: list[Record]) -> bytes:
    return encode_spans([span_of(record, RESOURCE) for record in batch]).SerializePartialToString()


def encoder() -> SpanEncoder:
    return SpanEncoder(RESOURCE.attributes, SCOPE.name, resource_schema_url=RESOURCE.schema_url)


@settings(max_examples=300, deadline=None)
@given(st.lists(records, min_size=1, max_size=6))
def test_the_encoding_is_the_sdks_byte_for_byte(batch: list[Record]) -> None:
    ours = encoder().request(batch)
    expected = sdk_bytes(batch)
    if ours != expected:  # say which field differs before failing on the bytes
        assert ExportTraceServiceRequest.FromString(ours) == ExportTraceServiceRequest.FromString(
            expected
        )
    assert ours == expected


def test_repeated_attributes_are_reused_without_confusing_types() -> None:
    """The attribute cache must tell True from 1 and 1.0, and keep lists uncached."""
    base: Any = ("s", "ab" * 16, 7, None, 0, 0, None, 1, 2)
    batch: list[Record] = [
        (*base, {"k": True, "l": ["x"]}),
        (*base, {"k": 1, "l": ["y"]}),
        (*base, {"k": 1.0, "l": ["x"]}),
        (*base, {"k": True, "l": ["x"]}),
    ]
    one = encoder()
    assert one.request(batch) == sdk_bytes(batch)
    assert one.request(batch) == sdk_bytes(batch)  # now from the cache


def test_the_spans_a_run_makes_encode_as_the_sdk_does() -> None:
    """The shapes of `openprose.telemetry.otel`: statement, GenAI client and failed spans."""
    trace = "0af7651916cd43dd8448eb211c80319c"
    batch: list[Record] = [
        (
            "session",
            trace,
            0xB7AD6B7169203331,
            0x00F067AA0BA902B7,
            SpanKind.INTERNAL.value,
            StatusCode.UNSET.value,
            None,
            1_700_000_000_000_000_000,
            1_700_000_000_020_000_000,
            {"prose.step": "s1.2[17]", "code.file.path": "/p/main.prose", "code.line.number": 3},
        ),
        (
            "chat gpt-4.1",
            trace,
            0x1111111111111111,
            0xB7AD6B7169203331,
            SpanKind.CLIENT.value,
            StatusCode.ERROR.value,
            "HTTP 500: boom",
            1_700_000_000_000_000_001,
            1_700_000_000_019_000_000,
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4.1",
                "gen_ai.request.max_tokens": 1024,
                "gen_ai.request.temperature": 0.2,
                "gen_ai.response.finish_reasons": ["stop"],
                "gen_ai.usage.input_tokens": 12,
                "prose.run.resumed": False,
                "error.type": "TransientProviderError",
            },
        ),
    ]
    assert encoder().request(batch) == sdk_bytes(batch)


_head = st.tuples(
    st.integers(min_value=1, max_value=2**128 - 1).map(lambda t: f"{t:032x}"),
    ids64,
    st.none() | ids64,
    st.sampled_from([code.value for code in StatusCode]),
    st.none() | st.text(max_size=30),
    st.integers(min_value=0, max_value=2**63),
    st.integers(min_value=0, max_value=2**63),
)
_words = st.sampled_from(["session", "gpt-4.1", "openai", "", "1", "stop", "é", "w" * 99, "é" * 70])
_small = st.none() | st.integers(min_value=0, max_value=3) | st.booleans()
statements = st.tuples(
    _head,
    _words,
    _words,
    _words,
    st.integers(min_value=0, max_value=3),
    st.none() | _words,
    st.none() | _words,  # the agent of a session
    st.none() | _words,  # the conversation (the run's id)
).map(lambda r: (STATEMENT, *r[0], *r[1:]))
_servers = st.just((None, None)) | st.tuples(_words, st.integers(min_value=1, max_value=65535))
calls = st.tuples(
    _head,
    st.tuples(_words, _words, _small, st.none() | st.floats(0, 2) | _small, _words, _words),
    st.tuples(_words, _small, st.none() | _words, _small, _small, st.none() | _words),
    st.tuples(st.none() | _words, st.none() | _words, st.none() | _words),
    st.tuples(st.none() | _words, st.none() | _words),
    st.tuples(_small, _small),  # prompt-cache reads and writes
    st.none() | _words,  # the conversation
    _servers,
).map(lambda r: (CALL, *r[0], *r[1], *r[2], *r[3], *r[4], *r[5], r[6], *r[7]))


@settings(max_examples=300, deadline=None)
@given(st.lists(statements | calls | records, min_size=1, max_size=8))
def test_a_sessions_flat_records_encode_as_their_full_records(batch: list[Any]) -> None:
    """The statement and model call spans travel as flat tuples and are encoded from cached
    runs of attributes: the bytes are those of the full records (and so the SDK's), with
    the cache cold and warm, whatever values repeat (True, 1 and 1.0 among them)."""
    full: list[Record] = [expand(record) for record in batch]
    one = encoder()
    assert one.request(batch) == sdk_bytes(full)
    assert one.request(batch) == encoder().request(full)


@settings(max_examples=100, deadline=None)
@given(records, st.lists(st.tuples(records.map(lambda r: r[1]), ids64), min_size=1, max_size=3))
def test_a_span_linked_to_another_processs_span_is_encoded_as_the_sdk_does(
    record: Record, links: list[tuple[str, int]]
) -> None:
    linked = (*record, tuple(links))
    assert encoder().request([linked]) == sdk_bytes([linked])  # type: ignore[list-item]


def test_a_calls_cache_counts_are_its_genai_usage_attributes() -> None:
    """`gen_ai.usage.cache_read.input_tokens` and `..cache_creation..`: when the provider
    reported some, and never on a failed attempt."""
    head = ("0" * 31 + "1", 2, None, 0, None, 1, 2, "s1", "m", 64, None, "sonnet", "anthropic")
    answered = (CALL, *head, "session", 1, "stop", 3000, 10, "m", "id", None, None, None, None)
    attributes = expand((*answered, 2900, 90, None, None, None))[-1]
    assert attributes["gen_ai.usage.cache_read.input_tokens"] == 2900
    assert attributes["gen_ai.usage.cache_creation.input_tokens"] == 90
    plain = expand((*answered, 0, 0, None, None, None))[-1]
    assert not any("cache" in key for key in plain)
    failed = (CALL, *head, "session", 1, None, None, None, None, None, "E", None, None, None)
    assert not any("cache" in key for key in expand((*failed, 0, 0, None, None, None))[-1])

"""The GenAI client metrics: what each model call span measures, the export helper's OTLP
encoding of the totals, and the SDK's histograms given the same calls agree."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra is not installed")

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.metrics.v1.metrics_pb2 import AggregationTemporality
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from openprose.telemetry.metrics import (
    OPERATION_DURATION,
    TOKEN_USAGE,
    CallMetrics,
    SdkCallMetrics,
    call_points,
    export_interval,
    metrics_wanted,
)
from openprose.telemetry.otlp import CALL, STATEMENT

# The boundaries the GenAI conventions give each histogram (gen-ai-metrics.md).
DURATION_BOUNDS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48,
                   40.96, 81.92]  # fmt: skip
TOKEN_BOUNDS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304,
                16777216, 67108864]  # fmt: skip
SECOND = 1_000_000_000


def call(
    seconds: float,
    *,
    tokens: tuple[int, int] = (3000, 10),
    cache: tuple[int, int] = (0, 0),
    error: str | None = None,
    server: tuple[str | None, int | None] = ("api.example.test", 8443),
) -> tuple[Any, ...]:
    """A model call span's record (`otlp.CALL`), answered unless `error`."""
    answered = error is None
    return (
        CALL, "0" * 31 + "1", 2, None, 0 if answered else 2, error, 5 * SECOND,
        5 * SECOND + round(seconds * SECOND), "1", "gpt-4.1", 1024, None, "sonnet", "openai",
        "session", 1, "stop" if answered else None, tokens[0] if answered else None,
        tokens[1] if answered else None, "gpt-4.1-2025" if answered else None, "id-1", error,
        None, None, None, cache[0], cache[1], "run-1", *server,
    )  # fmt: skip


COMMON = {
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": "openai",
    "gen_ai.request.model": "gpt-4.1",
    "server.address": "api.example.test",
    "server.port": 8443,
}


def test_an_answered_call_measures_its_duration_and_its_tokens_by_type() -> None:
    points = call_points(call(0.25, cache=(2900, 0)))
    answered = {**COMMON, "gen_ai.response.model": "gpt-4.1-2025"}
    assert [(name, value, dict(attributes)) for name, value, attributes in points] == [
        (OPERATION_DURATION, 0.25, answered),
        (TOKEN_USAGE, 3000, {**answered, "gen_ai.token.type": "input"}),
        (TOKEN_USAGE, 10, {**answered, "gen_ai.token.type": "output"}),
        # a part of `input`: the provider reported cache reads, and no cache writes
        (TOKEN_USAGE, 2900, {**answered, "gen_ai.token.type": "cache_read"}),
    ]


def test_a_failed_call_measures_its_duration_with_its_error_and_no_tokens() -> None:
    (point,) = call_points(call(1.5, error="TransientProviderError", server=(None, None)))
    name, value, attributes = point
    assert (name, value) == (OPERATION_DURATION, 1.5)
    assert dict(attributes) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4.1",
        "error.type": "TransientProviderError",
    }


def decoded(metrics: CallMetrics) -> ExportMetricsServiceRequest:
    body = metrics.request({"service.name": "metrics-test"}, "openprose", "https://schema")
    assert body is not None
    return ExportMetricsServiceRequest.FromString(body)


def _value(value: Any) -> Any:
    return value.int_value if value.HasField("int_value") else value.string_value


def points_of(request: ExportMetricsServiceRequest) -> dict[str, dict[frozenset[Any], Any]]:
    """Each metric's data points by their attributes (values as Python values)."""
    found: dict[str, dict[frozenset[Any], Any]] = {}
    for resource in request.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                found[metric.name] = {
                    frozenset((a.key, _value(a.value)) for a in point.attributes): point
                    for point in metric.histogram.data_points
                }
    return found


def test_the_helpers_request_holds_both_histograms_as_the_conventions_give_them() -> None:
    metrics = CallMetrics()
    assert metrics.request({}, "openprose") is None  # nothing to export before a call
    metrics.add([call(0.005), call(0.3), call(100.0), (STATEMENT,), call(2.0, error="Boom")])
    request = decoded(metrics)
    (resource,) = request.resource_metrics
    assert [(a.key, a.value.string_value) for a in resource.resource.attributes] == [
        ("service.name", "metrics-test")
    ]
    assert resource.schema_url == "https://schema"
    (scope,) = resource.scope_metrics
    assert scope.scope.name == "openprose"
    shapes = {m.name: (m.unit, m.description, m.histogram.aggregation_temporality)
              for m in scope.metrics}  # fmt: skip
    cumulative = AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE
    assert shapes == {
        OPERATION_DURATION: ("s", "GenAI operation duration.", cumulative),
        TOKEN_USAGE: ("{token}", "Number of input and output tokens used.", cumulative),
    }
    points = points_of(request)
    answered = {**COMMON, "gen_ai.response.model": "gpt-4.1-2025"}
    durations = points[OPERATION_DURATION]
    assert set(durations) == {
        frozenset(answered.items()),
        frozenset({**COMMON, "error.type": "Boom"}.items()),
    }
    timed = durations[frozenset(answered.items())]
    assert list(timed.explicit_bounds) == DURATION_BOUNDS
    assert timed.count == 3 and timed.sum == pytest.approx(100.305)
    assert (timed.min, timed.max) == (0.005, 100.0)
    expected = [0] * 15
    expected[0] = expected[5] = expected[14] = 1  # <= 0.01, (0.16, 0.32], beyond 81.92
    assert list(timed.bucket_counts) == expected
    assert timed.time_unix_nano >= timed.start_time_unix_nano > 0
    tokens = points[TOKEN_USAGE]
    assert {dict(key)["gen_ai.token.type"] for key in tokens} == {"input", "output"}
    (inputs,) = [p for key, p in tokens.items() if ("gen_ai.token.type", "input") in key]
    assert list(inputs.explicit_bounds) == TOKEN_BOUNDS
    assert (inputs.count, inputs.sum, inputs.min, inputs.max) == (3, 9000, 3000, 3000)
    assert list(inputs.bucket_counts) == [0] * 6 + [3] + [0] * 8  # (1024, 4096]
    # Cumulative: the next export holds every call so far.
    metrics.add([call(0.3)])
    again = points_of(decoded(metrics))[OPERATION_DURATION][frozenset(answered.items())]
    assert again.count == 4 and again.start_time_unix_nano == timed.start_time_unix_nano


def _summary(p: Any) -> tuple[Any, ...]:
    """A histogram data point's values (an SDK point or a decoded OTLP one)."""
    return (p.count, p.sum, list(p.bucket_counts), list(p.explicit_bounds), p.min, p.max)


def test_the_sdks_histograms_agree_with_the_helpers_encoding() -> None:
    records = [call(0.005, cache=(2900, 120)), call(0.7), call(90.0, tokens=(70_000_000, 0)),
               call(0.02, error="TimeoutError"), call(0.3, server=(None, None))]  # fmt: skip
    reader = InMemoryMetricReader()
    sdk = SdkCallMetrics(MeterProvider(metric_readers=[reader]), "openprose")
    for record in records:
        sdk.add(record)
    ours = CallMetrics()
    ours.add(records)

    data = reader.get_metrics_data()
    assert data is not None
    from_sdk = {
        metric.name: {
            frozenset(point.attributes.items()): _summary(point)
            for point in metric.data.data_points
        }
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
    }
    encoded = {
        name: {key: _summary(point) for key, point in points.items()}
        for name, points in points_of(decoded(ours)).items()
    }
    assert encoded == from_sdk
    types = {dict(key)["gen_ai.token.type"] for key in encoded[TOKEN_USAGE]}
    assert types == {"input", "output", "cache_read", "cache_creation"}


def test_metrics_go_where_the_environment_sends_them() -> None:
    assert metrics_wanted({}, "otlp")
    assert not metrics_wanted({}, "console")
    assert not metrics_wanted({"OTEL_METRICS_EXPORTER": "none"}, "otlp")
    assert metrics_wanted({"OTEL_METRICS_EXPORTER": "otlp"}, "console")
    # A collector configured for traces alone is not sent metrics...
    assert not metrics_wanted({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c/v1/traces"}, "otlp")
    # ...unless metrics have an endpoint too.
    both = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c/t", "OTEL_EXPORTER_OTLP_ENDPOINT": "x"}
    assert metrics_wanted(both, "otlp")
    with pytest.raises(ValueError, match="OTEL_METRICS_EXPORTER='prometheus'"):
        metrics_wanted({"OTEL_METRICS_EXPORTER": "prometheus"}, "otlp")
    assert export_interval({}) == 60.0
    assert export_interval({"OTEL_METRIC_EXPORT_INTERVAL": "1500"}) == 1.5
    assert export_interval({"OTEL_METRIC_EXPORT_INTERVAL": "soon"}) == 60.0


def test_an_exporter_of_metrics_we_do_not_have_is_named_before_the_run() -> None:
    from openprose.telemetry.spans import TracingUnavailable, open_tracer

    with pytest.raises(TracingUnavailable, match="OTEL_METRICS_EXPORTER='prometheus'"):
        open_tracer({"OTEL_METRICS_EXPORTER": "prometheus"})

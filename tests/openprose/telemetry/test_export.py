"""The export helper (`python -m openprose.telemetry.export`): frames in, OTLP requests out."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra is not installed")

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from openprose.telemetry.otlp import Record, frame
from tests.support.otlp_collector import running_collector

TRACE = "0af7651916cd43dd8448eb211c80319c"


def records(first: int, count: int) -> list[Record]:
    return [
        (f"span {i}", TRACE, i + 1, None, 0, 0, None, 10 + i, 20 + i, {"prose.step": str(i)})
        for i in range(first, first + count)
    ]


def helper(data: bytes, **env: str) -> subprocess.CompletedProcess[bytes]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return subprocess.run(
        [sys.executable, "-m", "openprose.telemetry.export"],
        input=data,
        env={**environ, **env},
        capture_output=True,
        timeout=60,
        check=False,
    )


def test_every_span_is_sent_once_in_requests_of_the_batch_size() -> None:
    torn = frame(records(7, 2))[:-5]  # the run died while writing its last frame
    with running_collector() as collector:
        done = helper(
            frame(records(0, 5)) + frame(records(5, 2)) + torn,
            OTEL_EXPORTER_OTLP_ENDPOINT=collector.url,
            OTEL_BSP_MAX_EXPORT_BATCH_SIZE="3",
            OTEL_SERVICE_NAME="helper-test",
        )
    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr
    names, sizes, services = [], [], set()
    for received in collector.requests:
        request = ExportTraceServiceRequest.FromString(received.body)
        for resource_spans in request.resource_spans:
            services |= {
                a.value.string_value
                for a in resource_spans.resource.attributes
                if a.key == "service.name"
            }
            for scope in resource_spans.scope_spans:
                assert scope.scope.name == "openprose"
                sizes.append(len(scope.spans))
                names += [span.name for span in scope.spans]
    assert names == [f"span {i}" for i in range(7)]
    assert max(sizes) <= 3
    assert services == {"helper-test"}


def test_the_console_exporter_goes_through_the_sdk() -> None:
    done = helper(frame(records(0, 2)), OTEL_TRACES_EXPORTER="console")
    assert done.returncode == 0, done.stderr
    printed = done.stdout + done.stderr
    assert b'"name": "span 0"' in printed and b'"name": "span 1"' in printed


def test_a_resource_handed_over_spares_the_helper_the_sdk() -> None:
    """`prose run --trace` hands the helper its resource: the helper then exports with it
    and loads no part of the OpenTelemetry SDK (nor http.client, asyncio or random: a third
    of its start), for a quicker start. (`typing` it does load: httptools, the HTTP parser
    it shares with the providers, imports it.)"""
    import json

    from openprose.telemetry.otlp_http import RESOURCE_VARIABLE, resource_for_helper

    handed = resource_for_helper(dict(os.environ))
    assert handed is not None
    attributes, _ = json.loads(handed)
    assert attributes["service.name"] == os.environ.get("OTEL_SERVICE_NAME", "openprose")
    assert resource_for_helper({**os.environ, "OTEL_SERVICE_NAME": "other"}) is None
    resource = json.dumps([{"service.name": "handed-over", "k": [1, 2]}, ""])
    check = (
        "import sys\n"
        "from openprose.telemetry.export import main\n"
        "assert main() == 0\n"
        "unwanted = ('http.client', 'asyncio', 'random')\n"
        "loaded = [m for m in sys.modules if m.startswith('opentelemetry') or m in unwanted]\n"
        "assert not loaded, loaded\n"
    )
    with running_collector() as collector:
        environ = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        done = subprocess.run(
            [sys.executable, "-c", check],
            input=frame(records(0, 3)),
            env={
                **environ,
                "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url,
                RESOURCE_VARIABLE: resource,
            },
            capture_output=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    (received,) = collector.requests
    (spans,) = ExportTraceServiceRequest.FromString(received.body).resource_spans
    shown = {a.key: a.value for a in spans.resource.attributes}
    assert shown["service.name"].string_value == "handed-over"
    assert [v.int_value for v in shown["k"].array_value.values] == [1, 2]
    assert len(spans.scope_spans[0].spans) == 3


def calls(count: int) -> list[tuple[object, ...]]:
    """Model call span records (`otlp.CALL`), each answered with 100 input tokens."""
    from openprose.telemetry.otlp import CALL

    head = (TRACE, None, 0, None, 10)
    asked = ("1", "gpt-4.1", 64, None, "sonnet", "openai", "session", 1)
    answered = ("stop", 100, 5, "gpt-4.1", "id", None, None, None, None, 0, 0)
    server = ("run-1", "api.example.test", 443)
    return [
        (CALL, head[0], i + 1, *head[1:], 20 + i, *asked, *answered, *server) for i in range(count)
    ]


def token_counts(request: object) -> dict[str, int]:
    """`gen_ai.client.token.usage` counts by token type in one metrics request."""
    counts = {}
    for resource in request.resource_metrics:  # type: ignore[attr-defined]
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == "gen_ai.client.token.usage":
                    for point in metric.histogram.data_points:
                        kind = {a.key: a.value.string_value for a in point.attributes}
                        counts[kind["gen_ai.token.type"]] = point.count
    return counts


def test_the_helper_sends_the_calls_metrics_as_it_goes_and_at_the_end() -> None:
    with running_collector() as collector:
        done = helper(
            frame(calls(2)) + frame(records(0, 1)) + frame(calls(3)),
            OTEL_EXPORTER_OTLP_ENDPOINT=collector.url,
            OTEL_METRIC_EXPORT_INTERVAL="0",  # after every batch, and at the end
        )
    assert done.returncode == 0, done.stderr
    assert not done.stderr
    sent = collector.metrics()
    assert len(sent) >= 2  # once after a batch of spans, once at the end
    assert collector.requests[-1].path == "/v1/metrics"  # the last word: after every span
    assert token_counts(sent[-1]) == {"input": 5, "output": 5}  # the totals: cumulative
    assert len(collector.spans()) == 6


@pytest.mark.parametrize(
    "settings",
    [
        {"OTEL_METRICS_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "{url}"},
        {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "{url}/v1/traces"},  # a traces collector
    ],
)
def test_no_metrics_are_sent_where_the_environment_says_none(settings: dict[str, str]) -> None:
    with running_collector() as collector:
        done = helper(
            frame(calls(2)), **{k: v.format(url=collector.url) for k, v in settings.items()}
        )
    assert done.returncode == 0, done.stderr
    assert not collector.metrics()
    assert len(collector.spans()) == 2

"""The export helper (`python -m openprose.vm.otel_export`): frames in, OTLP requests out."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra is not installed")

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from openprose.vm.otlp import Record, frame
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
        [sys.executable, "-m", "openprose.vm.otel_export"],
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

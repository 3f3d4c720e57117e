"""The export helper (`python -m openprose.vm.otel_export`): frames in, OTLP requests out."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra is not installed")

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from openprose.vm.otlp import Record, frame

TRACE = "0af7651916cd43dd8448eb211c80319c"


class Receiver(BaseHTTPRequestHandler):
    bodies: ClassVar[list[bytes]] = []

    def do_POST(self) -> None:
        type(self).bodies.append(self.rfile.read(int(self.headers.get("content-length") or 0)))
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        return None


@pytest.fixture
def receiver() -> Iterator[str]:
    Receiver.bodies = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


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


def test_every_span_is_sent_once_in_requests_of_the_batch_size(receiver: str) -> None:
    torn = frame(records(7, 2))[:-5]  # the run died while writing its last frame
    done = helper(
        frame(records(0, 5)) + frame(records(5, 2)) + torn,
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver,
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE="3",
        OTEL_SERVICE_NAME="helper-test",
    )
    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr
    names, sizes, services = [], [], set()
    for body in Receiver.bodies:
        request = ExportTraceServiceRequest.FromString(body)
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

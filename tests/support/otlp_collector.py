"""A loopback OTLP/HTTP collector for tests: notes every request, answers 200 unless told
otherwise, and decodes what it received with the OpenTelemetry protobuf classes."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

METRICS_PATH = "/v1/metrics"


@dataclass
class Received:
    path: str
    headers: dict[str, str]  # names lower-cased
    body: bytes


@dataclass
class Collector:
    url: str  # http://127.0.0.1:PORT
    requests: list[Received] = field(default_factory=list)
    answers: list[tuple[int, dict[str, str]]] = field(default_factory=list)  # then 200s

    def spans(self) -> list[Any]:
        """Every span received, in order (`opentelemetry.proto` Span messages)."""
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        return [
            span
            for received in self.requests
            if not received.path.endswith(METRICS_PATH)
            for resource_spans in ExportTraceServiceRequest.FromString(received.body).resource_spans
            for scope in resource_spans.scope_spans
            for span in scope.spans
        ]

    def metrics(self) -> list[Any]:
        """The `ExportMetricsServiceRequest`s received at `/v1/metrics`, in order."""
        from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
            ExportMetricsServiceRequest,
        )

        return [
            ExportMetricsServiceRequest.FromString(received.body)
            for received in self.requests
            if received.path.endswith(METRICS_PATH)
        ]


@contextmanager
def running_collector() -> Iterator[Collector]:
    collector = Collector("")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            named = {k.lower(): v for k, v in self.headers.items()}
            collector.requests.append(Received(self.path, named, body))
            status, extra = collector.answers.pop(0) if collector.answers else (200, {})
            self.send_response(status)
            for key, value in extra.items():
                self.send_header(key, value)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    collector.url = f"http://127.0.0.1:{server.server_port}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield collector
    finally:
        server.shutdown()
        server.server_close()

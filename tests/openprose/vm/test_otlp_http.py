"""The export helper's OTLP/HTTP sender reads the standard settings and retries as the SDK
does, against a loopback receiver the tests start."""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from openprose.vm.otlp_http import OtlpHttp, endpoint, headers


class Collector(BaseHTTPRequestHandler):
    """Answers with the statuses queued in `answers` (then 200), noting each request."""

    seen: ClassVar[list[tuple[str, dict[str, str], bytes]]] = []
    answers: ClassVar[list[tuple[int, dict[str, str]]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        type(self).seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        status, extra = type(self).answers.pop(0) if type(self).answers else (200, {})
        self.send_response(status)
        for key, value in extra.items():
            self.send_header(key, value)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        return None


@pytest.fixture
def collector() -> Iterator[str]:
    Collector.seen, Collector.answers = [], []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


def test_the_endpoint_is_resolved_as_the_sdk_does() -> None:
    assert endpoint({}) == "http://localhost:4318/v1/traces"
    assert endpoint({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"}) == "http://c:4318/v1/traces"
    both = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://t:1/custom",
    }
    assert endpoint(both) == "https://t:1/custom"  # the signal's own URL is used as it is


def test_headers_are_url_decoded_pairs() -> None:
    assert headers("Api-Key=a%20b, x=1=2,broken,=nokey") == {"api-key": "a b", "x": "1=2"}


def test_settings_headers_and_gzip_reach_the_collector(collector: str) -> None:
    env = {
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{collector}/custom/traces",
        "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20t0k",
        "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "gzip",
    }
    sender = OtlpHttp(env)
    assert sender.send(b"spans one") and sender.send(b"spans two")
    sender.close()
    assert [(path, gzip.decompress(body)) for path, _, body in Collector.seen] == [
        ("/custom/traces", b"spans one"),
        ("/custom/traces", b"spans two"),
    ]
    _, sent, _ = Collector.seen[0]
    assert sent["authorization"] == "Bearer t0k"
    assert sent["content-encoding"] == "gzip"
    assert sent["content-type"] == "application/x-protobuf"


def test_a_busy_collector_is_retried_after_its_retry_after(collector: str) -> None:
    Collector.answers = [(503, {"retry-after": "0"}), (429, {"retry-after": "0"})]
    sender = OtlpHttp({"OTEL_EXPORTER_OTLP_ENDPOINT": collector})
    assert sender.send(b"x")
    assert len(Collector.seen) == 3


def test_a_refused_batch_is_not_retried_and_is_reported(
    collector: str, capsys: pytest.CaptureFixture[str]
) -> None:
    Collector.answers = [(400, {})]
    sender = OtlpHttp({"OTEL_EXPORTER_OTLP_ENDPOINT": collector})
    assert not sender.send(b"x")
    assert len(Collector.seen) == 1
    said = capsys.readouterr().err
    assert "spans not exported" in said and "HTTP 400" in said


def test_a_collector_that_is_down_delays_the_run_once(capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sender = OtlpHttp(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}",
            "OTEL_EXPORTER_OTLP_TIMEOUT": "4",
        }
    )
    started = time.monotonic()
    assert not sender.send(b"x")
    first = time.monotonic() - started
    assert 1 < first < 4  # retried once after ~2 s, then the next backoff overruns the timeout
    started = time.monotonic()
    assert not sender.send(b"y") and not sender.send(b"z")
    assert time.monotonic() - started < 0.5  # later batches: one try each
    assert capsys.readouterr().err.count("spans not exported") == 3


def test_a_bad_endpoint_is_named() -> None:
    with pytest.raises(ValueError, match="not an http"):
        OtlpHttp({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "grpc://collector:4317"})

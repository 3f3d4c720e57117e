"""The export helper's OTLP/HTTP sender reads the standard settings and retries as the SDK
does, against a loopback receiver the tests start."""

from __future__ import annotations

import gzip
import time
from collections.abc import Iterator

import pytest

from openprose.vm.otlp_http import OtlpHttp, endpoint, headers
from tests.support.otlp_collector import Collector, running_collector


@pytest.fixture
def collector() -> Iterator[Collector]:
    with running_collector() as running:
        yield running


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


def test_settings_headers_and_gzip_reach_the_collector(collector: Collector) -> None:
    env = {
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{collector.url}/custom/traces",
        "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20t0k",
        "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "gzip",
    }
    sender = OtlpHttp(env)
    assert sender.send(b"spans one") and sender.send(b"spans two")
    sender.close()
    assert [(r.path, gzip.decompress(r.body)) for r in collector.requests] == [
        ("/custom/traces", b"spans one"),
        ("/custom/traces", b"spans two"),
    ]
    sent = collector.requests[0].headers
    assert sent["authorization"] == "Bearer t0k"
    assert sent["content-encoding"] == "gzip"
    assert sent["content-type"] == "application/x-protobuf"


def test_a_busy_collector_is_retried_after_its_retry_after(collector: Collector) -> None:
    collector.answers += [(503, {"retry-after": "0"}), (429, {"retry-after": "0"})]
    sender = OtlpHttp({"OTEL_EXPORTER_OTLP_ENDPOINT": collector.url})
    assert sender.send(b"x")
    assert len(collector.requests) == 3


def test_a_refused_batch_is_not_retried_and_is_reported(
    collector: Collector, capsys: pytest.CaptureFixture[str]
) -> None:
    collector.answers.append((400, {}))
    sender = OtlpHttp({"OTEL_EXPORTER_OTLP_ENDPOINT": collector.url})
    assert not sender.send(b"x")
    assert len(collector.requests) == 1
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

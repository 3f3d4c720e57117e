"""The export helper's OTLP/HTTP sender reads the standard settings and retries as the SDK
does, against a loopback receiver the tests start."""

from __future__ import annotations

import asyncio
import gzip
import time
from collections.abc import Iterator

import pytest

from openprose.telemetry.otlp_http import OtlpHttp, endpoint, headers
from tests.support.otlp_collector import Collector, running_collector
from tests.support.raw_http_server import RawHttpServer, answer, respond_with
from tests.support.tls_proxy import ProxyServer


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
    assert "spans not exported" in said and "the collector answered HTTP 400" in said
    collector.answers.append((404, {}))
    assert not OtlpHttp({"OTEL_EXPORTER_OTLP_ENDPOINT": collector.url}).send(b"x")
    said = capsys.readouterr().err  # pointed at the wrong path: what to set
    assert "HTTP 404" in said and "collector's base URL, e.g. http://localhost:4318" in said


def _closed_port() -> int:
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_no_collector_at_all_is_said_in_one_line_without_waiting(
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    sender = OtlpHttp({"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_EXPORTER_OTLP_TIMEOUT": "4"})
    started = time.monotonic()
    assert not sender.send(b"x") and not sender.send(b"y") and not sender.send(b"z")
    assert time.monotonic() - started < 0.5  # refused: nothing to wait for
    said = capsys.readouterr().err
    assert said.count("\n") == 1, said  # one line for the stretch, not one a batch
    assert said.startswith(f"prose: spans not exported to {url}/v1/traces: connection refused")
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" in said and "dropped" in said
    assert "Errno" not in said and "Error" not in said


def test_the_default_endpoint_is_called_so() -> None:
    assert OtlpHttp({})._origin == " (the default endpoint)"
    assert OtlpHttp({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"})._origin == ""


def test_a_collector_that_went_down_delays_the_run_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with running_collector() as collector:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.url, "OTEL_EXPORTER_OTLP_TIMEOUT": "4"}
        sender = OtlpHttp(env)
        assert sender.send(b"w")
    started = time.monotonic()
    assert not sender.send(b"x")
    first = time.monotonic() - started
    assert 1 < first < 4  # it answered before: retried once after ~2 s, within the timeout
    started = time.monotonic()
    assert not sender.send(b"y") and not sender.send(b"z")
    assert time.monotonic() - started < 0.5  # later batches: one try each
    assert capsys.readouterr().err.count("spans not exported") == 1


def test_a_bad_endpoint_is_named() -> None:
    with pytest.raises(ValueError, match="not an http"):
        OtlpHttp({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "grpc://collector:4317"})


class RawServer:
    """A loopback server answering each request it reads with the next scripted bytes
    (HTTP/1.1 shapes http.server never sends: chunked bodies, kept-alive connections)."""

    def __init__(self, answers: list[bytes]) -> None:
        import socket
        import threading

        self.answers = answers
        self.requests: list[bytes] = []
        self.connections = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while self.answers:
            conn, _ = self.listener.accept()
            self.connections += 1
            with conn:
                data = b""
                while self.answers:
                    while b"\r\n\r\n" not in data:
                        chunk = conn.recv(65536)
                        if not chunk:
                            break
                        data += chunk
                    if b"\r\n\r\n" not in data:
                        break
                    head, _, data = data.partition(b"\r\n\r\n")
                    length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
                    while len(data) < length:
                        data += conn.recv(65536)
                    self.requests.append(head + b"\r\n\r\n" + data[:length])
                    data = data[length:]
                    answer = self.answers.pop(0)
                    conn.sendall(answer)
                    if b"connection: close" in answer.lower():
                        break


def test_kept_alive_chunked_and_closing_answers_are_read_to_their_end() -> None:
    server = RawServer(
        [
            b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello",
            (
                b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
                b"3;x=y\r\nabc\r\n2\r\nde\r\n0\r\ntrailer: 1\r\n\r\n"
            ),
            b"HTTP/1.1 503 Busy\r\nretry-after: 0\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nthe rest",
        ]
    )
    sender = OtlpHttp(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": server.url, "OTEL_EXPORTER_OTLP_HEADERS": "k=v"}
    )
    assert sender.send(b"one") and sender.send(b"two")
    assert sender.send(b"three")  # 503, retried at once on the same connection
    assert server.connections == 1 and len(server.requests) == 4
    first = server.requests[0]
    assert first.startswith(b"POST /v1/traces HTTP/1.1\r\n")
    assert b"\r\nhost: 127.0.0.1:" in first and b"\r\nk: v\r\n" in first
    assert first.endswith(b"content-length: 3\r\n\r\none")
    assert sender._client._socket is None  # closed with the answer that said so
    sender.close()


def test_an_answer_that_is_not_http_is_a_failed_export(capsys: pytest.CaptureFixture[str]) -> None:
    server = RawServer([b"SMTP ready\r\n\r\n", b"SMTP ready\r\n\r\n"])
    sender = OtlpHttp(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": server.url, "OTEL_EXPORTER_OTLP_TIMEOUT": "1"}
    )
    assert not sender.send(b"x")
    assert "the server's answer does not start like HTTP: 'SMTP ready" in capsys.readouterr().err
    sender.close()


async def test_the_environments_proxy_is_honoured_as_the_sdks_exporter_did(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with RawHttpServer(respond_with(answer(b""))) as collector, ProxyServer() as proxy:
        for name in ("no_proxy", "NO_PROXY", "http_proxy"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
        sender = OtlpHttp({"OTEL_EXPORTER_OTLP_ENDPOINT": collector.url})
        assert await asyncio.to_thread(sender.send, b"spans")
        sender.close()
    assert proxy.seen[0].startswith(f"POST {collector.url}/v1/traces HTTP/1.1".encode())
    assert collector.requests[0].body == b"spans"


def test_a_proxy_setting_that_cannot_be_used_is_said_once_and_nothing_is_sent(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("no_proxy", "NO_PROXY", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", "socks5://127.0.0.1:1080")
    sender = OtlpHttp({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"})
    assert not sender.send(b"x") and not sender.send(b"y")
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and "SOCKS proxies are not supported" in said, said
    assert "HTTP_PROXY" in said

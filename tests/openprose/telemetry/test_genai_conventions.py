"""A run's telemetry speaks the current OpenTelemetry GenAI conventions: the conversation is
the run, a session of an agent is an `invoke_agent` span, a call names the server it went to,
statements say where they are (`code.*`), the client metrics are exported with the spans,
and a run resumed after kill -9 links to the attempt before it without a dangling parent."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra is not installed")

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from openprose.providers import ModelRequest, ModelResponse
from openprose.providers.base import Usage
from openprose.telemetry.otel import OtelTracer
from tests.openprose.telemetry.test_tracing import run_traced
from tests.support.fake_llm_server import start_in_subprocess
from tests.support.otlp_collector import running_collector

AGENTS = """\
agent writer:
  prompt: "You write"
output results = ["a", "b", "c"] | pmap:
  session: writer
    prompt: "Item {item}"
let plain = session "no agent here"
"""


class CachingProvider:
    """Answers at once, as a provider at `url` whose prompt cache served most of the prompt."""

    name = "openai"
    url = "https://api.example.test:8443/v1/chat/completions"

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse("ok", Usage(3000, 10, 2900, 0), "stop", "req-1", "gpt-4.1-2025")

    async def aclose(self) -> None:
        return None


def test_a_runs_spans_and_metrics_follow_the_genai_conventions(vm: Any) -> None:
    exporter = InMemorySpanExporter()
    reader = InMemoryMetricReader()
    tracer = OtelTracer(
        SimpleSpanProcessor(exporter), meter_provider=MeterProvider(metric_readers=[reader])
    )
    result = run_traced(vm, AGENTS, tracer, provider=CachingProvider())
    assert result.status == "succeeded", result.error
    spans = list(exporter.get_finished_spans())
    agents = [s for s in spans if s.name == "invoke_agent writer"]
    assert len(agents) == 3  # one per item
    for span in agents:
        assert span.kind.name == "INTERNAL"  # an agent run in process
        assert span.attributes["gen_ai.operation.name"] == "invoke_agent"
        assert span.attributes["gen_ai.agent.name"] == "writer"
        assert span.attributes["gen_ai.conversation.id"] == result.run_id
        assert span.attributes["code.line.number"] == 4
        assert str(span.attributes["code.file.path"]).endswith("main.prose")
    calls = [s for s in spans if s.name.startswith("chat ")]
    assert len(calls) == 4
    for span in calls:
        assert span.kind.name == "CLIENT"
        assert span.attributes["gen_ai.conversation.id"] == result.run_id
        assert span.attributes["server.address"] == "api.example.test"
        assert span.attributes["server.port"] == 8443
        assert span.attributes["gen_ai.usage.input_tokens"] == 3000
        assert span.attributes["gen_ai.usage.cache_read.input_tokens"] == 2900
    agent_ids = {s.context.span_id for s in agents}
    inside_agents = [s for s in calls if s.parent is not None and s.parent.span_id in agent_ids]
    assert len(inside_agents) == 3  # each agent's call is its child
    (plain,) = [s for s in spans if s.name == "let"]
    assert "gen_ai.agent.name" not in (plain.attributes or {})
    data = reader.get_metrics_data()
    assert data is not None
    points = {
        (metric.name, point.attributes.get("gen_ai.token.type")): point
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        for point in metric.data.data_points
    }
    assert set(points) == {
        ("gen_ai.client.operation.duration", None),
        ("gen_ai.client.token.usage", "input"),
        ("gen_ai.client.token.usage", "output"),
        ("gen_ai.client.token.usage", "cache_read"),
    }
    cache_reads = points[("gen_ai.client.token.usage", "cache_read")]
    assert (cache_reads.count, cache_reads.sum) == (4, 4 * 2900)
    assert points[("gen_ai.client.operation.duration", None)].count == 4
    assert cache_reads.attributes["server.address"] == "api.example.test"


def environment(**extra: str) -> dict[str, str]:
    environ = {
        k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PROSE_", "OPENAI_"))
    }
    return {**environ, "PYTHONUNBUFFERED": "1", **extra}


def test_prose_run_trace_exports_conventional_spans_and_metrics_by_otlp(tmp_path: Path) -> None:
    """`prose run --trace` against an OpenAI-compatible server: the spans and the metrics
    reach the loopback collector, naming the server and the run."""
    (tmp_path / "main.prose").write_text('session "hello"\nsession "again"\n')
    base_url, stop = start_in_subprocess()
    try:
        with running_collector() as collector:
            done = subprocess.run(
                [sys.executable, "-m", "openprose.cli", "run", "main.prose", "--trace", "--json"]
                + ["--provider", "openai"],
                cwd=tmp_path,
                env=environment(
                    OTEL_EXPORTER_OTLP_ENDPOINT=collector.url,
                    OPENAI_BASE_URL=f"{base_url}/v1",
                    OPENAI_API_KEY="sk-test",
                ),
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
    finally:
        stop()
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    run_id = json.loads(done.stdout)["run_id"]
    port = int(base_url.rsplit(":", 1)[1])
    spans = collector.spans()

    def attributes(span: Any) -> dict[str, Any]:
        return {a.key: getattr(a.value, a.value.WhichOneof("value")) for a in span.attributes}

    calls = [attributes(s) for s in spans if s.name.startswith("chat ")]
    assert len(calls) == 2
    for call in calls:
        assert call["server.address"] == "127.0.0.1" and call["server.port"] == port
        assert call["gen_ai.conversation.id"] == run_id
        assert call["gen_ai.provider.name"] == "openai"
    lines = sorted(attributes(s)["code.line.number"] for s in spans if s.name == "session")
    assert lines == [1, 2]
    (request, *_) = collector.metrics()
    (resource,) = request.resource_metrics
    (scope,) = resource.scope_metrics
    assert scope.scope.name == "openprose"
    found = {}
    for metric in scope.metrics:
        for point in metric.histogram.data_points:
            shown = {a.key: getattr(a.value, a.value.WhichOneof("value")) for a in point.attributes}
            assert shown["server.address"] == "127.0.0.1" and shown["server.port"] == port
            found[(metric.name, shown.get("gen_ai.token.type"))] = point.count
    assert found == {
        ("gen_ai.client.operation.duration", None): 2,
        ("gen_ai.client.token.usage", "input"): 2,
        ("gen_ai.client.token.usage", "output"): 2,
    }


def test_a_run_resumed_after_kill_9_links_to_the_killed_attempt(tmp_path: Path) -> None:
    """The killed attempt's run span never ends, so it is never exported by it: the resumed
    attempt writes it, and its own run span links to it as a root of the same trace; every
    parent a received span names was received."""
    (tmp_path / "main.prose").write_text('session "one"\nsession "two"\n')
    rules = {"default": "ok", "rules": [{"match": "two", "answer": "late", "latency_ms": 60000}]}
    (tmp_path / "rules.json").write_text(json.dumps(rules))
    command = [sys.executable, "-m", "openprose.cli"]
    with running_collector() as collector:
        env = environment(OTEL_EXPORTER_OTLP_ENDPOINT=collector.url)
        child = subprocess.Popen(
            [*command, "run", "main.prose", "--trace", "--provider", "scripted:rules.json"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 60
            while not any(s.name.startswith("chat ") for s in collector.spans()):
                assert time.monotonic() < deadline, "the first session's spans never arrived"
                time.sleep(0.05)
            child.send_signal(signal.SIGKILL)  # while the second session waits for its answer
            child.wait(timeout=10)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        time.sleep(0.5)  # the helper exports what it holds when its stdin closes
        killed = collector.spans()
        assert not any(s.name.startswith("prose run") for s in killed)  # never ended
        (run_dir,) = (tmp_path / ".prose" / "runs").iterdir()
        earlier = json.loads((run_dir / "run.json").read_text())["trace"]
        (tmp_path / "rules.json").write_text(json.dumps({"default": "ok", "rules": []}))
        resumed = subprocess.run(
            [*command, "resume", run_dir.name, "--trace", "--json"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert resumed.returncode == 0, resumed.stderr
        assert json.loads(resumed.stdout)["status"] == "succeeded"
        spans = collector.spans()
    later = spans[len(killed) :]
    lost, run_span = sorted(
        (s for s in later if s.name.startswith("prose run")), key=lambda s: len(s.links)
    )
    # The killed attempt's run span, written by the resume with its own ids: the spans the
    # killed attempt exported name it as their parent.
    assert (lost.trace_id.hex(), lost.span_id.hex()) == (earlier["trace_id"], earlier["span_id"])
    assert lost.status.code == lost.status.STATUS_CODE_ERROR
    assert {a.key: a.value.string_value for a in lost.attributes}["prose.run.status"] == "lost"
    assert lost.start_time_unix_nano == int(earlier["start"]) < lost.end_time_unix_nano
    assert run_span.parent_span_id == b""  # a root, not the child of the killed span
    assert run_span.trace_id.hex() == earlier["trace_id"]  # the run stays one trace
    (link,) = run_span.links
    assert (link.trace_id.hex(), link.span_id.hex()) == (earlier["trace_id"], earlier["span_id"])
    received = {s.span_id for s in spans}
    assert all(s.parent_span_id == b"" or s.parent_span_id in received for s in spans)
    assert any(s.name.startswith("chat ") for s in later)  # the second session, answered now

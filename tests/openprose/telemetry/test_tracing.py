"""OpenTelemetry traces of a run: the SDK's in-memory exporter, and a loopback OTLP/HTTP
receiver for `prose run --trace`."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra is not installed")

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)

from openprose.parser import parse_text
from openprose.record.events import (
    REGISTRY,
    RunFinished,
    RunStarted,
    SessionFinished,
    ToolCalled,
    ToolResulted,
)
from openprose.telemetry.otel import OtelTracer
from openprose.vm.runner import resume_run, run_program
from tests.support.otlp_collector import Collector, running_collector

PROGRAM = """\
parallel:
  a = session "first branch"
  b = session "second branch"
let picked = session "pick one of {a} {b}"
output results = ["x", "y", "z"] | pmap:
  session "item {item}"
"""


@pytest.fixture
def memory() -> Iterator[tuple[InMemorySpanExporter, SimpleSpanProcessor]]:
    exporter = InMemorySpanExporter()
    processor = SimpleSpanProcessor(exporter)
    yield exporter, processor
    processor.shutdown()


def run_traced(vm: Any, source: str, tracer: OtelTracer, **kwargs: Any) -> Any:
    parsed = parse_text(source, str(vm.project / "main.prose"))
    assert parsed.ok
    return asyncio.run(
        run_program(
            parsed.program,
            source,
            provider=kwargs.pop("provider", None) or vm.spy(),
            project_dir=vm.project,
            config=kwargs.pop("config", vm.FAST),
            tracer=tracer,
            **kwargs,
        )
    )


def children(spans: list[ReadableSpan], parent: ReadableSpan) -> list[ReadableSpan]:
    own = parent.context.span_id
    return [s for s in spans if s.parent is not None and s.parent.span_id == own]


def test_one_trace_per_run_with_statement_and_genai_spans(vm: Any, memory: Any) -> None:
    exporter, provider = memory
    slow = vm.spy(latency=0.05)  # so that concurrent items overlap in time
    result = run_traced(vm, PROGRAM, OtelTracer(provider), provider=slow)
    assert result.status == "succeeded", result.error
    spans = list(exporter.get_finished_spans())
    assert len({s.context.trace_id for s in spans}) == 1
    (root,) = [s for s in spans if s.parent is None]
    assert root.name == "prose run main.prose"
    assert root.attributes["prose.run.id"] == result.run_id
    assert root.attributes["prose.run.status"] == "succeeded"
    top = children(spans, root)
    assert [s.name for s in sorted(top, key=lambda s: s.start_time)] == [
        "parallel",
        "let",
        "output",
    ]
    parallel = next(s for s in top if s.name == "parallel")
    branches = children(spans, parallel)  # siblings under the parallel statement
    assert sorted((s.name, s.attributes["prose.step"]) for s in branches) == [
        ("branch", "1|1"),
        ("branch", "1|2"),
    ]
    assert all(len(children(spans, b)) == 1 for b in branches)  # each branch's model call
    (pipeline,) = children(spans, next(s for s in top if s.name == "output"))
    items = children(spans, pipeline)  # the pmap items, side by side
    assert sorted(s.attributes["prose.step"] for s in items) == ["3:1[0].1", "3:1[1].1", "3:1[2].1"]
    # overlapping in time: the items ran side by side, not one after another
    assert max(s.start_time for s in items) < min(s.end_time for s in items)
    calls = [s for s in spans if s.name.startswith("chat ")]
    assert len(calls) == 6
    call = calls[0]
    assert call.attributes["gen_ai.operation.name"] == "chat"
    assert call.attributes["gen_ai.request.model"] == "sonnet"
    assert call.attributes["gen_ai.provider.name"] == "scripted"
    assert call.attributes["gen_ai.usage.input_tokens"] > 0
    assert call.attributes["gen_ai.usage.output_tokens"] > 0
    assert list(call.attributes["gen_ai.response.finish_reasons"]) == ["stop"]
    assert call.kind.name == "CLIENT"
    # Content stays out unless capture is on.
    assert not any("gen_ai.input.messages" in s.attributes for s in calls)
    meta = json.loads((result.run_dir / "run.json").read_text())
    assert meta["trace"]["trace_id"] == f"{root.context.trace_id:032x}"


def test_content_is_captured_only_when_asked(vm: Any, memory: Any) -> None:
    exporter, provider = memory
    run_traced(vm, 'session "say hi"\n', OtelTracer(provider, capture_content=True))
    (call,) = [s for s in exporter.get_finished_spans() if s.name.startswith("chat ")]
    sent = json.loads(str(call.attributes["gen_ai.input.messages"]))
    assert sent[-1]["role"] == "user" and "say hi" in sent[-1]["parts"][0]["content"]
    answer = json.loads(str(call.attributes["gen_ai.output.messages"]))
    assert answer[0]["parts"][0]["content"] == "ok"


def test_a_failed_call_span_says_why(vm: Any, memory: Any) -> None:
    exporter, provider = memory
    parsed_source = 'session "x"\n  retry: 1\n'
    parsed = parse_text(parsed_source, str(vm.project / "main.prose"))
    spy = vm.spy([{"match": "x", "answer": "fine", "failures": ["transient"]}])
    result = asyncio.run(
        run_program(
            parsed.program,
            parsed_source,
            provider=spy,
            project_dir=vm.project,
            config=vm.FAST,
            tracer=OtelTracer(provider),
        )
    )
    assert result.status == "succeeded"
    calls = sorted(
        (s for s in exporter.get_finished_spans() if s.name.startswith("chat ")),
        key=lambda s: s.start_time,
    )
    assert [s.attributes["prose.call.attempt"] for s in calls] == [1, 2]
    assert calls[0].status.status_code.name == "ERROR"
    assert calls[0].attributes["error.type"]
    assert calls[1].status.status_code.name == "UNSET"


# --- a session statement's span (opened by `Sessions.run`, handed to its calls) -------------


def spans_under(exporter: InMemorySpanExporter, name: str) -> tuple[ReadableSpan, list[str]]:
    """The one span called `name` and the names of its children, sorted."""
    spans = list(exporter.get_finished_spans())
    (span,) = [s for s in spans if s.name == name]
    return span, sorted(s.name for s in children(spans, span))


def test_a_session_statements_retries_are_children_of_its_span(vm: Any, memory: Any) -> None:
    exporter, provider = memory
    spy = vm.spy([{"match": "x", "answer": "fine", "failures": ["transient"]}])
    tracer = OtelTracer(provider)
    result = run_traced(vm, 'session "x"\n  retry: 1\nsession "y"\n', tracer, provider=spy)
    assert result.status == "succeeded", result.error
    spans = list(exporter.get_finished_spans())
    statements = sorted((s for s in spans if s.name == "session"), key=lambda s: s.start_time)
    assert [s.attributes["prose.step"] for s in statements] == ["1", "2"]
    assert [s.attributes["code.line.number"] for s in statements] == [1, 3]
    first, second = ([c.attributes["prose.call.attempt"] for c in children(spans, s)]
                     for s in statements)  # fmt: skip
    assert sorted(first) == [1, 2] and second == [1]
    for statement in statements:  # each inside its statement, in time
        for call in children(spans, statement):
            assert statement.start_time <= call.start_time <= call.end_time <= statement.end_time
    (root,) = [s for s in spans if s.parent is None]
    assert all(s.parent is not None and s.parent.span_id == root.context.span_id
               for s in statements)  # fmt: skip


def test_a_session_inside_let_has_the_let_span_as_its_calls_parent(vm: Any, memory: Any) -> None:
    exporter, provider = memory
    result = run_traced(vm, 'let a = session "x"\n', OtelTracer(provider))
    assert result.status == "succeeded", result.error
    assert spans_under(exporter, "let")[1] == ["chat sonnet"]
    assert not [s for s in exporter.get_finished_spans() if s.name == "session"]


def test_a_session_statement_that_fails_before_its_call_ends_its_span_failed(
    vm: Any, memory: Any
) -> None:
    exporter, provider = memory
    source = 'agent keeper:\n  persist: true\nresume: keeper\n  prompt: "x"\n'
    result = run_traced(vm, source, OtelTracer(provider))
    assert result.status == "failed" and "E018" in (result.error or "")
    span, inside = spans_under(exporter, "invoke_agent keeper")  # a session of an agent
    assert inside == []  # no call was made
    assert span.status.status_code.name == "ERROR" and "E018" not in span.name
    assert span.attributes["error.type"] == "ProseRuntimeError"
    assert "no memory exists yet" in (span.status.description or "")


def test_a_memory_update_is_a_child_of_its_session_statement(vm: Any, memory: Any) -> None:
    from tests.openprose.vm.test_vm_agents import MEMORY_RULE, captain

    exporter, provider = memory
    source = captain("true") + 'session: captain\n  prompt: "One"\n'
    result = run_traced(vm, source, OtelTracer(provider), provider=vm.spy([MEMORY_RULE]))
    assert result.status == "succeeded", result.error
    spans = list(exporter.get_finished_spans())
    (statement,) = [s for s in spans if s.name == "invoke_agent captain"]
    kinds = sorted(s.attributes["prose.call.kind"] for s in children(spans, statement))
    assert kinds == ["memory", "session"]


@pytest.mark.parametrize("binding", ["", "let report = "])
def test_a_tool_loops_turns_and_tool_calls_are_children_of_its_statement(
    vm: Any, memory: Any, tmp_path: Path, binding: str
) -> None:
    from tests.openprose.vm.test_vm_tools import REVIEW_TURNS, REVIEWER, _project, _run

    exporter, provider = memory
    source = REVIEWER.replace("let report = ", binding)
    spy = vm.spy([{"match": "Review the code", "turns": REVIEW_TURNS}])
    result = _run(_project(tmp_path), source, spy, tracer=OtelTracer(provider))
    assert result.status == "succeeded", result.error
    if binding:  # the statement's span, then the agent's inside it
        let, (inside_let,) = spans_under(exporter, "let")
        assert inside_let == "invoke_agent reviewer" and let.attributes["prose.step"] == "2"
    span, inside = spans_under(exporter, "invoke_agent reviewer")
    assert span.attributes["prose.step"] == "2"
    assert inside == [
        *["chat sonnet"] * 4,
        "execute_tool list_files",
        "execute_tool read_file",
        "execute_tool read_file",
        "execute_tool write_file",
    ]


def test_the_tracer_subscribes_to_typed_events_and_spans_only_tool_calls(
    vm: Any, memory: Any
) -> None:
    """The tracer is a subscriber of `Shared.emit`: it hears the run's typed events, and
    only tool calls become spans of their own."""
    heard: list[Any] = []

    class Listening(OtelTracer):
        def on_event(self, event: Any, t: float) -> None:
            heard.append(event)
            super().on_event(event, t)

    result = run_traced(vm, PROGRAM, Listening(memory[1]))
    assert result.status == "succeeded", result.error
    assert heard and all(type(e) in REGISTRY.values() for e in heard)
    assert {type(e) for e in heard} >= {RunStarted, SessionFinished, RunFinished}
    assert not [s for s in memory[0].get_finished_spans() if s.name.startswith("execute_tool")]


def test_the_export_queue_gets_the_spans_the_in_memory_exporter_gets(vm: Any, memory: Any) -> None:
    """The records queued for the export helper are the spans a processor in this process
    is handed (ids and times aside), content capture included."""
    from collections import deque

    from openprose.telemetry.otel import span_of
    from openprose.telemetry.otlp import expand

    class Queue:  # what the tracer needs of an `ExportProcess`
        def __init__(self) -> None:
            self.records: deque[Any] = deque()

        def close(self) -> None:
            pass

    exporter, processor = memory
    queue = Queue()
    queued = OtelTracer(None, capture_content=True, export=queue)  # type: ignore[arg-type]
    assert run_traced(vm, PROGRAM, queued).status == "succeeded"
    run_traced(vm, PROGRAM, OtelTracer(processor, capture_content=True))
    resource = OtelTracer(processor).resource
    assert resource is not None

    def shape(span: ReadableSpan) -> tuple[Any, ...]:
        attributes = dict(span.attributes or {})
        attributes.pop("prose.run.id", None)
        attributes.pop("gen_ai.conversation.id", None)  # the run's id too: two runs
        return (span.name, span.kind, span.status.status_code, sorted(attributes.items()))

    exported = sorted(shape(span_of(expand(r), resource)) for r in queue.records)
    in_memory = sorted(shape(s) for s in exporter.get_finished_spans())
    assert len(exported) == len(in_memory) == 16
    assert exported == in_memory


def test_a_resumed_run_links_to_the_earlier_attempt_in_the_same_trace(vm: Any, memory: Any) -> None:
    """The earlier attempt's span may never have been exported (kill -9): the resumed run's
    span is a root of the same trace with a link to it, never its child."""
    exporter, provider = memory
    source = 'session "one"\nsession "two"\n'
    stopped = run_traced(vm, source, OtelTracer(provider), config=replace(vm.FAST, max_sessions=1))
    assert stopped.status == "stopped"
    first = {s.context.trace_id for s in exporter.get_finished_spans()}
    earlier_meta = json.loads((stopped.run_dir / "run.json").read_text())
    exporter.clear()
    parsed = parse_text(source, str(vm.project / "main.prose"))
    resumed = asyncio.run(
        resume_run(
            stopped.run_dir,
            parsed.program,
            provider=vm.spy(),
            project_dir=vm.project,
            config=vm.FAST,
            tracer=OtelTracer(provider),
        )
    )
    assert resumed.status == "succeeded"
    spans = list(exporter.get_finished_spans())
    assert {s.context.trace_id for s in spans} == first
    (run_span,) = [s for s in spans if s.name.startswith("prose run")]
    assert run_span.attributes["prose.run.resumed"] is True
    assert run_span.parent is None
    earlier = earlier_meta["trace"]
    (link,) = run_span.links
    assert f"{link.context.trace_id:032x}" == earlier["trace_id"]
    assert f"{link.context.span_id:016x}" == earlier["span_id"]
    # No span of the resumed attempt has a parent outside it.
    own = {s.context.span_id for s in spans}
    assert all(s.parent is None or s.parent.span_id in own for s in spans)
    # The next resume links to this attempt.
    meta = json.loads((stopped.run_dir / "run.json").read_text())
    assert meta["trace"]["span_id"] == f"{run_span.context.span_id:016x}"


def test_tool_calls_become_execute_tool_spans(memory: Any) -> None:
    exporter, provider = memory
    tracer = OtelTracer(provider)
    tracer.start_run("r1", "main.prose", None)
    call = {"id": "call_1", "name": "read_file", "arguments": {"path": "a.txt"}}
    tracer.on_event(ToolCalled(step="1", turn=1, index=0, call=call), 0.0)
    result = ToolResulted(
        step="1", turn=1, index=0, call_id="call_1", tool="read_file", content="no", is_error=True
    )
    tracer.on_event(result, 0.0)
    tracer.end_run("succeeded", None)
    spans = {s.name: s for s in exporter.get_finished_spans()}
    tool = spans["execute_tool read_file"]
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool.attributes["gen_ai.tool.call.id"] == "call_1"
    assert tool.status.status_code.name == "ERROR"
    assert (
        tool.parent is not None
        and tool.parent.span_id == spans["prose run main.prose"].context.span_id
    )


def traced_prose_run(
    tmp_path: Path, rules: str, env: dict[str, str], *flags: str
) -> tuple[subprocess.CompletedProcess[str], Collector]:
    """`prose run main.prose` (one session) in a fresh interpreter, its spans exported to a
    loopback collector; `env` names the collector with `{url}`."""
    (tmp_path / "rules.yaml").write_text(rules)
    (tmp_path / "main.prose").write_text('session "hello"\n')
    with running_collector() as collector:
        environ = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        environ.update({k: v.format(url=collector.url) for k, v in env.items()})
        done = subprocess.run(
            [sys.executable, "-m", "openprose.cli", "run", "main.prose", *flags]
            + ["--provider", "scripted:rules.yaml"],
            check=False,
            cwd=tmp_path,
            env=environ,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert "Traceback" not in done.stderr
    return done, collector


def test_prose_run_trace_exports_to_an_otlp_http_receiver(tmp_path: Path) -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "{url}", "OTEL_SERVICE_NAME": "prose-test"}
    done, collector = traced_prose_run(tmp_path, "rules: []\ndefault: fine\n", env)
    assert done.returncode == 0, done.stderr
    services = {
        attr.value.string_value
        for received in collector.requests
        if received.path == "/v1/traces"
        for resource_spans in ExportTraceServiceRequest.FromString(received.body).resource_spans
        for attr in resource_spans.resource.attributes
        if attr.key == "service.name"
    }
    assert services == {"prose-test"}
    spans = collector.spans()
    assert sorted(s.name for s in spans) == ["chat sonnet", "prose run main.prose", "session"]
    assert len({s.trace_id for s in spans}) == 1


def test_a_failing_prose_run_still_exports_every_span(tmp_path: Path) -> None:
    """`prose run --trace` exiting with an error flushes its spans before it exits."""
    rules = 'rules:\n  - match: "hello"\n    answer: "never"\n    failures: [error]\n'
    env = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "{url}/v1/traces"}
    done, collector = traced_prose_run(tmp_path, rules, env, "--trace")
    assert done.returncode == 1, done.stderr
    spans = collector.spans()
    assert sorted(s.name for s in spans) == ["chat sonnet", "prose run main.prose", "session"]
    assert all(s.status.code == s.status.STATUS_CODE_ERROR for s in spans)
    (call,) = [s for s in spans if s.name == "chat sonnet"]
    assert "injected error failure" in call.status.message


def test_no_part_of_the_sdk_loads_without_tracing(tmp_path: Path) -> None:
    (tmp_path / "rules.yaml").write_text("rules: []\ndefault: fine\n")
    (tmp_path / "main.prose").write_text('session "hello"\n')
    code = (
        "import sys\n"
        "from openprose.cli import main\n"
        "code = main(['run', 'main.prose', '--provider', 'scripted:rules.yaml'])\n"
        "assert code == 0, code\n"
        "loaded = [m for m in sys.modules if m.startswith('opentelemetry') or m == 'openprose.telemetry.otel']\n"
        "assert not loaded, loaded\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, check=True, timeout=120)


def test_trace_without_the_sdk_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "rules.yaml").write_text("rules: []\ndefault: fine\n")
    (tmp_path / "main.prose").write_text('session "hello"\n')
    code = (
        "import sys\n"
        "sys.modules['opentelemetry'] = None  # as if the [otel] extra were not installed\n"
        "from openprose.cli import main\n"
        "sys.exit(main(['run', 'main.prose', '--provider', 'scripted:rules.yaml', '--trace']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "pip install 'openprose[otel]'" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / ".prose").exists()  # refused before the run started


def test_a_run_inside_an_application_span_joins_its_trace(vm: Any, memory: Any) -> None:
    from opentelemetry.sdk.trace import TracerProvider

    exporter, processor = memory
    app = TracerProvider().get_tracer("app")
    with app.start_as_current_span("nightly job") as job:
        run_traced(vm, 'session "x"\n', OtelTracer(processor))
    (run_span,) = [s for s in exporter.get_finished_spans() if s.name.startswith("prose run")]
    assert run_span.context.trace_id == job.get_span_context().trace_id
    assert run_span.parent is not None and run_span.parent.span_id == job.get_span_context().span_id


def test_when_tracing_is_on() -> None:
    from openprose.telemetry.spans import wanted

    assert wanted(True, {})
    assert not wanted(False, {})
    assert wanted(False, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
    assert wanted(False, {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"})
    disabled = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}
    assert not wanted(False, disabled)
    assert wanted(True, disabled)


def test_an_exporter_we_cannot_honour_is_named() -> None:
    from openprose.telemetry.spans import TracingUnavailable, open_tracer

    with pytest.raises(TracingUnavailable, match="OTEL_TRACES_EXPORTER='zipkin'"):
        open_tracer({"OTEL_TRACES_EXPORTER": "zipkin"})
    tracer = open_tracer({"OTEL_TRACES_EXPORTER": "console", "OTEL_SERVICE_NAME": "svc"})
    tracer.shutdown()


@pytest.mark.parametrize(
    ("settings", "refused"),
    [
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "OTEL_EXPORTER_OTLP_PROTOCOL='grpc'"),
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, "OTEL_EXPORTER_OTLP_PROTOCOL='http/json'"),
        (
            {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_PROTOCOL": ""},
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL='grpc'",
        ),
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, None),
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "HTTP/Protobuf"}, None),
        # The traces setting wins over the general one, as in the SDK.
        (
            {
                "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
                "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
            },
            None,
        ),
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_TRACES_EXPORTER": "console"}, None),
    ],
)
def test_the_otlp_protocol_setting_is_honoured_or_refused_by_name(
    settings: dict[str, str], refused: str | None
) -> None:
    from openprose.telemetry.spans import TracingUnavailable, open_tracer

    if refused is not None:
        with pytest.raises(TracingUnavailable, match=refused.replace("/", ".")) as raised:
            open_tracer(settings)
        assert "http/protobuf" in str(raised.value) and "4318" in str(raised.value)
        return
    open_tracer(settings).shutdown()


def test_prose_run_trace_with_grpc_says_which_setting_to_change(tmp_path: Path) -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "{url}", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
    done, collector = traced_prose_run(tmp_path, "rules: []\ndefault: fine\n", env, "--trace")
    assert done.returncode != 0
    assert "OTEL_EXPORTER_OTLP_PROTOCOL='grpc'" in done.stderr
    assert not collector.requests  # refused before the run: nothing sent the wrong way


def test_the_python_api_traces_and_resumes_in_one_trace(
    tmp_path: Path, memory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import openprose

    exporter, processor = memory
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rules.yaml").write_text("rules: []\ndefault: fine\n")
    source = 'session "one"\nsession "two"\n'
    stopped = openprose.run(
        source, provider="scripted:rules.yaml", max_sessions=1, trace=OtelTracer(processor)
    )
    assert stopped.status == "stopped"
    done = openprose.resume(stopped.run_id, max_sessions=5, trace=OtelTracer(processor))
    assert done.status == "succeeded"
    runs = [s for s in exporter.get_finished_spans() if s.name.startswith("prose run")]
    assert len(runs) == 2 and len({s.context.trace_id for s in runs}) == 1
    assert (stopped.run_dir / "audit.ndjson").exists()
    # trace=False: no tracer even with an endpoint in the environment
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    exporter.clear()
    plain = openprose.run('session "x"\n', provider="scripted:rules.yaml", trace=False)
    assert plain.status == "succeeded" and exporter.get_finished_spans() == ()

"""The OpenTelemetry tracer (the `[otel]` extra): one trace per run, a span per statement
that runs, a GenAI client span per model call attempt, an `execute_tool` span per tool call.

Model call spans follow the OpenTelemetry GenAI semantic conventions: name
`chat {model}`, `gen_ai.operation.name`, `gen_ai.provider.name` (and the older
`gen_ai.system`), request model / max tokens / temperature, `gen_ai.conversation.id` (the
run's id), `server.address`/`server.port`, response model, finish reasons and token usage;
the prompt and the answer (`gen_ai.system_instructions`, `gen_ai.input.messages`,
`gen_ai.output.messages`) only when content capture is on
(`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`). A session of an agent is an
`invoke_agent {name}` span. The GenAI client metrics are made from the call spans
(`openprose.telemetry.metrics`): by the export helper, or here on a `meter_provider`.

Why spans are made here and not with `Tracer.start_span`: a fan-out makes two spans per
session, and the SDK's span machinery (sampling, attribute cleaning, locks, context
objects) costs tens of microseconds each, as much as the VM's whole work for a session.
So a span is recorded as what it is — ids, times, the values its attributes are made of —
and, when it ends, becomes one tuple (a record, `openprose.telemetry.otlp`: a session's statement
and model call spans as flat tuples, no attribute dict). A record is either handed to a span
processor given in Python as a finished `ReadableSpan` (tests, embedding applications), or
— `prose run --trace`, a tracer from the environment — written by the export thread to the
export helper process (`ExportProcess`, `openprose.telemetry.export`), which encodes and
sends it. Parents (the spans themselves) travel in a context variable, which asyncio
tasks inherit: the branches of a `parallel:` and the items of a `pmap` are siblings under
their statement's span. A session statement's span is the exception: `Sessions.run` opens
it and hands it to its model call as the parent, so a fan-out changes no context variable
per session. A run started inside a span of the embedding application joins its trace.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar, Token
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from openprose.record.events import Event, ToolCalled, ToolResulted
from openprose.telemetry.metrics import SdkCallMetrics, metrics_wanted
from openprose.telemetry.otlp import (
    CALL,
    SCOPE_NAME,
    STATEMENT,
    Link,
    LinkedRecord,
    Record,
    expand,
    frame,
)
from openprose.telemetry.otlp_http import (
    RESOURCE_VARIABLE,
    exporter_named,
    resource_for_helper,
    resource_from_environment,
)

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider

    from openprose.telemetry.model_calls import CallAnswer, CallRequest

SCOPE = InstrumentationScope(SCOPE_NAME)
CAPTURE_CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
# Kinds and status codes as their numbers: reading an enum member's `.value` costs more
# than the rest of a span's bookkeeping.
_INTERNAL = SpanKind.INTERNAL.value
_UNSET = StatusCode.UNSET.value
_ERROR = StatusCode.ERROR.value

# The span the running code is inside (a span, or the remote parent a run continues), and
# the run's own span with the token that restores the context at its end. Context
# variables, so that runs going on at once in one process (a batch, an application) each
# keep their own.
_current: ContextVar[Parent | None] = ContextVar("openprose_span", default=None)
_run: ContextVar[tuple[_Open, Token[Parent | None]] | None] = ContextVar(
    "openprose_run", default=None
)
# The run's id: the GenAI conversation its model calls and agent sessions belong to.
_conversation: ContextVar[str | None] = ContextVar("openprose_conversation", default=None)
_getrandbits = random.getrandbits
_now = time.time_ns
_new = object.__new__


def _new_id(bits: int) -> int:
    return _getrandbits(bits) or 1  # 0 is the invalid id


def _new_trace() -> str:
    return f"{_new_id(128):032x}"


class Parent:
    """What a span starting inside another needs of it: the trace id (32 hex digits) and
    its span id. Spans are parents themselves; this class stands for one from elsewhere
    (the span an embedding application runs the VM in, the run a resume continues)."""

    __slots__ = ("span_id", "trace_id")

    def __init__(self, trace_id: str, span_id: int) -> None:
        self.trace_id = trace_id
        self.span_id = span_id


def _failure(error: BaseException) -> tuple[int, str, str]:
    """(status code, description, error type) of a span that ended with `error`."""
    name = type(error).__name__
    return _ERROR, str(error) or name, name


class _Open(Parent):
    """A span with its attributes as a dict (the run's, a tool call's)."""

    __slots__ = ("attributes", "code", "kind", "links", "name", "parent", "record", "start", "why")

    def __init__(
        self,
        tracer: OtelTracer,
        name: str,
        parent: Parent | None,
        attributes: dict[str, Any],
        kind: int,
        links: tuple[Link, ...] = (),
    ) -> None:
        self.links = links  # spans of other processes it follows (`start_run`)
        if parent is None:
            # A span that links to another joins its trace, as its root.
            super().__init__(links[0][0] if links else _new_trace(), _new_id(64))
            self.parent: int | None = None
        else:
            super().__init__(parent.trace_id, _new_id(64))
            self.parent = parent.span_id
        self.record = tracer.record
        self.name = name
        self.attributes = attributes
        self.kind = kind  # a SpanKind value
        self.code = _UNSET  # a StatusCode value, and its description:
        self.why: str | None = None
        self.start = _now()

    def fail(self, why: str) -> None:
        self.code, self.why = _ERROR, why

    def end(self) -> None:
        if self.links:
            self.record(
                (self.name, self.trace_id, self.span_id, self.parent, self.kind, self.code,
                 self.why, self.start, _now(), self.attributes, self.links)
            )  # fmt: skip
            return
        self.record(
            (self.name, self.trace_id, self.span_id, self.parent, self.kind, self.code,
             self.why, self.start, _now(), self.attributes)
        )  # fmt: skip


class _Statement(Parent):
    """A statement's span, the parent of what runs inside it (made by
    `OtelTracer.statement`). Either a context manager (`with`: the current span while it
    runs — `Interpreter._traced`) or ended by its opener (`end`: a session statement, which
    hands itself to its model call as the parent and so never becomes the current span — no
    context variable change per session). A fan-out opens one per session, so it is
    written flat and ends as one tuple (`openprose.telemetry.otlp.STATEMENT`)."""

    __slots__ = ("agent", "conversation", "kind", "line", "parent", "path", "record", "start",
                 "step", "token")  # fmt: skip
    agent: str | None  # a session of an agent: its `invoke_agent` span
    conversation: str | None
    kind: str
    line: int
    parent: int | None
    path: str
    record: Callable[[tuple[Any, ...]], None]
    start: int
    step: str
    token: Token[Parent | None] | None

    def __enter__(self) -> Self:
        self.token = _current.set(self)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 where: TracebackType | None) -> None:  # fmt: skip
        if self.token is not None:
            _current.reset(self.token)
        self.end(error)

    def end(self, error: BaseException | None) -> None:
        """The statement ran (`error` is None) or failed with `error`."""
        code, why, failure = _SUCCEEDED if error is None else _failure(error)
        self.record(
            (STATEMENT, self.trace_id, self.span_id, self.parent, code, why, self.start, _now(),
             self.kind, self.step, self.path, self.line, failure, self.agent, self.conversation)
        )  # fmt: skip


_SUCCEEDED = (_UNSET, None, None)


class _Call:
    """A model call attempt's span (made by `OtelTracer.model_call`), the child of the
    span it is handed (a session statement's) or else of the current one. No span starts
    inside one (a tool call's span is its statement's child), so it is not made the
    current span. It ends as one tuple (`openprose.telemetry.otlp.CALL`: attributes from the
    request and the response)."""

    __slots__ = ("address", "alias", "attempt", "capture", "conversation", "kind", "parent",
                 "port", "provider", "record", "request", "span_id", "start", "step",
                 "trace_id")  # fmt: skip
    address: str | None
    alias: str
    attempt: int
    capture: bool
    conversation: str | None
    kind: str
    parent: int | None
    port: int | None
    provider: str
    record: Callable[[tuple[Any, ...]], None]
    request: CallRequest
    span_id: int
    start: int
    step: str
    trace_id: str

    def end(self, response: CallAnswer | None, error: BaseException | None) -> None:
        """The attempt was answered (`response`) or failed with `error`."""
        end = _now()
        request = self.request
        code, why, error_type = _SUCCEEDED if error is None else _failure(error)
        finish = tokens_in = tokens_out = answered_by = answer_id = None
        cache_read = cache_write = 0
        if response is not None:
            finish = response.finish_reason or "stop"
            usage = response.usage
            tokens_in, tokens_out = usage.input_tokens, usage.output_tokens
            cache_read, cache_write = usage.cache_read_tokens, usage.cache_write_tokens
            answered_by, answer_id = response.model, response.request_id
        system = asked = answer = None
        if self.capture:
            system, asked, answer = _captured(request, response)
        self.record(
            (CALL, self.trace_id, self.span_id, self.parent, code, why, self.start, end,
             self.step, request.model, request.max_tokens, request.temperature, self.alias,
             self.provider, self.kind, self.attempt, finish, tokens_in, tokens_out,
             answered_by, answer_id, error_type, system, asked, answer, cache_read,
             cache_write, self.conversation, self.address, self.port)
        )  # fmt: skip


def _captured(
    request: CallRequest, response: CallAnswer | None
) -> tuple[str | None, str, str | None]:
    """The GenAI content attributes (system instructions, input and output messages) as
    the JSON text the conventions give them."""
    system = None
    if request.system:
        system = json.dumps([{"type": "text", "content": request.system}], ensure_ascii=False)
    asked = json.dumps(
        [
            {"role": m.role, "parts": [{"type": "text", "content": m.content}]}
            for m in request.messages
        ],
        ensure_ascii=False,
    )
    answer = None
    if response is not None:
        output = [
            {
                "role": "assistant",
                "parts": [{"type": "text", "content": response.text}],
                "finish_reason": response.finish_reason or "stop",
            }
        ]
        answer = json.dumps(output, ensure_ascii=False)
    return system, asked, answer


class OtelTracer:
    def __init__(
        self,
        processor: SpanProcessor | None,
        *,
        capture_content: bool = False,
        resource: Resource | None = None,
        export: ExportProcess | None = None,
        owned: bool = False,
        meter_provider: MeterProvider | None = None,
    ) -> None:
        self.processor = processor
        self.export = export  # spans go to this helper process instead of `processor`
        # The helper process makes its own resource (from the environment it is given).
        self.resource = resource
        if processor is not None and resource is None:
            self.resource = Resource.create({"service.name": SCOPE_NAME})
        self.capture = capture_content
        self.owned = owned  # made here (from the environment): shut down after the run
        self._tools: dict[tuple[str, object, object], _Open] = {}
        # Takes a finished span's record (`openprose.telemetry.otlp`, of any shape): the export
        # helper's queue's `append` itself, so that a span ends in one C call.
        self.record: Callable[[tuple[Any, ...]], None] = (
            self._to_processor if export is None else export.records.append
        )
        # The GenAI client metrics on an application's meter provider (the export helper
        # makes them itself from the call spans it is sent).
        self.metrics = (
            None if meter_provider is None else SdkCallMetrics(meter_provider, SCOPE_NAME)
        )

    @classmethod
    def from_environment(cls, env: Mapping[str, str]) -> OtelTracer:
        """A tracer configured the standard way (see `processor_from_environment`), whose
        spans are exported by a helper process (`openprose.telemetry.export`): encoding
        and sending spans costs more CPU than the VM spends on a session, so it is kept
        out of the run's process; this one only writes each finished span as a line."""
        metrics_wanted(env, exporter_named(env))  # a setting we cannot honour fails here, at once
        capture = env.get(CAPTURE_CONTENT, "").strip().lower() == "true"
        return cls(None, capture_content=capture, export=ExportProcess(env), owned=True)

    # --- recording -----------------------------------------------------------------------

    def _to_processor(self, record: tuple[Any, ...]) -> None:
        assert self.processor is not None and self.resource is not None
        if self.metrics is not None and record[0] == CALL:
            self.metrics.add(record)
        self.processor.on_end(span_of(expand(record), self.resource))

    # --- the run -------------------------------------------------------------------------

    def start_run(
        self, run_id: str, program: str, resumed_from: Mapping[str, str] | None
    ) -> dict[str, str]:
        parent: Parent | None = None
        earlier: tuple[Link, ...] = ()
        if resumed_from and resumed_from.get("trace_id") and resumed_from.get("span_id"):
            # The earlier attempt's span may never have been exported (a kill -9): a link,
            # never a parent, so no span of this attempt points to one that never arrives.
            trace_id = f"{int(resumed_from['trace_id'], 16):032x}"
            earlier = ((trace_id, int(resumed_from["span_id"], 16)),)
            if resumed_from.get("start") and not resumed_from.get("ended"):
                self._lost_attempt(run_id, program, trace_id, resumed_from)
        else:
            ambient = trace.get_current_span().get_span_context()  # the embedding app's span
            if ambient.is_valid:
                parent = Parent(f"{ambient.trace_id:032x}", ambient.span_id)
        span = _Open(
            self,
            f"prose run {program}",
            parent,
            {
                "prose.run.id": run_id,
                "prose.program": program,
                "prose.run.resumed": bool(earlier),
            },
            _INTERNAL,
            earlier,
        )
        _run.set((span, _current.set(span)))
        _conversation.set(run_id)
        # `start`: so that a resume can write this span if this attempt never ends it.
        return {
            "trace_id": span.trace_id,
            "span_id": f"{span.span_id:016x}",
            "start": str(span.start),
        }

    def _lost_attempt(
        self, run_id: str, program: str, trace_id: str, ids: Mapping[str, str]
    ) -> None:
        """The run span of an earlier attempt whose process died before ending it (kill -9,
        a crash), written now with its own ids: its statements' spans, exported before it
        died, name it as their parent, and a parent must arrive."""
        why = "this attempt's process ended before the run did; the run was resumed"
        self.record(
            (f"prose run {program}", trace_id, int(ids["span_id"], 16), None, _INTERNAL, _ERROR,
             why, int(ids["start"]), _now(),
             {"prose.run.id": run_id, "prose.program": program, "prose.run.status": "lost"})
        )  # fmt: skip

    def end_run(self, status: str, error: str | None) -> None:
        running = _run.get()
        if running is None:
            return
        span, token = running
        span.attributes["prose.run.status"] = status
        if status != "succeeded":
            span.code, span.why = _ERROR, error or status
        _current.reset(token)
        _run.set(None)
        _conversation.set(None)
        span.end()

    def span(
        self,
        name: str,
        attributes: dict[str, Any],
        parent: Parent | None = None,
        links: tuple[Link, ...] = (),
    ) -> _Open:
        """A span its caller opens and ends (`end`, after `fail` when it failed): a batch's,
        a case's. `links`: spans of other traces it stands for (a case's run)."""
        return _Open(self, name, parent, attributes, _INTERNAL, links)

    # --- statements and calls ------------------------------------------------------------
    # A fan-out opens a statement span and a call span per session: they are made with
    # `object.__new__` and their slots set here (calling a class with an `__init__` costs
    # ~40 % more: the type call, the arguments packed again for `__init__`).

    def statement(
        self, kind: str, step: str, path: str, line: int, agent: str | None = None
    ) -> _Statement:
        span = _new(_Statement)
        parent = _current.get()
        if parent is None:
            span.trace_id, span.parent = _new_trace(), None
        else:
            span.trace_id, span.parent = parent.trace_id, parent.span_id
        span.span_id = _getrandbits(64) or 1
        span.record, span.token = self.record, None
        span.kind, span.step = kind, step
        span.path, span.line = path, line
        span.agent = agent
        span.conversation = None if agent is None else _conversation.get()
        span.start = _now()
        return span

    def model_call(self, step: str, request: CallRequest, *, alias: str, provider: str,
                   kind: str, attempt: int, parent: Any = None,
                   server: tuple[str, int] | None = None) -> _Call:  # fmt: skip
        span = _new(_Call)
        span.record, span.capture = self.record, self.capture
        span.conversation = _conversation.get()
        span.address, span.port = server or (None, None)
        span.step, span.request = step, request
        span.alias, span.provider = alias, provider
        span.kind, span.attempt = kind, attempt
        if parent is None:  # else a statement span this tracer made
            parent = _current.get()
        span.span_id = _getrandbits(64) or 1
        if parent is None:
            span.trace_id, span.parent = _new_trace(), None
        else:
            span.trace_id, span.parent = parent.trace_id, parent.span_id
        span.start = _now()
        return span

    @contextmanager
    def current(self, span: Any) -> Iterator[None]:  # a span this tracer opened
        token = _current.set(span)
        try:
            yield
        finally:
            _current.reset(token)

    def on_event(self, event: Event, t: float) -> None:
        """A subscriber of the run's events: tool calls (journaled by the tool loop) become
        `execute_tool` spans; every other event is ignored."""
        match event:
            case ToolCalled(step=step, turn=turn, index=index, call=call):
                name = str(call.get("name") or "tool")
                self._tools[(step, turn, index)] = _Open(
                    self,
                    f"execute_tool {name}",
                    _current.get(),
                    {
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": name,
                        "gen_ai.tool.call.id": str(call.get("id") or ""),
                        "prose.step": step,
                    },
                    _INTERNAL,
                )
            case ToolResulted(step=step, turn=turn, index=index):
                span = self._tools.pop((step, turn, index), None)
                if span is not None:
                    if event.is_error:
                        span.code, span.why = _ERROR, event.content[:200]
                    span.end()

    def shutdown(self) -> None:
        for span in self._tools.values():
            span.end()
        self._tools.clear()
        if self.export is not None:
            self.export.close()
        elif self.processor is not None and self.owned:
            self.processor.shutdown()
        elif self.processor is not None:
            self.processor.force_flush()


def span_of(record: Record | LinkedRecord, resource: Resource) -> ReadableSpan:
    """A record (`openprose.telemetry.otlp.Record`) as the SDK's processors and exporters take it."""
    name, trace_hex, span_id, parent, kind, code, why, start, end, attributes = record[:10]
    trace_id = int(trace_hex, 16)
    links = [link for links in record[10:] for link in links]  # a record's links are last
    return readable(
        name,
        (trace_id, span_id),
        None if parent is None else (trace_id, parent),
        SpanKind(kind),
        Status(StatusCode(code), why),
        start,
        end,
        dict(attributes),
        resource,
        [
            trace.Link(
                SpanContext(int(linked, 16), linked_span, is_remote=True, trace_flags=_SAMPLED)
            )
            for linked, linked_span in links
        ],
    )


def readable(
    name: str,
    ids: tuple[int, int],
    parent: tuple[int, int] | None,
    kind: SpanKind,
    status: Status,
    start: int,
    end: int,
    attributes: dict[str, Any],
    resource: Resource,
    links: list[trace.Link] | None = None,
) -> ReadableSpan:
    """A finished span as the SDK's processors and exporters take it."""
    return ReadableSpan(
        name,
        context=SpanContext(ids[0], ids[1], is_remote=False, trace_flags=_SAMPLED),
        parent=None
        if parent is None
        else SpanContext(parent[0], parent[1], is_remote=False, trace_flags=_SAMPLED),
        resource=resource,
        attributes=attributes,
        kind=kind,
        status=status,
        start_time=start,
        end_time=end,
        instrumentation_scope=SCOPE,
        links=links or (),
    )


def processor_from_environment(env: Mapping[str, str]) -> tuple[SpanProcessor, Resource]:
    """The exporter named by `OTEL_TRACES_EXPORTER` (`otlp`, the default, is OTLP/HTTP to
    `OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT`; `console` prints spans to stderr), batched.
    ValueError for an exporter we cannot honour."""
    chosen = exporter_named(env)
    exporter: SpanExporter
    if chosen == "console":
        import sys

        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        exporter = ConsoleSpanExporter(out=sys.stderr)
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter()
    # A fan-out ends thousands of spans at once: the SDK's default queue (2,048) would drop
    # most of them before the exporter thread wakes.
    queue = int(env.get("OTEL_BSP_MAX_QUEUE_SIZE") or 65536)
    return BatchSpanProcessor(exporter, max_queue_size=queue), resource_from_environment(env)


def _helper_environment(env: Mapping[str, str]) -> dict[str, str]:
    helper = dict(env)
    helper.pop(RESOURCE_VARIABLE, None)
    resource = resource_for_helper(env)
    if resource is not None:
        helper[RESOURCE_VARIABLE] = resource
    return helper


def _widen(pipe: Any) -> None:
    """A 1 MiB pipe (Linux; the default is 64 KiB), so that a batch is written in one go
    rather than in turns with the helper reading it."""
    try:
        import fcntl

        fcntl.fcntl(pipe.fileno(), fcntl.F_SETPIPE_SZ, 1 << 20)
    except (ImportError, AttributeError, OSError):
        pass


class ExportProcess:
    """The helper process that exports a run's spans (`openprose.telemetry.export`): each
    finished span's record (`openprose.telemetry.otlp`) is appended to a deque; a thread writes
    what has gathered to the helper's stdin as one frame every 50 ms; at the end (or when
    this process dies) its stdin closes and the helper exports what it holds and
    exits."""

    FLUSH_INTERVAL = 0.05  # seconds

    def __init__(self, env: Mapping[str, str]) -> None:
        import subprocess
        import sys

        self.process = subprocess.Popen(
            [sys.executable, "-m", "openprose.telemetry.export"],
            stdin=subprocess.PIPE,
            env=_helper_environment(env),
        )
        _widen(self.process.stdin)
        # Finished spans' records: appended by the tracer, taken by the thread (atomically).
        self.records: deque[tuple[Any, ...]] = deque()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._drain, name="prose-otel", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        while True:
            closing = self._wake.wait(self.FLUSH_INTERVAL)
            pending = self.records
            records = [pending.popleft() for _ in range(len(pending))]
            try:
                if records:
                    stdin.write(frame(records))
                    stdin.flush()
            except OSError:
                return  # the helper is gone: nothing more can be exported
            if closing:
                return

    def close(self, timeout: float = 30.0) -> None:
        """Send what is left, then wait (up to `timeout`) for the helper to export it."""
        self._wake.set()
        self._thread.join()
        assert self.process.stdin is not None
        try:
            self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(timeout)
        except Exception:  # noqa: BLE001 - a helper that hangs must not hang the run's end
            self.process.kill()
            self.process.wait()

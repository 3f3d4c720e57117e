"""The OpenTelemetry tracer (the `[otel]` extra): one trace per run, a span per statement
that runs, a GenAI client span per model call attempt, an `execute_tool` span per tool call.

Model call spans follow the OpenTelemetry GenAI semantic conventions: name
`chat {model}`, `gen_ai.operation.name`, `gen_ai.provider.name` (and the older
`gen_ai.system`), request model / max tokens / temperature, response model, finish
reasons and token usage; the prompt and the answer (`gen_ai.system_instructions`,
`gen_ai.input.messages`, `gen_ai.output.messages`) only when content capture is on
(`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`). Spans nest through the
context the asyncio tasks inherit, so the branches of a `parallel:` and the items of a
`pmap` are siblings under their statement's span.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from opentelemetry import context, trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode
from opentelemetry.trace import TraceFlags

from openprose.providers.base import ModelRequest, ModelResponse
from openprose.vm.tracing import CAPTURE_CONTENT, TracingUnavailable

SCOPE = "openprose"


class _CallSpan:
    def __init__(self, span: trace.Span, capture: bool) -> None:
        self.span = span
        self.capture = capture

    def answered(self, response: ModelResponse) -> None:
        span = self.span
        answered: dict[str, Any] = {
            "gen_ai.response.finish_reasons": (response.finish_reason or "stop",),
            "gen_ai.usage.input_tokens": response.usage.input_tokens,
            "gen_ai.usage.output_tokens": response.usage.output_tokens,
        }
        if response.model:
            answered["gen_ai.response.model"] = response.model
        if response.request_id:
            answered["gen_ai.response.id"] = response.request_id
        span.set_attributes(answered)  # one call: the SDK takes its lock once
        if self.capture:
            output = [
                {
                    "role": "assistant",
                    "parts": [{"type": "text", "content": response.text}],
                    "finish_reason": response.finish_reason or "stop",
                }
            ]
            span.set_attribute("gen_ai.output.messages", json.dumps(output, ensure_ascii=False))

    def failed(self, error: BaseException) -> None:
        self.span.set_attribute("error.type", type(error).__name__)
        self.span.set_status(Status(StatusCode.ERROR, str(error)))


class OtelTracer:
    def __init__(
        self, provider: TracerProvider, *, capture_content: bool = False, owned: bool = False
    ) -> None:
        self.provider = provider
        self.owned = owned  # made here (from the environment): shut down with the run
        self.tracer = provider.get_tracer(SCOPE)
        self.capture = capture_content
        self._run: trace.Span | None = None
        self._token: object | None = None
        self._tools: dict[tuple[str, object, object], trace.Span] = {}

    @classmethod
    def from_environment(cls, env: Mapping[str, str]) -> OtelTracer:
        """The exporter named by `OTEL_TRACES_EXPORTER` (`otlp`, the default, is OTLP/HTTP
        to `OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT`; `console` prints spans to stderr),
        batched; the service is `OTEL_SERVICE_NAME` (default `openprose`)."""
        chosen = (env.get("OTEL_TRACES_EXPORTER") or "otlp").split(",")[0].strip().lower()
        exporter: SpanExporter
        if chosen == "console":
            import sys

            from opentelemetry.sdk.trace.export import ConsoleSpanExporter

            exporter = ConsoleSpanExporter(out=sys.stderr)
        elif chosen == "otlp":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            exporter = OTLPSpanExporter()
        else:
            raise TracingUnavailable(
                f"OTEL_TRACES_EXPORTER={chosen!r} is not supported here (use otlp or console)"
            )
        resource = Resource.create({"service.name": env.get("OTEL_SERVICE_NAME") or "openprose"})
        provider = TracerProvider(resource=resource)
        # A fan-out ends thousands of spans at once: the SDK's default queue (2,048) would
        # drop most of them before the exporter thread wakes.
        queue = int(env.get("OTEL_BSP_MAX_QUEUE_SIZE") or 65536)
        provider.add_span_processor(BatchSpanProcessor(exporter, max_queue_size=queue))
        capture = env.get(CAPTURE_CONTENT, "").strip().lower() == "true"
        return cls(provider, capture_content=capture, owned=True)

    # --- the run -------------------------------------------------------------------------

    def start_run(
        self, run_id: str, program: str, resumed_from: Mapping[str, str] | None
    ) -> dict[str, str]:
        parent = None
        if resumed_from and resumed_from.get("trace_id") and resumed_from.get("span_id"):
            earlier = SpanContext(
                int(resumed_from["trace_id"], 16),
                int(resumed_from["span_id"], 16),
                is_remote=True,
                trace_flags=TraceFlags(TraceFlags.SAMPLED),
            )
            parent = trace.set_span_in_context(NonRecordingSpan(earlier))
        span = self.tracer.start_span(
            f"prose run {program}",
            context=parent,
            attributes={
                "prose.run.id": run_id,
                "prose.program": program,
                "prose.run.resumed": parent is not None,
            },
        )
        self._run = span
        self._token = context.attach(trace.set_span_in_context(span))
        own = span.get_span_context()
        return {"trace_id": f"{own.trace_id:032x}", "span_id": f"{own.span_id:016x}"}

    def end_run(self, status: str, error: str | None) -> None:
        if self._run is None:
            return
        self._run.set_attribute("prose.run.status", status)
        if status != "succeeded":
            self._run.set_status(Status(StatusCode.ERROR, error or status))
        self._run.end()
        if self._token is not None:
            context.detach(self._token)  # type: ignore[arg-type]
        self._run = self._token = None

    # --- statements and calls ------------------------------------------------------------

    def statement(self, kind: str, step: str, path: str, line: int) -> AbstractContextManager[Any]:
        return self.tracer.start_as_current_span(
            kind,
            attributes={
                "prose.step": step,
                "code.filepath": path,
                "code.lineno": line,
            },
        )

    @contextmanager
    def model_call(
        self,
        step: str,
        request: ModelRequest,
        *,
        alias: str,
        provider: str,
        kind: str,
        attempt: int,
    ) -> Iterator[_CallSpan]:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            "gen_ai.system": provider,
            "gen_ai.request.model": request.model,
            "gen_ai.request.max_tokens": request.max_tokens,
            "prose.step": step,
            "prose.model.alias": alias,
            "prose.call.kind": kind,
            "prose.call.attempt": attempt,
        }
        if request.temperature is not None:
            attributes["gen_ai.request.temperature"] = request.temperature
        if self.capture:
            if request.system:
                attributes["gen_ai.system_instructions"] = json.dumps(
                    [{"type": "text", "content": request.system}], ensure_ascii=False
                )
            attributes["gen_ai.input.messages"] = json.dumps(
                [
                    {"role": m.role, "parts": [{"type": "text", "content": m.content}]}
                    for m in request.messages
                ],
                ensure_ascii=False,
            )
        with self.tracer.start_as_current_span(
            f"chat {request.model}",
            kind=SpanKind.CLIENT,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            yield _CallSpan(span, self.capture)

    def on_event(self, event: str, step: str, fields: dict[str, Any]) -> None:
        """Tool calls (journaled by the tool loop) as `execute_tool` spans."""
        if event == "tool_call":
            call = fields.get("call") or {}
            name = str(call.get("name") or "tool")
            span = self.tracer.start_span(
                f"execute_tool {name}",
                kind=SpanKind.INTERNAL,
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": name,
                    "gen_ai.tool.call.id": str(call.get("id") or ""),
                    "prose.step": step,
                },
            )
            self._tools[(step, fields.get("turn"), fields.get("index"))] = span
        elif event == "tool_result":
            span = self._tools.pop((step, fields.get("turn"), fields.get("index")), None)
            if span is not None:
                if fields.get("is_error"):
                    span.set_status(Status(StatusCode.ERROR, str(fields.get("content", ""))[:200]))
                span.end()

    def shutdown(self) -> None:
        for span in self._tools.values():
            span.end()
        self._tools.clear()
        if self.owned:
            self.provider.shutdown()
        else:
            self.provider.force_flush()

"""Tracing, seen from the VM: what a tracer is asked, and how one is opened.

The VM calls a `Tracer` at three seams — around each statement that runs
(`Interpreter.stmt`; a session statement's span is opened by `Sessions.run`, which hands it
to its model call as the call's parent), around each model call attempt (`ModelCalls.call`)
and as a subscriber of the run's typed events (`Shared.emit`; tool calls become spans) — and
only when the run has one. The OpenTelemetry implementation is `openprose.telemetry.otel`;
this module never imports it, so a run without tracing loads no part of the SDK.

Telemetry sits below the VM and the providers: what a tracer reads of a model request and
its answer is described in `openprose.telemetry.model_calls`, and the providers' types fit it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any, Protocol

from openprose.record.events import Event
from openprose.telemetry.model_calls import CallAnswer, CallRequest

# Environment variables that turn tracing on by themselves (the standard OTLP ones).
ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
EXTRA_HINT = "pip install 'openprose[otel]'"


class ModelCallSpan(Protocol):
    """A model call attempt's span, ended by its caller."""

    def end(self, response: CallAnswer | None, error: BaseException | None) -> None:
        """The attempt was answered (`response`) or failed with `error`."""
        ...


class StatementSpan(Protocol):
    """A statement's span. As a context manager it is the current span while the block
    runs (the parent of the spans started inside) and ends with the block; opened without
    one, its opener ends it (`end`) and hands it as the parent to what runs inside."""

    def __enter__(self) -> Any: ...

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        where: TracebackType | None,
    ) -> None: ...

    def end(self, error: BaseException | None) -> None:
        """The statement ran (`error` is None) or failed with `error`."""
        ...


class OwnSpan(Protocol):
    """A span its caller opens and ends (`Tracer.span`): a batch's, a case's."""

    trace_id: str  # 32 hex digits
    span_id: int
    attributes: dict[str, Any]
    links: tuple[tuple[str, int], ...]  # (trace id in hex, span id) of spans it stands for

    def fail(self, why: str) -> None: ...

    def end(self) -> None: ...


class Tracer(Protocol):
    def start_run(
        self, run_id: str, program: str, resumed_from: Mapping[str, str] | None
    ) -> dict[str, str]:
        """Open the run's span; returns what a resume needs to continue its trace."""
        ...

    def end_run(self, status: str, error: str | None) -> None: ...

    def statement(
        self, kind: str, step: str, path: str, line: int, agent: str | None = None
    ) -> StatementSpan:
        """A statement's span; with `agent`, a session of that agent (`invoke_agent`)."""
        ...

    def current(self, span: StatementSpan) -> AbstractContextManager[None]:
        """`span` is the current span inside the block: the parent of spans whose maker is
        not handed one (tool calls, calls made by other modules)."""
        ...

    def model_call(
        self,
        step: str,
        request: CallRequest,
        *,
        alias: str,
        provider: str,
        kind: str,
        attempt: int,
        parent: StatementSpan | None = None,
        server: tuple[str, int] | None = None,
    ) -> ModelCallSpan:
        """The attempt's span, a child of `parent` (None: of the current span); `server`:
        the host and port the request goes to, when it goes over the network."""
        ...

    def span(
        self,
        name: str,
        attributes: dict[str, Any],
        parent: Any = None,
        links: tuple[tuple[str, int], ...] = (),
    ) -> OwnSpan:
        """A span of the caller's own, a child of `parent` (an `OwnSpan`; None: a new
        trace), linked to the spans `links` names: (trace id in hex, span id)."""
        ...

    def on_event(self, event: Event, t: float) -> None:
        """A subscriber of the run's typed events (`Shared.emit`): tool calls become spans."""
        ...

    def shutdown(self) -> None:
        """Export what is pending (end of the process's run)."""
        ...


class TracingUnavailable(RuntimeError):
    """Tracing was asked for but the `[otel]` extra is not installed."""


def wanted(flag: bool, environ: Mapping[str, str] | None = None) -> bool:
    """Tracing is on with `--trace`, or when an OTLP endpoint is configured the standard
    way; `OTEL_SDK_DISABLED=true` turns it off unless `--trace` is given."""
    env = os.environ if environ is None else environ
    if flag:
        return True
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return any(env.get(name) for name in ENDPOINT_VARIABLES)


def open_tracer(environ: Mapping[str, str] | None = None) -> Tracer:
    """An OpenTelemetry tracer exporting as the environment says (OTLP/HTTP by default);
    `TracingUnavailable` with the install hint when the SDK is missing, or naming the
    setting it cannot honour."""
    try:
        from openprose.telemetry.otel import OtelTracer
    except ImportError as error:
        raise TracingUnavailable(
            f"tracing needs the OpenTelemetry SDK ({error.name} is missing): {EXTRA_HINT}"
        ) from None
    try:
        return OtelTracer.from_environment(os.environ if environ is None else environ)
    except ValueError as error:  # a setting we cannot honour: say so, do not trace wrongly
        raise TracingUnavailable(str(error)) from None

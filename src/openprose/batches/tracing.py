"""A batch's trace: one span for the batch, a child per case from its dispatch to its row,
linked to the case's run (each run keeps a trace of its own, made where it ran: this process,
a worker process, a Ray worker — 10,000 runs under one trace would make it unreadable).

The run's trace ids reach the batch in its row (`trace`), noted by `RunTraces` where the run
ran. Tracing is on as for `prose run` (`--trace`, or an OTLP endpoint in the environment).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from openprose.telemetry.spans import OwnSpan, Tracer, open_tracer

__all__ = ["BatchTrace", "RunTraces"]


class RunTraces:
    """A tracer for a batch's runs that notes each run's trace ids (its row carries them).
    Everything else is the tracer's own, looked up once."""

    def __init__(self, tracer: Tracer) -> None:
        self._tracer = tracer
        self.ids: dict[str, dict[str, str]] = {}

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._tracer, name)
        setattr(self, name, value)  # the VM calls the tracer per statement: look up once
        return value

    def start_run(
        self, run_id: str, program: str, resumed_from: Mapping[str, str] | None
    ) -> dict[str, str]:
        ids = self._tracer.start_run(run_id, program, resumed_from)
        self.ids[run_id] = ids
        return ids


class BatchTrace:
    """The batch's span and its cases' spans (opened when a case is handed to an executor,
    ended when its row is written)."""

    def __init__(self, batch_id: str, program: str, *, resumed: bool) -> None:
        self.tracer = open_tracer()
        attributes: dict[str, Any] = {"prose.batch.id": batch_id, "prose.program": program}
        attributes["prose.batch.resumed"] = resumed
        self.span = self.tracer.span(f"prose batch {program}", attributes)
        self.cases: dict[int, OwnSpan] = {}

    def case_started(self, line: int, run_id: str) -> None:
        if line not in self.cases:  # a case a lost Ray worker had is handed out again
            attributes = {"prose.batch.line": line, "prose.run.id": run_id}
            self.cases[line] = self.tracer.span(f"prose case {line}", attributes, self.span)

    def case_ended(self, row: dict[str, Any]) -> None:
        line, status = row["line"], row["status"]
        span = self.cases.pop(line, None)
        if span is None:  # an invalid line (never handed out) or a row kept from earlier
            span = self.tracer.span(f"prose case {line}", {"prose.batch.line": line}, self.span)
        run = row.get("trace")
        if run and run.get("trace_id") and run.get("span_id"):
            # the link is made at the end: the run's ids are known once it ran
            span.links = ((str(run["trace_id"]), int(str(run["span_id"]), 16)),)
        span.attributes["prose.case.status"] = status
        if status != "succeeded":
            span.fail(str(row.get("error") or status))
        span.end()

    def end(self, status: str, cases: int, error: str | None = None) -> None:
        """End the batch's span (and any case span a stopped batch left open); export."""
        for span in self.cases.values():
            span.fail("the batch stopped before its row")
            span.end()
        self.cases.clear()
        self.span.attributes.update({"prose.batch.status": status, "prose.batch.cases": cases})
        if error is not None or status == "failed":
            self.span.fail(error or status)
        self.span.end()
        self.tracer.shutdown()

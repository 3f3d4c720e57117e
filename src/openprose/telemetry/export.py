"""The helper process of `prose run --trace`: reads frames of finished spans
(`openprose.telemetry.otlp.frame`, written by `openprose.telemetry.otel.ExportProcess`) and exports them
as the environment says (`OTEL_*`, see `processor_from_environment`). At end of input it
exports what it holds and exits, so it never outlives the run that started it.

OTLP (the default) is encoded by `openprose.telemetry.otlp` and sent by `openprose.telemetry.otlp_http`
(the standard `OTEL_EXPORTER_OTLP_*` settings), neither of which loads the SDK's exporter,
requests or protobuf: the helper starts in a third of the CPU time. A request holds what arrived meanwhile: at least
`MIN_BATCH` spans or `MAX_WAIT` seconds' worth, at most `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`
(default 4,096) spans — an HTTP request costs the helper as much CPU as encoding ~200
spans. Spans are encoded as they arrive, not when their request goes: at the end of input
(the run is waiting) only the last frame is left to encode. The console exporter, and the
SDK's credential-provider plug-ins, get `ReadableSpan`s through the SDK's batch processor
and exporter instead. On the OTLP path the helper also makes the GenAI client metrics of
the model call spans it is sent (`openprose.telemetry.metrics`) and exports them.
"""

from __future__ import annotations

import marshal
import os
import select
import sys
import time
from collections.abc import Callable, Iterator, Mapping

from openprose.telemetry.metrics import CallMetrics, export_interval, metrics_wanted
from openprose.telemetry.otlp import FRAME_HEADER, SCOPE_NAME, Record, SpanEncoder
from openprose.telemetry.otlp_http import OtlpHttp, exporter_named, resource_attributes

TYPE_CHECKING = False  # the helper starts without `typing`
if TYPE_CHECKING:
    from typing import Any

# Settings only the SDK's exporter understands (a `requests` session from a plug-in).
SDK_ONLY = (
    "OTEL_PYTHON_EXPORTER_OTLP_HTTP_CREDENTIAL_PROVIDER",
    "OTEL_PYTHON_EXPORTER_OTLP_HTTP_TRACES_CREDENTIAL_PROVIDER",
)
DEFAULT_BATCH = 4096
MIN_BATCH = 1024  # spans
MAX_WAIT = 0.2  # seconds a span waits for others to share its request


class Exporter:
    """What the helper does with spans: `prepare` a frame's records as they arrive (the
    OTLP encoding of each span, or `ReadableSpan`s), `export` a batch of prepared spans,
    `finish` at the end."""

    __slots__ = ("export", "finish", "prepare")

    def __init__(
        self,
        prepare: Callable[[list[Record]], list[Any]],
        export: Callable[[list[Any]], object],
        finish: Callable[[], None],
    ) -> None:
        self.prepare = prepare
        self.export = export
        self.finish = finish


NICENESS = 10  # the helper yields the CPU to the run and to what it talks to


def main() -> int:
    try:
        os.nice(NICENESS)
    except (AttributeError, OSError):
        pass
    exporter = exporter_for(os.environ)
    try:
        limit = max(1, int(os.environ.get("OTEL_BSP_MAX_EXPORT_BATCH_SIZE") or DEFAULT_BATCH))
    except ValueError:
        limit = DEFAULT_BATCH
    try:
        for batch in batches(sys.stdin.fileno(), limit, exporter.prepare):
            exporter.export(batch)
    finally:
        exporter.finish()
    return 0


def batches(
    fd: int, limit: int, prepare: Callable[[list[Record]], list[Any]]
) -> Iterator[list[Any]]:
    """Lists of at most `limit` spans as the run sends them (each frame's records
    `prepare`d as it arrives), each list what arrived meanwhile once `MIN_BATCH` spans or
    `MAX_WAIT` seconds have gathered."""
    buffer = bytearray()
    records: list[Any] = []
    due = 0.0  # when the records held go, however few
    ended = False
    while not ended:
        wait = None if not records else max(0.0, due - time.monotonic())
        if select.select([fd], [], [], wait)[0]:
            chunk = os.read(fd, 1 << 20)
            ended = not chunk
            buffer += chunk
            arrived = _frames(buffer)
            if arrived and not records:
                due = time.monotonic() + MAX_WAIT
            if arrived:
                records += prepare(arrived)
        if records and (ended or len(records) >= MIN_BATCH or time.monotonic() >= due):
            for start in range(0, len(records), limit):
                yield records[start : start + limit]
            records = []


def _frames(buffer: bytearray) -> list[Record]:
    """The records of the whole frames at the start of `buffer`, taken out of it; a frame
    that does not decode is skipped (what is left at the end was cut by the run's death)."""
    records: list[Record] = []
    at = 0
    while len(buffer) - at >= FRAME_HEADER.size:
        (size,) = FRAME_HEADER.unpack_from(buffer, at)
        body = at + FRAME_HEADER.size
        if len(buffer) - body < size:
            break
        try:
            records += marshal.loads(buffer[body : body + size])
        except (EOFError, ValueError, TypeError):
            pass
        at = body + size
    del buffer[:at]
    return records


def exporter_for(env: Mapping[str, str]) -> Exporter:
    """The exporter the environment names."""
    chosen = exporter_named(env)
    if chosen == "otlp" and not any(name in env for name in SDK_ONLY):
        sender = OtlpHttp(env)
        attributes, schema_url = resource_attributes(env)
        encoder = SpanEncoder(attributes, SCOPE_NAME, resource_schema_url=schema_url)
        spans = Exporter(
            encoder.spans, lambda spans: sender.send(encoder.request_of(spans)), sender.close
        )
        if not metrics_wanted(env, chosen):
            return spans
        return _with_metrics(spans, env, attributes, schema_url)
    return _sdk_exporter(env)


def _with_metrics(
    spans: Exporter, env: Mapping[str, str], resource: Mapping[str, Any], schema_url: str
) -> Exporter:
    """`spans`, and the GenAI metrics of the model calls among them (`CallMetrics`), sent
    every `export_interval` seconds and at the end."""
    metrics = CallMetrics()
    sender = OtlpHttp(env, signal="metrics")
    interval = export_interval(env)
    due = [time.monotonic() + interval]

    def send() -> None:
        body = metrics.request(resource, SCOPE_NAME, schema_url)
        if body is not None:
            sender.send(body)

    def prepare(records: list[Record]) -> list[Any]:
        metrics.add(records)
        return spans.prepare(records)

    def export(batch: list[Any]) -> None:
        spans.export(batch)
        if time.monotonic() >= due[0]:
            send()
            due[0] = time.monotonic() + interval

    def finish() -> None:
        try:
            send()
        finally:
            sender.close()
            spans.finish()

    return Exporter(prepare, export, finish)


def _sdk_exporter(env: Mapping[str, str]) -> Exporter:
    """The SDK's processor and exporter, fed `ReadableSpan`s."""
    from openprose.telemetry.otel import processor_from_environment, span_of
    from openprose.telemetry.otlp import expand

    processor, resource = processor_from_environment(env)

    def prepare(records: list[Record]) -> list[Any]:
        return [span_of(expand(record), resource) for record in records]

    def process(batch: list[Any]) -> None:
        for span in batch:
            processor.on_end(span)

    return Exporter(prepare, process, processor.shutdown)


if __name__ == "__main__":
    # The run waits for this process to end: once everything is exported, skip the
    # interpreter's teardown (~13 M instructions, a few ms at this niceness).
    status = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)

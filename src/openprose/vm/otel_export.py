"""The helper process of `prose run --trace`: reads finished spans, one JSON line each
(`openprose.vm.otlp.Record`, written by `openprose.vm.otel.ExportProcess`), and exports
them as the environment says (`OTEL_*`, see `processor_from_environment`). At end of input
it exports what it holds and exits, so it never outlives the run that started it.

OTLP (the default) is encoded by `openprose.vm.otlp` and sent by the SDK's own OTLP/HTTP
exporter client (endpoint, headers, compression, TLS, timeout and retries as the SDK reads
them from the environment); spans are sent as they arrive: whatever the run wrote since the
last request, up to `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` (default 4,096) spans a request. The
console exporter, and an SDK without that client, get `ReadableSpan`s through the SDK's
batch processor instead.
"""

from __future__ import annotations

import os
import select
import sys
from collections.abc import Callable, Iterator, Mapping

import orjson
from opentelemetry.trace import SpanKind, Status, StatusCode

from openprose.vm.otel import (
    SCOPE,
    exporter_named,
    processor_from_environment,
    readable,
    resource_from_environment,
)
from openprose.vm.otlp import Record, SpanEncoder

DEFAULT_BATCH = 4096
Export = Callable[[list[Record]], None]


def main() -> int:
    export, finish = exporter_for(os.environ)
    limit = int(os.environ.get("OTEL_BSP_MAX_EXPORT_BATCH_SIZE") or DEFAULT_BATCH)
    try:
        for batch in batches(sys.stdin.fileno(), limit):
            export(batch)
    finally:
        finish()
    return 0


def batches(fd: int, limit: int) -> Iterator[list[Record]]:
    """Lists of records as the run writes them: a batch ends when nothing more is waiting
    in the pipe or it holds `limit` records; a line torn by the run's death is skipped."""
    records: list[Record] = []
    rest = b""
    while True:
        chunk = os.read(fd, 1 << 20)
        lines = (rest + chunk).split(b"\n")
        rest = lines.pop() if chunk else b""
        for line in lines:
            try:
                records.append(orjson.loads(line))
            except orjson.JSONDecodeError:
                continue
        while len(records) >= limit:
            yield records[:limit]
            records = records[limit:]
        if records and (not chunk or not select.select([fd], [], [], 0)[0]):
            yield records
            records = []
        if not chunk:
            return


def exporter_for(env: Mapping[str, str]) -> tuple[Export, Callable[[], None]]:
    """(export a batch, finish at end of input) for the exporter the environment names."""
    if exporter_named(env) == "otlp":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter()
        client = getattr(exporter, "_client", None)  # the SDK's HTTP sender (retries included)
        if callable(getattr(client, "export", None)):
            resource = resource_from_environment(env)
            encoder = SpanEncoder(
                resource.attributes, SCOPE.name, resource_schema_url=resource.schema_url
            )

            def send(batch: list[Record]) -> None:
                client.export(encoder.request(batch))  # failures are logged by the SDK

            return send, exporter.shutdown
        exporter.shutdown()
    processor, resource = processor_from_environment(env)
    kinds = {kind.value: kind for kind in SpanKind}
    codes = {code.value: code for code in StatusCode}

    def process(batch: list[Record]) -> None:
        for name, trace_hex, span, parent, kind, code, why, start, end, attributes in batch:
            trace = int(trace_hex, 16)
            processor.on_end(
                readable(
                    name,
                    (trace, span),
                    None if parent is None else (trace, parent),
                    kinds[kind],
                    Status(codes[code], why),
                    start,
                    end,
                    dict(attributes),
                    resource,
                )
            )

    return process, processor.shutdown


if __name__ == "__main__":
    raise SystemExit(main())

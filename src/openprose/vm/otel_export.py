"""The helper process of `prose run --trace`: reads finished spans, one JSON line each
(written by `openprose.vm.otel.ExportProcess`), and exports them as the environment says
(`OTEL_*`, see `processor_from_environment`). At end of input it exports what it holds and
exits, so it never outlives the run that started it."""

from __future__ import annotations

import sys

import orjson
from opentelemetry.trace import SpanKind, Status, StatusCode

from openprose.vm.otel import processor_from_environment, readable


def main() -> int:
    import os

    processor, resource = processor_from_environment(os.environ)
    kinds = {kind.value: kind for kind in SpanKind}
    codes = {code.value: code for code in StatusCode}
    try:
        for line in sys.stdin.buffer:
            try:
                name, trace_id, span_id, parent, kind, code, why, start, end, attributes = (
                    orjson.loads(line)
                )
            except (orjson.JSONDecodeError, ValueError):
                continue  # a line torn by the run's death: the rest still goes out
            trace = int(trace_id, 16)
            processor.on_end(
                readable(
                    name,
                    (trace, int(span_id, 16)),
                    None if parent is None else (trace, int(parent, 16)),
                    kinds[kind],
                    Status(codes[code], why),
                    start,
                    end,
                    attributes,
                    resource,
                )
            )
    finally:
        processor.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The GenAI client metrics of a run's model calls: `gen_ai.client.operation.duration` (s)
and `gen_ai.client.token.usage` ({token}, by `gen_ai.token.type`), histograms with the
bucket boundaries the OpenTelemetry GenAI conventions give them.

They are made from the finished model call spans' records (`openprose.telemetry.otlp.CALL`),
never in the VM: `prose run --trace` aggregates them in the export helper, which sends them
as an OTLP `ExportMetricsServiceRequest` (cumulative temporality) encoded here by hand, as
the spans are (`CallMetrics`); a tracer given an SDK `MeterProvider` in Python records them
on that provider's histograms instead (`SdkCallMetrics`). Both take the measurements from
`call_points`, so the two agree.

Token types: `input` is the whole prompt, the tokens read from and written to the provider's
prompt cache included (as `gen_ai.usage.input_tokens` is); `output` the answer. The
conventions name no type for cache tokens yet, so the parts of the prompt read from and
written to the cache are recorded under the custom types `cache_read` and `cache_creation`
(only when the provider reported some): they are parts of `input`, never to be added to it.
"""

from __future__ import annotations

import struct
import time
from bisect import bisect_left
from collections.abc import Mapping

from openprose.telemetry.otlp import CALL, attributes, varint

TYPE_CHECKING = False  # the export helper starts without `typing`
if TYPE_CHECKING:
    from typing import Any

    from opentelemetry.metrics import Histogram, MeterProvider

    Attributes = tuple[tuple[str, Any], ...]
    Point = tuple[str, float, Attributes]  # instrument, value, attributes

OPERATION_DURATION = "gen_ai.client.operation.duration"
TOKEN_USAGE = "gen_ai.client.token.usage"
# name: (unit, description, explicit bucket boundaries), as the conventions give them.
INSTRUMENTS: dict[str, tuple[str, str, tuple[float, ...]]] = {
    OPERATION_DURATION: (
        "s",
        "GenAI operation duration.",
        (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92),
    ),
    TOKEN_USAGE: (
        "{token}",
        "Number of input and output tokens used.",
        tuple(float(4**power) for power in range(14)),  # 1, 4, 16 ... 67,108,864
    ),
}


def call_points(record: tuple[Any, ...]) -> list[Point]:
    """The measurements of one model call attempt (a `CALL` record): its duration, and, when
    it was answered, its tokens by type."""
    (_, _, _, _, _, _, start, end, _, model, _, _, _, provider, _, _, finish, tokens_in,
     tokens_out, answered_by, _, error, _, _, _, cache_read, cache_write, _, address,
     port) = record  # fmt: skip
    common: Attributes = (
        ("gen_ai.operation.name", "chat"),
        ("gen_ai.provider.name", provider),
        ("gen_ai.request.model", model),
    )
    if address is not None:
        common += (("server.address", address), ("server.port", port))
    if answered_by:
        common += (("gen_ai.response.model", answered_by),)
    timed = common + (("error.type", error),) if error else common
    points: list[Point] = [(OPERATION_DURATION, max(0, end - start) / 1e9, timed)]
    if finish is not None:
        counted = (
            ("input", tokens_in),
            ("output", tokens_out),
            ("cache_read", cache_read),
            ("cache_creation", cache_write),
        )
        for kind, count in counted:
            if count or kind in ("input", "output"):
                points.append((TOKEN_USAGE, count or 0, (*common, ("gen_ai.token.type", kind))))
    return points


# Where each token type's count is in a `CALL` record.
_TOKEN_AT = {"input": 17, "output": 18, "cache_read": 25, "cache_creation": 26}


def _shape(record: tuple[Any, ...]) -> tuple[Any, ...]:
    """What decides a call's points and their attributes (see `call_points`): provider,
    model, server, response model, error, whether it was answered and had cache tokens."""
    return (record[13], record[9], record[28], record[29], record[19], record[21],
            record[16] is None, not record[25], not record[26])  # fmt: skip


class _Series:
    """One histogram data point: the measurements with one set of attributes."""

    __slots__ = ("buckets", "count", "high", "low", "total")

    def __init__(self, bounds: int) -> None:
        self.buckets = [0] * (bounds + 1)
        self.count = 0
        self.total = 0.0
        self.low = float("inf")
        self.high = float("-inf")

    def add(self, value: float, bounds: tuple[float, ...]) -> None:
        self.buckets[bisect_left(bounds, value)] += 1  # bucket i holds (bounds[i-1], bounds[i]]
        self.count += 1
        self.total += value
        self.low = min(self.low, value)
        self.high = max(self.high, value)


class CallMetrics:
    """The run's metrics, aggregated from call records as they come (in the export helper),
    and encoded as one OTLP request whenever they are exported (cumulative totals)."""

    def __init__(self) -> None:
        self.start = time.time_ns()
        self._series: dict[str, dict[Attributes, _Series]] = {name: {} for name in INSTRUMENTS}
        # A fan-out's calls share their attributes: the series a call adds to, by what its
        # attributes are made of (`_shape`), so that a call costs a lookup, not `call_points`.
        self._shapes: dict[tuple[Any, ...], list[tuple[_Series, tuple[float, ...], int]]] = {}

    def add(self, records: list[Any]) -> None:
        """Counts the model call records among `records` (spans of any shape)."""
        shapes = self._shapes
        for record in records:
            if record[0] != CALL:
                continue
            shape = _shape(record)
            targets = shapes.get(shape)
            if targets is None:
                targets = shapes[shape] = self._targets(record)
            for series, bounds, at in targets:
                if at:  # a token count, at this index of the record
                    series.add(record[at] or 0, bounds)
                else:  # the duration
                    series.add(max(0, record[7] - record[6]) / 1e9, bounds)

    def _targets(self, record: tuple[Any, ...]) -> list[tuple[_Series, tuple[float, ...], int]]:
        """The series `record`'s points go to, each with where its value is in a record of
        its shape (0: the duration)."""
        targets = []
        for name, _, attributes_ in call_points(record):
            bounds = INSTRUMENTS[name][2]
            series = self._series[name].get(attributes_)
            if series is None:
                series = self._series[name][attributes_] = _Series(len(bounds))
            kind = attributes_[-1][1] if name == TOKEN_USAGE else ""
            targets.append((series, bounds, _TOKEN_AT.get(kind, 0)))
        return targets

    def request(
        self, resource: Mapping[str, Any], scope_name: str, schema_url: str = ""
    ) -> bytes | None:
        """The `ExportMetricsServiceRequest` of the totals so far; None before any call."""
        now = time.time_ns()
        metrics = [
            self._metric(name, series, now) for name, series in self._series.items() if series
        ]
        if not metrics:
            return None
        scope = _field(b"\x0a", _field(b"\x0a", scope_name.encode()))
        scope_metrics = _field(b"\x12", scope + b"".join(metrics))
        resource_part = _field(b"\x0a", attributes(b"\x0a", resource))
        schema = _field(b"\x1a", schema_url.encode()) if schema_url else b""
        return _field(b"\x0a", resource_part + scope_metrics + schema)

    def _metric(self, name: str, series: dict[Attributes, _Series], now: int) -> bytes:
        unit, description, bounds = INSTRUMENTS[name]
        encoded_bounds = _field(b"\x3a", struct.pack(f"<{len(bounds)}d", *bounds))
        points = []
        for attributes_, one in series.items():
            point = b"".join(
                (
                    attributes(b"\x4a", dict(attributes_)),
                    b"\x11" + struct.pack("<Q", self.start),
                    b"\x19" + struct.pack("<Q", now),
                    b"\x21" + struct.pack("<Q", one.count),
                    b"\x29" + struct.pack("<d", one.total),
                    _field(b"\x32", struct.pack(f"<{len(one.buckets)}Q", *one.buckets)),
                    encoded_bounds,
                    b"\x59" + struct.pack("<d", one.low),
                    b"\x61" + struct.pack("<d", one.high),
                )
            )
            points.append(_field(b"\x0a", point))
        histogram = b"".join(points) + b"\x10\x02"  # AGGREGATION_TEMPORALITY_CUMULATIVE
        return _field(
            b"\x12",
            _field(b"\x0a", name.encode())
            + _field(b"\x12", description.encode())
            + _field(b"\x1a", unit.encode())
            + _field(b"\x4a", histogram),
        )


def _field(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return tag + varint(len(payload)) + payload


class SdkCallMetrics:
    """The same metrics on an OpenTelemetry SDK `MeterProvider` (an application's, given to
    the tracer in Python), recorded as each call span ends."""

    def __init__(self, provider: MeterProvider, scope_name: str) -> None:
        meter = provider.get_meter(scope_name)
        self._histograms: dict[str, Histogram] = {
            name: meter.create_histogram(
                name,
                unit=unit,
                description=description,
                explicit_bucket_boundaries_advisory=list(bounds),
            )
            for name, (unit, description, bounds) in INSTRUMENTS.items()
        }

    def add(self, record: tuple[Any, ...]) -> None:
        for name, value, attributes_ in call_points(record):
            self._histograms[name].record(value, dict(attributes_))


def metrics_wanted(env: Mapping[str, str], traces_exporter: str) -> bool:
    """Whether the export helper sends metrics: `OTEL_METRICS_EXPORTER=otlp` or `none` says
    so; unset, metrics go with OTLP traces, unless only a traces endpoint is configured (a
    collector for traces alone). ValueError naming an exporter we do not have."""
    chosen = (env.get("OTEL_METRICS_EXPORTER") or "").split(",")[0].strip().lower()
    if chosen in ("otlp", "none"):
        return chosen == "otlp"
    if chosen:
        raise ValueError(
            f"OTEL_METRICS_EXPORTER={chosen!r} is not supported here (use otlp or none)"
        )
    if traces_exporter != "otlp":
        return False
    traces_only = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") and not (
        env.get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    )
    return not traces_only


def export_interval(env: Mapping[str, str]) -> float:
    """Seconds between two exports of the totals during a run (`OTEL_METRIC_EXPORT_INTERVAL`,
    milliseconds, default 60,000); they are exported at its end as well."""
    try:
        return max(0.0, float(env.get("OTEL_METRIC_EXPORT_INTERVAL") or 60000) / 1000)
    except ValueError:
        return 60.0

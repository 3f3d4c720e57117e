"""A traced batch on Ray: the workers get the `OTEL_*` settings, export their runs' traces,
and the batch's case spans link to them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openprose.cli import main
from tests.support.otlp_collector import running_collector

ray = pytest.importorskip("ray", reason="the [ray] extra is not installed")
pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra is not installed")


@pytest.mark.timeout(240)
def test_ray_workers_runs_are_traced_and_linked_to_their_cases(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "in.jsonl").write_text("".join(f'{{"topic": "t{i}"}}\n' for i in range(6)))
    with running_collector() as collector:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"{collector.url}/v1/traces")
        ray.init(num_cpus=2, include_dashboard=False, configure_logging=False)
        try:
            argv = ["batch", "p.prose", "in.jsonl", "--provider", "scripted:rules.yaml"]
            assert main([*argv, "--executor", "ray", "-o", "rows.jsonl"]) == 0
        finally:
            ray.shutdown()  # the workers' export helpers flush as their actors close
    spans = collector.spans()
    (batch,) = [s for s in spans if s.name == "prose batch p.prose"]
    cases = [s for s in spans if s.name.startswith("prose case ")]
    assert len(cases) == 6 and all(c.parent_span_id == batch.span_id for c in cases)
    runs = {s.span_id: s for s in spans if s.name == "prose run p.prose"}
    rows = [json.loads(x) for x in (project / "rows.jsonl").read_text().splitlines()]
    assert all(row["trace"]["trace_id"] for row in rows)
    for case in cases:
        (link,) = case.links
        assert runs[link.span_id].trace_id == link.trace_id != batch.trace_id

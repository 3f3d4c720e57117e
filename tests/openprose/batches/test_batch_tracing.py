"""A traced batch: one span for the batch, a child per case, each linked to its run's own
trace (exported where the run ran: here, or a worker process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.otlp_collector import running_collector

pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra is not installed")

RULES = """default: "ok"
rules:
  - match: "On fail"
    answer: "never"
    failures: [error, error, error, error, error, error]
"""


@pytest.mark.parametrize("processes", [1, 2])
def test_a_batch_span_has_a_child_per_case_linked_to_its_run(
    tmp_path: Path, processes: int
) -> None:
    (tmp_path / "rules.yaml").write_text(RULES)
    (tmp_path / "p.prose").write_text('input topic: "what"\noutput answer = session "On {topic}"\n')
    (tmp_path / "in.jsonl").write_text(
        '{"topic": "a"}\n{"topic": "fail"}\nnot json\n{"topic": "b"}\n'
    )
    with running_collector() as collector:
        environ = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PROSE_"))}
        environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = f"{collector.url}/v1/traces"
        done = subprocess.run(
            [sys.executable, "-m", "openprose.cli", "batch", "p.prose", "in.jsonl", "--trace"]
            + ["--provider", "scripted:rules.yaml", "--processes", str(processes)]
            + ["--max-concurrency", "2", "-o", "rows.jsonl"],
            check=False,
            cwd=tmp_path,
            env=environ,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    spans = collector.spans()
    (batch,) = [s for s in spans if s.name == "prose batch p.prose"]
    assert batch.status.code == batch.status.STATUS_CODE_ERROR  # a case failed
    cases = {s.name: s for s in spans if s.name.startswith("prose case ")}
    assert sorted(cases) == [f"prose case {line}" for line in (1, 2, 3, 4)]
    assert all(
        c.trace_id == batch.trace_id and c.parent_span_id == batch.span_id for c in cases.values()
    )
    runs = {s.span_id: s for s in spans if s.name == "prose run p.prose"}
    assert len(runs) == 3  # the invalid line never ran
    rows = {
        r["line"]: r for r in map(json.loads, (tmp_path / "rows.jsonl").read_text().splitlines())
    }
    for line in (1, 2, 4):
        (link,) = cases[f"prose case {line}"].links
        run = runs[link.span_id]  # the run's own trace, not the batch's
        assert link.trace_id == run.trace_id != batch.trace_id
        assert rows[line]["trace"]["trace_id"] == run.trace_id.hex()
        attributes = {a.key: a.value.string_value for a in run.attributes}
        assert attributes["prose.run.id"] == rows[line]["run_id"]
    assert cases["prose case 2"].status.code == batch.status.STATUS_CODE_ERROR
    assert cases["prose case 3"].links == [] and "trace" not in rows[3]
    assert cases["prose case 1"].status.code != batch.status.STATUS_CODE_ERROR


def test_without_tracing_rows_carry_no_trace(tmp_path: Path) -> None:
    (tmp_path / "rules.yaml").write_text(RULES)
    (tmp_path / "p.prose").write_text('input topic: "what"\noutput answer = session "On {topic}"\n')
    (tmp_path / "in.jsonl").write_text('{"topic": "a"}\n')
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PROSE_"))}
    done = subprocess.run(
        [sys.executable, "-m", "openprose.cli", "batch", "p.prose", "in.jsonl"]
        + ["--provider", "scripted:rules.yaml", "-o", "rows.jsonl"],
        check=False,
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    (row,) = map(json.loads, (tmp_path / "rows.jsonl").read_text().splitlines())
    assert "trace" not in row


@pytest.mark.parametrize(
    ("trace", "traced"),
    [(True, True), (None, True), (False, False)],  # None: as the OTLP environment says
)
def test_the_python_api_traces_a_batch_as_the_cli_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, trace: bool | None, traced: bool
) -> None:
    import openprose

    monkeypatch.chdir(tmp_path)
    for name in [n for n in os.environ if n.startswith(("OTEL_", "PROSE_"))]:
        monkeypatch.delenv(name)
    (tmp_path / "rules.yaml").write_text(RULES)
    (tmp_path / "p.prose").write_text('input topic: "what"\noutput answer = session "On {topic}"\n')
    (tmp_path / "in.jsonl").write_text('{"topic": "a"}\n{"topic": "b"}\n')
    with running_collector() as collector:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"{collector.url}/v1/traces")
        result = openprose.batch("p.prose", "in.jsonl", provider="scripted:rules.yaml", trace=trace)
        assert result.status == "succeeded"
        resumed = openprose.batch(resume=result.batch_id, trace=trace)  # nothing left to run
        assert resumed.stats.done_before == 2
    names = sorted(s.name for s in collector.spans() if s.name.startswith("prose "))
    rows = [json.loads(x) for x in result.output.read_text().splitlines()]
    if not traced:
        assert collector.spans() == [] and all("trace" not in row for row in rows)
        return
    # the batch, its resume (a batch span of its own), a case span and a run span per case
    assert names == sorted(
        ["prose batch p.prose"] * 2 + ["prose case 1", "prose case 2"] + ["prose run p.prose"] * 2
    )
    runs = {s.trace_id.hex() for s in collector.spans() if s.name == "prose run p.prose"}
    assert {row["trace"]["trace_id"] for row in rows} == runs

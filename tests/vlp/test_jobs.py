"""`vlp validate --jobs`: a file split between forked worker processes gives the report of
one process, byte for byte; a worker that dies is a clear error, never a partial report."""

from __future__ import annotations

import json
import os
import signal
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.vlp.corpora import CORPORA, VARIANTS, chunked_report, report_digest, run_cli
from tests.vlp.test_thread_scan import one_at_a_time, threads
from vlp import Problem, ThreadChecker, jobs, ndjson, scan, scan_parts
from vlp.cli import main

GOLDEN = json.loads(Path(__file__).with_name("golden_reports.json").read_text())


@pytest.fixture
def workers_started(monkeypatch: pytest.MonkeyPatch) -> list[jobs.Worker]:
    """The worker processes started, while still starting them."""
    started: list[jobs.Worker] = []
    real = jobs.Worker.__init__

    def counted(self: jobs.Worker, work: Any, what: str) -> None:
        real(self, work, what)
        started.append(self)

    monkeypatch.setattr(jobs.Worker, "__init__", counted)
    return started


def _report(path: str, **options: Any) -> tuple[list[tuple[Any, ...]], tuple[int, int, int]]:
    checker = ThreadChecker() if options.pop("thread", True) else None
    found: list[Problem] = []
    summary = scan(path, found.append, thread=checker, **options)
    if checker is not None:
        found += checker.finish()
    rows = [(p.line, p.code, p.id, p.message) for p in found]
    return rows, (summary.messages, summary.valid, summary.problems)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    threads(),
    st.sampled_from([2, 3, 5]),
    st.sampled_from([64, 256, 4096]),
    st.sampled_from([150, 1 << 20]),
    st.booleans(),
)
def test_split_reports_are_those_of_one_process(
    lines: list[bytes], job_count: int, chunk: int, max_line: int, thread: bool
) -> None:
    """Random mixes of valid, invalid, cut and blank lines, duplicate ids, forward and
    dangling references and seq gaps, in small reads (many parts, over-long lines at a
    part's start): the same problems in the same order, the same counts, as one process;
    and the problems of the plain oracle fed message by message."""
    data = b"\n".join(lines) + b"\n"
    if data.lstrip().startswith(b"["):
        return  # one JSON document, not NDJSON
    with tempfile.TemporaryDirectory() as scratch:
        path = os.path.join(scratch, "thread.ndjson")
        Path(path).write_bytes(data)
        options = {"chunk_bytes": chunk, "max_line_bytes": max_line, "thread": thread}
        alone = _report(path, jobs=1, **options)
        shared = _report(path, jobs=job_count, split_min_bytes=1, **options)
    assert shared == alone
    if thread and max_line > len(max(lines, key=len)):
        expected = one_at_a_time(data)
        assert sorted((code, line, ident, text) for line, code, ident, text in shared[0]) == (
            expected
        )


def test_a_large_file_is_shared_between_processes(
    tmp_path: Path, workers_started: list[jobs.Worker]
) -> None:
    """The hypothesis above is only worth something if files are split: check one is, in
    as many parts as asked, and that each part gets lines (its problems come back)."""
    corpus = tmp_path / "corpus.ndjson"
    corpus.write_bytes(CORPORA["invalid"]())
    alone = _report(str(corpus), jobs=1, chunk_bytes=4096)
    shared = _report(str(corpus), jobs=4, chunk_bytes=4096, split_min_bytes=1)
    assert len(workers_started) == 3
    assert shared == alone
    lines = [line for line, *_ in shared[0] if line is not None]
    assert max(lines) > 0.9 * shared[1][0]  # the last part's problems are there


@pytest.mark.parametrize("corpus", sorted(CORPORA))
def test_golden_reports_are_unchanged_with_jobs(
    corpus: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers_started: list[jobs.Worker]
) -> None:
    """The reports of the code before issue 11 (tests/vlp/golden_reports.json), through
    the CLI with 2 and 3 processes (a tiny split threshold), and through `scan` in small
    reads."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(ndjson, "SPLIT_MIN_BYTES", 1)
    (tmp_path / "corpus.ndjson").write_bytes(CORPORA[corpus]())
    for job_count in ("2", "3"):
        for variant, argv in VARIANTS.items():
            digest = report_digest(*run_cli([*argv, "--jobs", job_count]))
            assert digest == GOLDEN[f"{corpus}/{variant}"], (variant, job_count)
    if corpus == "threaded":  # the one corpus above 1 MiB, a read: it was split
        assert workers_started
    rows, counts = _report("corpus.ndjson", chunk_bytes=4096, jobs=3, split_min_bytes=1)
    report = [f"{line} {code} {ident} {text}" for line, code, ident, text in rows]
    report.append(" ".join(map(str, counts)))  # the lines of tests.vlp.corpora.chunked_report
    report_bytes = "\n".join(report).encode("utf-8", "backslashreplace")
    assert report_bytes == chunked_report("corpus.ndjson")
    assert report_digest(0, report_bytes) == GOLDEN[f"{corpus}/chunked"]


def test_small_files_and_stdin_keep_one_process(
    tmp_path: Path, workers_started: list[jobs.Worker], monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = tmp_path / "corpus.ndjson"
    corpus.write_bytes(CORPORA["threaded"]())
    assert main(["validate", "-q", "--jobs", "4", str(corpus)]) == 1  # under the threshold
    with corpus.open("rb") as stdin:
        monkeypatch.setattr("sys.stdin", type("Stdin", (), {"buffer": stdin})())
        monkeypatch.setattr(ndjson, "SPLIT_MIN_BYTES", 1)
        assert main(["validate", "-q", "--jobs", "4", "-"]) == 1
    assert workers_started == []


def _killed(*args: Any) -> Any:
    os.kill(os.getpid(), signal.SIGKILL)


def _failing(*args: Any) -> Any:
    raise MemoryError


@pytest.mark.parametrize("death", [_killed, _failing])
def test_a_worker_that_dies_is_a_clear_error(
    death: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    workers_started: list[jobs.Worker],
) -> None:
    """Killed or failed: exit 2, the cause on stderr, no summary line and no JSON report
    (nothing presented as complete), and no process left behind."""
    corpus = tmp_path / "corpus.ndjson"
    corpus.write_bytes(CORPORA["threaded"]())
    monkeypatch.setattr(ndjson, "SPLIT_MIN_BYTES", 1)
    monkeypatch.setattr(scan_parts, "_prepare_part", death)  # runs in the forked worker only
    for argv in (["--format", "json"], []):
        assert main(["validate", "--jobs", "2", *argv, str(corpus)]) == 2
        out, err = capsys.readouterr()
        assert "worker process" in err and "no complete report" in err
        if death is _killed:
            assert "killed by signal 9" in err
        assert "INVALID" not in out and "message(s)" not in out
        assert not out.startswith("{")
    assert len(workers_started) == 2
    assert all(worker._pid is None for worker in workers_started)  # reaped: no zombie


def test_jobs_must_be_a_positive_number(capsys: pytest.CaptureFixture[str]) -> None:
    for bad in ("0", "-1", "many"):
        with pytest.raises(SystemExit) as exit_:
            main(["validate", "--jobs", bad, "x.ndjson"])
        assert exit_.value.code == 2
        assert "--jobs" in capsys.readouterr().err

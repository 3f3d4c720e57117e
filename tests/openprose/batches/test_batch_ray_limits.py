"""The Ray executor keeps the batch's limits over all its actors: exactly `--max-runs` runs
in flight, and the provider limit (`--max-concurrency`) counted at the server."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from openprose.batches.on_ray import shares
from openprose.cli import main
from tests.support.fake_llm_server import fetch_stats, reset_server, start_in_subprocess

ray = pytest.importorskip("ray", reason="the [ray] extra is not installed")

CPUS = 4  # four actors on a 2-core machine: small, but several


@pytest.fixture(scope="module")
def server_and_ray() -> Iterator[str]:
    base_url, stop = start_in_subprocess(latency_ms=60)
    mp = pytest.MonkeyPatch()
    mp.setenv("OPENAI_BASE_URL", f"{base_url}/v1")
    mp.setenv("OPENAI_API_KEY", "test")
    ray.init(num_cpus=CPUS, include_dashboard=False, configure_logging=False)
    try:
        yield base_url
    finally:
        ray.shutdown()
        mp.undo()
        stop()


def run_batch_at(project: Path, base_url: str, *options: str) -> dict[str, int]:
    (project / "in.jsonl").write_text("".join(f'{{"topic": "t{i}"}}\n' for i in range(40)))
    reset_server(base_url)
    argv = ["batch", "p.prose", "in.jsonl", "--provider", "openai", "--executor", "ray"]
    assert main([*argv, *options]) == 0
    outputs = list((project / ".prose" / "batches").glob("*/outputs.jsonl"))
    assert len(outputs) == 1
    lines = [json.loads(x)["line"] for x in outputs[0].read_text().splitlines()]
    assert sorted(lines) == list(range(1, 41))
    return fetch_stats(base_url)


@pytest.mark.timeout(240)
def test_the_provider_limit_bounds_the_whole_batch(project: Path, server_and_ray: str) -> None:
    # four CPUs, but a limit of 3: three actors with one request each; before, each actor
    # opened its provider with the whole limit (up to 12 requests)
    stats = run_batch_at(project, server_and_ray, "--max-concurrency", "3", "--max-runs", "16")
    assert stats["completed"] == 40
    assert 2 <= stats["max_in_flight"] <= 3


@pytest.mark.timeout(240)
def test_exactly_max_runs_runs_are_in_flight(project: Path, server_and_ray: str) -> None:
    # 5 runs over four actors: 2+1+1+1 feeders, not 4 x ceil(5/4) = 8
    stats = run_batch_at(project, server_and_ray, "--max-concurrency", "10", "--max-runs", "5")
    assert stats["completed"] == 40
    assert 4 <= stats["max_in_flight"] <= 5


def test_shares_add_up_to_the_whole() -> None:
    assert shares(5, 4) == [2, 1, 1, 1]
    assert shares(8, 3) == [3, 3, 2]
    assert sum(shares(64, 48)) == 64 and min(shares(64, 48)) == 1


def test_actors_the_cluster_cannot_place_are_given_up_in_bounded_time(
    server_and_ray: str,
) -> None:
    from openprose.batches.on_ray import _place

    started = time.monotonic()
    # a worker process takes seconds to start on a loaded machine: a wait that allows it
    placed = _place(ray, 6, max_runs=10, max_concurrency=10, place_within=20)
    try:
        assert len(placed) == CPUS  # two of six would have waited for a CPU forever
        assert time.monotonic() - started < 60
    finally:
        for actor in placed:
            ray.kill(actor)

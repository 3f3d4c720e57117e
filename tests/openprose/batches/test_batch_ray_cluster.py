"""The Ray executor on a real two-node cluster on this machine (`tests/support/ray_cluster`),
started without the provider's settings (the batch ships them). The second node's processes
are killed mid-batch: the batch still ends with every row, none twice."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import openprose
from tests.support.fake_llm_server import fetch_stats, start_in_subprocess
from tests.support.ray_cluster import Cluster, two_node_cluster

pytest.importorskip("ray", reason="the [ray] extra is not installed")

pytestmark = pytest.mark.timeout(400)

CASES = 400
MAX_RUNS = 8


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    src = Path(openprose.__file__).parents[1]  # the workers run this checkout's code
    with two_node_cluster(tmp_path_factory.mktemp("ray"), src) as started:
        yield started


def test_a_killed_node_costs_only_its_cases_in_flight(cluster: Cluster, tmp_path: Path) -> None:
    (tmp_path / "p.prose").write_text(
        'input topic: "what"\nlet text = session "Write about {topic}"\noutput answer = text\n'
    )
    (tmp_path / "in.jsonl").write_text("".join(f'{{"topic": "t{i}"}}\n' for i in range(CASES)))
    secret = f"sk-canary-{secrets.token_hex(8)}"
    base_url, stop_server = start_in_subprocess(latency_ms=20)
    env = dict(cluster.env, RAY_ADDRESS=cluster.address)
    env.update(OPENAI_BASE_URL=f"{base_url}/v1", OPENAI_API_KEY=secret)
    rows_file = tmp_path / "rows.jsonl"
    try:
        batch = subprocess.Popen(
            [sys.executable, "-m", "openprose.cli", "batch", "p.prose", "in.jsonl"]
            + ["--provider", "openai", "--executor", "ray", "-o", str(rows_file)]
            + ["--max-runs", str(MAX_RUNS), "--max-concurrency", "6"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and batch.poll() is None:
            if rows_file.exists() and rows_file.read_text().count("\n") >= CASES // 4:
                break
            time.sleep(0.1)
        assert batch.poll() is None, batch.communicate()
        cluster.kill_second_node()  # kill -9 of every process of the second node
        _out, err = batch.communicate(timeout=240)
        stats = fetch_stats(base_url)
    finally:
        stop_server()
    assert batch.returncode == 0, err.decode()[-3000:]
    assert b"Traceback" not in err
    lines = [json.loads(x)["line"] for x in rows_file.read_text().splitlines()]
    assert sorted(lines) == list(range(1, CASES + 1))  # every row, none twice
    assert stats["completed"] >= CASES
    # only the calls in flight on the lost node were sent again (at most its runs)
    assert stats["attempts"] - CASES <= MAX_RUNS
    assert stats["max_in_flight"] <= 6  # the provider limit, over the whole batch
    for temp_dir in cluster.temp_dirs:  # the key reached the workers, never the logs
        for log in temp_dir.rglob("*"):
            if log.is_file() and not log.is_socket():
                assert secret.encode() not in log.read_bytes(), log

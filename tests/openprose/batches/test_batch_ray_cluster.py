"""The Ray executor on a real two-node cluster on this machine: a head on 127.0.0.2 and a
second node on 127.0.0.3, each its own raylet, temp folder and ports, token auth, started
with `ray start` in an environment without the provider's settings (the batch ships them).
The second node's processes are killed mid-batch: the batch still ends with every row."""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import openprose
from tests.support.fake_llm_server import fetch_stats, start_in_subprocess

pytest.importorskip("ray", reason="the [ray] extra is not installed")

pytestmark = pytest.mark.timeout(400)

RAY = str(Path(sys.executable).with_name("ray"))
PROVIDER_VARS = ("OPENAI_", "ANTHROPIC_", "PROSE_", "RAY_ADDRESS")
CASES = 400
MAX_RUNS = 8


@dataclass
class Cluster:
    address: str
    env: dict[str, str]  # what a process joining it needs (the auth token)
    second_node: subprocess.Popen[bytes]
    temp_dirs: tuple[Path, Path]


def free_port(host: str) -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def node_ports(host: str) -> list[str]:
    names = (
        "node-manager-port",
        "object-manager-port",
        "runtime-env-agent-port",
        "dashboard-agent-listen-port",
        "dashboard-agent-grpc-port",
        "metrics-export-port",
    )
    ports = [f"--{name}={free_port(host)}" for name in names]
    low = 20000 + secrets.randbelow(30000)  # the workers' own ports: a range of their own
    return [*ports, f"--min-worker-port={low}", f"--max-worker-port={low + 60}"]


def start_node(args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    """`ray start --block` in a session of its own, so killing the session kills the node:
    its raylet, its agents and its workers."""
    process = subprocess.Popen(
        [RAY, "start", "--block", "--disable-usage-stats", "--num-cpus=2", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    return process


def wait_for_nodes(env: dict[str, str], address: str, count: int) -> None:
    probe = (
        "import ray, time\n"
        f"ray.init(address={address!r}, configure_logging=False, log_to_driver=False)\n"
        "for _ in range(240):\n"
        f"    if len([n for n in ray.nodes() if n['Alive']]) >= {count}: break\n"
        "    time.sleep(0.5)\n"
        "else: raise SystemExit('nodes missing')\n"
    )
    subprocess.run([sys.executable, "-c", probe], env=env, check=True, timeout=240)


def stop(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(timeout=30)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    src = str(Path(openprose.__file__).parents[1])  # the workers run this checkout's code
    env = {k: v for k, v in os.environ.items() if not k.startswith(PROVIDER_VARS)}
    env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(32), PYTHONPATH=src)
    head_dir = tmp_path_factory.mktemp("head")
    second_dir = tmp_path_factory.mktemp("second")
    port = free_port("127.0.0.2")
    address = f"127.0.0.2:{port}"
    head = start_node(
        [
            "--head",
            "--node-ip-address=127.0.0.2",
            f"--port={port}",
            f"--temp-dir={head_dir}",
            "--include-dashboard=false",
            f"--dashboard-port={free_port('127.0.0.2')}",
            *node_ports("127.0.0.2"),
        ],
        env,
    )
    second = None
    try:
        wait_for_nodes(env, address, 1)
        second = start_node(
            [
                f"--address={address}",
                "--node-ip-address=127.0.0.3",
                f"--temp-dir={second_dir}",
                *node_ports("127.0.0.3"),
            ],
            env,
        )
        wait_for_nodes(env, address, 2)
        yield Cluster(address, env, second, (head_dir, second_dir))
    finally:
        if second is not None:
            stop(second)
        stop(head)


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
        stop(cluster.second_node)  # kill -9 of every process of the second node
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

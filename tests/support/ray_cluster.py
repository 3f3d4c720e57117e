"""A real two-node Ray cluster on this machine, for tests and benchmarks: a head on
127.0.0.2 and a second node on 127.0.0.3, each its own raylet, temp folder and ports, token
auth, started with `ray start` in an environment without any provider settings (a batch
must ship them). Each node is a session of its own, so `kill_node` kills all its processes
(raylet, agents, workers) as a lost machine would."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

RAY = str(Path(sys.executable).with_name("ray"))
PROVIDER_VARS = ("OPENAI_", "ANTHROPIC_", "PROSE_", "RAY_ADDRESS")
START_WAIT_S = 240  # `ray start` takes 20-30 s a node on a loaded 2-core machine


@dataclass
class Cluster:
    address: str
    env: dict[str, str]  # what a process joining it needs (the auth token, the code)
    second_node: subprocess.Popen[bytes]
    temp_dirs: tuple[Path, Path]

    def kill_second_node(self) -> None:
        _kill(self.second_node)


def _free_port(host: str) -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def _node_ports(host: str) -> list[str]:
    names = (
        "node-manager-port",
        "object-manager-port",
        "runtime-env-agent-port",
        "dashboard-agent-listen-port",
        "dashboard-agent-grpc-port",
        "metrics-export-port",
    )
    ports = [f"--{name}={_free_port(host)}" for name in names]
    low = 20000 + secrets.randbelow(30000)  # the workers' own ports: a range of their own
    return [*ports, f"--min-worker-port={low}", f"--max-worker-port={low + 60}"]


def _start_node(args: list[str], env: dict[str, str], cpus: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [RAY, "start", "--block", "--disable-usage-stats", f"--num-cpus={cpus}", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _wait_for_nodes(env: dict[str, str], address: str, count: int) -> None:
    probe = (
        "import ray, time\n"
        f"ray.init(address={address!r}, configure_logging=False, log_to_driver=False)\n"
        f"for _ in range({START_WAIT_S * 2}):\n"
        f"    if len([n for n in ray.nodes() if n['Alive']]) >= {count}: break\n"
        "    time.sleep(0.5)\n"
        "else: raise SystemExit('nodes missing')\n"
    )
    subprocess.run([sys.executable, "-c", probe], env=env, check=True, timeout=START_WAIT_S)


def _kill(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(timeout=30)


@contextmanager
def two_node_cluster(root: Path, src: Path, cpus: int = 2) -> Iterator[Cluster]:
    """The cluster, its temp folders under `root`, its workers running the code in `src`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(PROVIDER_VARS)}
    env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(32), PYTHONPATH=str(src))
    head_dir, second_dir = root / "head", root / "second"
    head_dir.mkdir(parents=True)
    second_dir.mkdir(parents=True)
    port = _free_port("127.0.0.2")
    address = f"127.0.0.2:{port}"
    head_args = [
        "--head",
        "--node-ip-address=127.0.0.2",
        f"--port={port}",
        f"--temp-dir={head_dir}",
        "--include-dashboard=false",
        f"--dashboard-port={_free_port('127.0.0.2')}",
        *_node_ports("127.0.0.2"),
    ]
    head = _start_node(head_args, env, cpus)
    second = None
    try:
        _wait_for_nodes(env, address, 1)
        second_args = [
            f"--address={address}",
            "--node-ip-address=127.0.0.3",
            f"--temp-dir={second_dir}",
            *_node_ports("127.0.0.3"),
        ]
        second = _start_node(second_args, env, cpus)
        _wait_for_nodes(env, address, 2)
        yield Cluster(address, env, second, (head_dir, second_dir))
    finally:
        if second is not None:
            _kill(second)
        _kill(head)

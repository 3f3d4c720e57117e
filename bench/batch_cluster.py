"""Issue 33's goal on a real two-node Ray cluster on this machine: 10,000 cases of a
one-session program against a loopback server answering in 20 ms, `prose batch --executor
ray` joining the cluster, and the second node killed (every process of it, kill -9) a third
of the way through. Printed: the time, rows and duplicate rows, the calls sent again and the
most requests the server saw in flight against the provider limit, and whether the API key
is anywhere in the nodes' logs.

    python bench/batch_cluster.py                  # 10,000 cases
    python bench/batch_cluster.py --n 2000 --no-kill
"""

from __future__ import annotations

import argparse
import json
import secrets
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from _loopback import REPO, fetch_stats, load_note, start_in_subprocess

from tests.support.ray_cluster import two_node_cluster

PROGRAM = 'input item: "the case"\noutput answer = session "Item {item}"\n'


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--max-runs", type=int, default=64)
    parser.add_argument("--max-concurrency", type=int, default=32)
    parser.add_argument("--no-kill", action="store_true")
    args = parser.parse_args()
    n = args.n
    base_url, stop_server = start_in_subprocess(args.latency_ms)
    secret = f"sk-canary-{secrets.token_hex(8)}"
    with tempfile.TemporaryDirectory(prefix="ray33-") as tmp:
        root = Path(tmp)
        (root / "p.prose").write_text(PROGRAM)
        (root / "in.jsonl").write_text("".join(f'{{"item": "x{i}"}}\n' for i in range(n)))
        rows_file = root / "rows.jsonl"
        started = time.perf_counter()
        with two_node_cluster(root / "ray", REPO / "src") as cluster:
            print(f"cluster up                : {time.perf_counter() - started:8.1f} s")
            env = dict(cluster.env, RAY_ADDRESS=cluster.address, OPENAI_API_KEY=secret)
            env["OPENAI_BASE_URL"] = f"{base_url}/v1"
            command = [sys.executable, "-m", "openprose.cli", "batch", "p.prose", "in.jsonl"]
            command += ["--provider", "openai", "--executor", "ray", "-o", str(rows_file)]
            command += ["--max-runs", str(args.max_runs)]
            command += ["--max-concurrency", str(args.max_concurrency)]
            started = time.perf_counter()
            batch = subprocess.Popen(command, cwd=root, env=env, stderr=subprocess.PIPE)
            killed_at = None
            while batch.poll() is None and not args.no_kill and killed_at is None:
                done = rows_file.read_text().count("\n") if rows_file.exists() else 0
                if done >= n // 3:
                    cluster.kill_second_node()
                    killed_at = done
                time.sleep(0.05)
            _, err = batch.communicate()
            seconds = time.perf_counter() - started
            stats = fetch_stats(base_url)
            leaked = [
                str(p)
                for d in cluster.temp_dirs
                for p in d.rglob("*")
                if p.is_file() and not p.is_socket() and secret.encode() in p.read_bytes()
            ]
        lines = Counter(json.loads(x)["line"] for x in rows_file.read_text().splitlines())
        stop_server()
        # printed before the folder (10,000 run folders) is deleted: that takes minutes
        print(f"prose batch (2-node ray)  : {seconds:8.1f} s  exit {batch.returncode}")
        print(f"second node killed at     : {killed_at} rows")
        print(
            f"rows                      : {len(lines)} of {n}, duplicates {sum(lines.values()) - len(lines)}"
        )
        print(
            f"calls sent again          : {stats['attempts'] - n}  (<= {args.max_runs} in flight)"
        )
        print(
            f"most requests in flight   : {stats['max_in_flight']}  (limit {args.max_concurrency})"
        )
        floor = n * args.latency_ms / 1000 / args.max_concurrency  # the limit's own pace
        print(
            f"Ray overhead a case       : {(seconds - floor) / n * 1e3:8.2f} ms (beyond {floor:.1f} s)"
        )
        print(f"API key in the nodes' logs: {leaked or 'nowhere'}")
        if b"Traceback" in err:
            print("a traceback reached stderr:\n" + err.decode()[-2000:])
        print(f"# {load_note()}")


if __name__ == "__main__":
    main()

"""`prose test examples` as a whole process: wall and CPU time of replaying every example's
cassettes, against the goal of issue 32 (under 10 s, offline).

    python bench/prose_test_examples.py            # 3 runs, the minimum counts
    python bench/prose_test_examples.py --repeat 5

It reports, it does not assert, and exits 0 (bench/README.md). The process runs this tree's
src/ with no provider variables and no network: the cassettes answer every request.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOAL_SECONDS = 10.0


def once() -> tuple[float, float, int]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.pop("PROSE_PROVIDER", None)
    env["PYTHONPATH"] = str(ROOT / "src")
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "openprose.cli", "test", "examples", "-q"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    return wall, usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="one run")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    runs = [once() for _ in range(1 if args.quick else max(1, args.repeat))]
    for wall, cpu, code in runs:
        print(f"prose test examples: {wall:6.2f} s wall, {cpu:6.2f} s CPU, exit {code}")
    best = min(wall for wall, _, _ in runs)
    verdict = "PASS" if best < GOAL_SECONDS and all(c == 0 for _, _, c in runs) else "FAIL"
    print(f"minimum wall {best:.2f} s (goal < {GOAL_SECONDS:.0f} s): {verdict}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

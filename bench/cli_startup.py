"""Start-up of the command line: `prose --help` (and `prose --version`, `vlp --help`), whole
process, this tree against a baseline commit. Goal: no slower than the baseline (ratio <= 1.05,
the noise of a shared machine).

    python bench/cli_startup.py                   # baseline: 966e13c (before issue 21)
    python bench/cli_startup.py --baseline main --runs 30

The baseline's `src/` is exported with `git archive` into a temporary folder and put first on
PYTHONPATH; both are started by the same interpreter exactly as the console script does
(`from openprose.cli import main`). Bytecode caching stays on, and one untimed warm-up per
variant fills the caches. The figure is the median of the runs, alternating the variants so
that machine load hits both alike.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _git_baseline import export

ROOT = Path(__file__).resolve().parent.parent
BASELINE = "966e13c"
GOAL = 1.05  # no slower than the baseline, within a shared machine's noise
COMMANDS = {
    "prose --help": ("openprose.cli", ["--help"]),
    "prose --version": ("openprose.cli", ["--version"]),
    "vlp --help": ("vlp.cli", ["--help"]),
}


def once(src: Path, module: str, args: list[str]) -> float:
    code = f"import sys; from {module} import main; sys.exit(main({args!r}))"
    env = {**os.environ, "PYTHONPATH": str(src)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, stdout=subprocess.DEVNULL, check=False)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=BASELINE, help=f"git ref (default {BASELINE})")
    parser.add_argument("--runs", type=int, default=20, help="timed runs per variant")
    parser.add_argument("--quick", action="store_true", help="5 runs: a smoke test")
    options = parser.parse_args()
    if options.quick:
        options.runs = 5
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as folder:
        variants = {"baseline": export(options.baseline, Path(folder)), "this tree": ROOT / "src"}
        print(f"baseline {options.baseline}; median of {options.runs} runs, whole process")
        worst = 0.0
        for label, (module, args) in COMMANDS.items():
            times: dict[str, list[float]] = {name: [] for name in variants}
            for src in variants.values():
                once(src, module, args)  # warm-up
            for _ in range(options.runs):
                for name, src in variants.items():
                    times[name].append(once(src, module, args))
            base = statistics.median(times["baseline"])
            this = statistics.median(times["this tree"])
            worst = max(worst, this / base)
            print(
                f"{label:16} baseline {base * 1000:6.1f} ms   this tree {this * 1000:6.1f} ms"
                f"   ratio {this / base:.3f}"
            )
        verdict = "PASS" if worst <= GOAL else "FAIL"
        print(f"worst ratio {worst:.3f} (goal <= {GOAL}): {verdict}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Start-up of the four command lines: CPU time of `prose/vlp/vpp/plsp --version` (and
`--help`), whole processes started through the virtualenv's console scripts, beside
`python -c pass` measured in the same run.

    python bench/cli_startup.py                      # this tree, median of 10 runs
    python bench/cli_startup.py --baseline 448fc68   # and a commit's src/ beside it

CPU time is user + system time of the whole process (os.wait4's resource usage): on a shared
machine it moves far less with other work than wall time does, which is printed beside it.
The console scripts import this tree's `src/` (put first on PYTHONPATH, as the tests do);
bytecode caching stays on and one untimed warm-up per command fills the caches. Commands run
round-robin, so machine load hits every row alike. A tree with `scripts/NAME` (the command
as a script file, pyproject's script-files) runs that file with this interpreter, as its
installed copy runs; a tree without it (an older baseline) runs the virtualenv's console script,
pip's entry-point wrapper, whose floor is `python -c 'import re'` (it imports re before our
code). Goals (issue 35): `prose --version` <= 0.03 s CPU, `vlp/vpp/plsp --version` <= 0.08 s
each; `--help` rows are for information.
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
BIN = Path(sys.executable).parent  # the virtualenv's console scripts live beside python
# label -> (argv, goal in CPU seconds or None); argv[0] "prose" etc. is one of our commands
COMMANDS: dict[str, tuple[list[str], float | None]] = {
    "python -c pass": ([sys.executable, "-c", "pass"], None),
    # What an entry-point console script costs before it imports anything of ours: pip's
    # wrapper runs `import re` (which loads enum and functools) to tidy argv[0].
    "python -c 'import re'": ([sys.executable, "-c", "import re"], None),
    "prose --version": (["prose", "--version"], 0.03),
    "vlp --version": (["vlp", "--version"], 0.08),
    "vpp --version": (["vpp", "--version"], 0.08),
    "plsp --version": (["plsp", "--version"], 0.08),
    "prose --help": (["prose", "--help"], None),
    "vlp --help": (["vlp", "--help"], None),
    "vpp --help": (["vpp", "--help"], None),
    "plsp --help": (["plsp", "--help"], None),
}
TOOLS = ("prose", "vlp", "vpp", "plsp")


def launch(argv: list[str], src: Path) -> list[str]:
    """``argv`` as the tree at ``src`` installs it: its script file when it has one, else
    the virtualenv's console script (pip's entry-point wrapper)."""
    if argv[0] not in TOOLS:
        return argv
    script = src.parent / "scripts" / argv[0]
    if script.is_file():
        return [sys.executable, str(script), *argv[1:]]
    return [str(BIN / argv[0]), *argv[1:]]


REFERENCE = "python -c pass"


def once(argv: list[str], src: Path) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one whole process running ``argv`` on ``src``."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    argv = launch(argv, src)
    started = time.perf_counter()
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    if process.returncode != 0:
        raise SystemExit(f"cli_startup: {' '.join(argv)} exited {process.returncode}")
    return usage.ru_utime + usage.ru_stime, wall


def measure(variants: dict[str, Path], runs: int) -> dict[tuple[str, str], list[float]]:
    """Per (variant, command): CPU and wall seconds of each run, taken round-robin."""
    cpu: dict[tuple[str, str], list[float]] = {}
    wall: dict[tuple[str, str], list[float]] = {}
    jobs = [(variant, label) for variant in variants for label in COMMANDS]
    for variant, label in jobs:  # warm-up: bytecode caches filled, not timed
        once(COMMANDS[label][0], variants[variant])
    for _ in range(runs):
        for variant, label in jobs:
            spent, took = once(COMMANDS[label][0], variants[variant])
            cpu.setdefault((variant, label), []).append(spent)
            wall.setdefault((variant, label), []).append(took)
    return {key: [statistics.median(cpu[key]), statistics.median(wall[key])] for key in cpu}


def report(variants: dict[str, Path], figures: dict[tuple[str, str], list[float]]) -> bool:
    """Print the table; True when every goal of this tree is met."""
    met = True
    for variant in variants:
        base_cpu = figures[(variant, REFERENCE)][0]
        print(f"\n{variant}  (CPU s = user+sys, median; 'over' = minus {REFERENCE})")
        print(f"{'command':22} {'CPU s':>7} {'over':>7} {'ratio':>6} {'wall s':>7}  goal")
        for label, (_, goal) in COMMANDS.items():
            cpu, wall = figures[(variant, label)]
            verdict = ""
            if goal is not None:
                passed = cpu <= goal
                verdict = f"<= {goal:.2f} s CPU: {'PASS' if passed else 'FAIL'}"
                met = met and (passed or variant != "this tree")
            print(
                f"{label:22} {cpu:7.3f} {cpu - base_cpu:+7.3f} {cpu / base_cpu:6.2f}"
                f" {wall:7.3f}  {verdict}"
            )
    return met


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="timed runs per command")
    parser.add_argument("--quick", action="store_true", help="3 runs: a smoke test")
    parser.add_argument("--baseline", metavar="REF", help="also measure this commit's src/")
    options = parser.parse_args()
    runs = 3 if options.quick else options.runs
    missing = [tool for tool in TOOLS if not (BIN / tool).exists()]
    if missing and not (ROOT / "scripts").is_dir():
        print(f"cli_startup: no console script {missing[0]}: install the project (pip -e .)")
        return 2
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    print(f"median of {runs} runs per command, whole processes ({sys.executable})")
    with tempfile.TemporaryDirectory() as folder:
        variants = {"this tree": ROOT / "src"}
        if options.baseline:
            variants[f"baseline {options.baseline}"] = export(options.baseline, Path(folder))
        met = report(variants, measure(variants, runs))
    print(f"\nthis tree, every --version goal: {'PASS' if met else 'FAIL'}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

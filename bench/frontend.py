"""Front-end speed: OpenProse ``check`` (parse + checker) against CPython's ``ast.parse``.

Generates a ~100,000-line OpenProse program that exercises every construct of the grammar,
and a Python file with the same number of lines; times both in one run and prints the ratio
(goal <= 1.0; above 3 is a defect). If ``openprose.checker`` cannot be imported yet, only
the parse is timed, and the output says so.

Then the same as whole processes, as a user runs them (issue 11's goal): ``prose check
bench.prose`` from spawn to exit against ``python -c "ast.parse(...)" bench.py``, each a fresh
interpreter (start-up, reading the file, the work, printing), per line; CPU from ``wait4``.

Both trees run from cached bytecode, as an installed package does: the children run without
PYTHONDONTWRITEBYTECODE (set in some shells; a tree without `__pycache__` then compiles its
sources on every run) and one untimed warm-up run of each writes it. ``--baseline REF`` also
runs that commit's `src/` (exported with `git archive`) in the same rounds.

    python bench/frontend.py [--lines N] [--repeat R] [--no-process] [--baseline REF]
"""

from __future__ import annotations

import argparse
import ast
import gc
import importlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from openprose.parser import ParseResult, parse_text

# One chunk of OpenProse; {i} makes every name unique (the namespace is flat).
_PROSE_CHUNK = '''\
# chunk {i}: every construct once
use "@bench/lib{i}" as lib{i}
input topic{i}: "The subject number {i}"

agent writer{i}:
  model: sonnet
  prompt: "You write clearly about {{topic{i}}}"
  persist: true
  skills: ["web-search", "summarizer"]
  permissions:
    read: ["*.md", "*.txt"]
    bash: deny

let draft{i} = session "Draft a plan for {{topic{i}}}\\twith \\"quotes\\""
const config{i} = session: writer{i}
  prompt: """
Multi-line prompt {i}
  keeps its indentation
"""
  context: [draft{i}]
  retry: 3
  backoff: exponential
draft{i} = resume: writer{i}
  prompt: "Revise"
  context: {{ draft{i}, config{i} }}
session review{i}: writer{i}
  model: opus

block pipeline{i}(subject{i}, mode{i}):
  session "Process {{subject{i}}} in {{mode{i}}}"
  do:
    session "Inner step"

do pipeline{i}("data", "strict")
session "Plan" -> session "Execute" -> session "Review"

parallel ("any", count: 2, on-fail: "ignore"):
  a{i} = session "Approach A"
  b{i} = session "Approach B"
  session "Approach C"

repeat 3 as r{i}:
  session "Generate idea"
    context: r{i}
for item{i}, n{i} in ["x", "y"]:
  session "Process" context: item{i}
parallel for t{i} in [draft{i}, config{i}]:
  session "Research"
loop until **the draft is polished** (max: 5) as k{i}:
  session "Improve"
    context: k{i}

let res{i} = lib{i}(topic: "quantum", depth: 2)
let go{i} = ask "Ship {{topic{i}}}?" timeout: "10m"
  options: ["yes", "no"]
  default: "no"
let {{ f{i}, s{i} }} = lib{i}(topic: "ai")
session "Cite"
  context: res{i}.sources
let out{i} = [draft{i}, config{i}]
  | filter:
      session "Keep?"
        context: item
  | map:
      session "Summarize"
        context: item
  | reduce(acc{i}, one{i}):
      session "Merge"
        context: [acc{i}, one{i}]
try:
  session "Risky"
    retry: 2
catch as err{i}:
  session "Recover"
    context: err{i}
  throw "Failed {i}"
finally:
  session "Clean up"
choice **the best approach**:
  option "Quick":
    session "Quick fix"
  option "Full":
    session "Refactor"
if **the code is safe**:
  session "Merge"
elif ***
  the code needs
  small changes
***:
  session "Fix"
else:
  session "Reject"
output result{i} = session "Finish"
  context: out{i}

'''

_PYTHON_CHUNK = '''\
# chunk {i}: a comparable Python workload
import os as os{i}
topic{i} = "The subject number {i}"


class Writer{i}:
    model = "sonnet"
    prompt = f"You write clearly about {{topic{i}}}"
    persist = True
    skills = ["web-search", "summarizer"]
    permissions = {{"read": ["*.md", "*.txt"], "bash": "deny"}}


draft{i} = session("Draft a plan for {i}\\twith \\"quotes\\"")
config{i} = session(
    agent=Writer{i},
    prompt="""
Multi-line prompt {i}
  keeps its indentation
""",
    context=[draft{i}],
    retry=3,
    backoff="exponential",
)
draft{i} = resume(Writer{i}, prompt="Revise", context={{"draft": draft{i}}})


def pipeline{i}(subject{i}, mode{i}):
    session(f"Process {{subject{i}}} in {{mode{i}}}")
    if subject{i}:
        session("Inner step")


pipeline{i}("data", "strict")
session("Plan"), session("Execute"), session("Review")
with parallel("any", count=2, on_fail="ignore") as p{i}:
    a{i} = p{i}.session("Approach A")
    b{i} = p{i}.session("Approach B")
    p{i}.session("Approach C")
for r{i} in range(3):
    session("Generate idea", context=r{i})
for n{i}, item{i} in enumerate(["x", "y"]):
    session("Process", context=item{i})
while not polished(draft{i}):
    session("Improve")
res{i} = lib(topic="quantum", depth=2)
f{i}, s{i} = lib(topic="ai")
session("Cite", context=res{i}.sources)
out{i} = [x for x in [draft{i}, config{i}] if keep(x)]
out{i} = [summarize(x) for x in out{i}]
try:
    session("Risky", retry=2)
except Exception as err{i}:
    session("Recover", context=err{i})
    raise RuntimeError("Failed {i}")
finally:
    session("Clean up")
if safe(draft{i}):
    session("Merge")
elif needs_changes(draft{i}):
    session("Fix")
else:
    session("Reject")
result{i} = session("Finish", context=out{i})


'''


def _build(chunk: str, lines: int) -> str:
    parts: list[str] = []
    count = 0
    i = 0
    while count < lines:
        text = chunk.format(i=i)
        parts.append(text)
        count += text.count("\n")
        i += 1
    return "".join(parts)


class Timing:
    """Best-of-N wall and CPU (process) time; CPU time is steadier on a shared machine."""

    def __init__(self) -> None:
        self.wall = float("inf")
        self.cpu = float("inf")

    def measure(self, run: Callable[[], object]) -> None:
        gc.collect()  # no run pays for garbage another left behind
        wall, cpu = time.perf_counter(), time.process_time()
        run()
        self.wall = min(self.wall, time.perf_counter() - wall)
        self.cpu = min(self.cpu, time.process_time() - cpu)


def _process(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) of one child process from spawn to exit; its output is discarded."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, _, usage = os.wait4(child.pid, 0)
    return time.perf_counter() - started, usage.ru_utime + usage.ru_stime


def _whole_processes(prose: str, python: str, repeat: int, trees: dict[str, Path]) -> None:
    """`prose check` of each tree (name -> its src/) and ast.parse, whole processes."""
    prose_lines, python_lines = prose.count("\n"), python.count("\n")
    cli = "import sys; from openprose.cli import main; sys.argv[0] = 'prose'; raise SystemExit(main())"
    parse = "import ast, sys; ast.parse(open(sys.argv[1], 'rb').read())"
    cached = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    best: dict[str, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        prose_file, python_file = Path(folder, "bench.prose"), Path(folder, "bench.py")
        prose_file.write_text(prose, encoding="utf-8")
        python_file.write_text(python, encoding="utf-8")
        runs = {
            f"`prose check` ({name})": (
                [sys.executable, "-c", cli, "check", str(prose_file)],
                {**cached, "PYTHONPATH": str(src)},
            )
            for name, src in trees.items()
        }
        runs["python ast.parse"] = ([sys.executable, "-c", parse, str(python_file)], cached)
        for argv, env in runs.values():  # warm-up: bytecode written, not timed
            _process(argv, env)
        for _ in range(repeat):  # interleaved, as above
            for side, (argv, env) in runs.items():
                wall, cpu = _process(argv, env)
                old = best.get(side, (float("inf"), float("inf")))
                best[side] = (min(old[0], wall), min(old[1], cpu))
    python_wall, python_cpu = best.pop("python ast.parse")
    print(f"whole processes (best of {repeat}; load {os.getloadavg()[0]:.2f}):")
    print(
        f"  python ast.parse: wall {python_wall:.3f} s, cpu {python_cpu:.3f} s"
        f" for {python_lines:,} lines"
    )
    for side, (prose_wall, prose_cpu) in best.items():
        wall_ratio = (prose_wall / prose_lines) / (python_wall / python_lines)
        cpu_ratio = (prose_cpu / prose_lines) / (python_cpu / python_lines)
        print(
            f"  {side}: wall {prose_wall:.3f} s, cpu {prose_cpu:.3f} s for {prose_lines:,} lines;"
            f" ratio per line: wall {wall_ratio:.2f}, cpu {cpu_ratio:.2f} ({_verdict(cpu_ratio)})"
        )


def _verdict(ratio: float) -> str:
    return "goal met" if ratio <= 1.0 else "DEFECT (> 3)" if ratio > 3 else "above goal"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3, help="best of R runs")
    parser.add_argument("--no-process", action="store_true", help="skip the whole-process figure")
    parser.add_argument("--baseline", metavar="REF", help="also run this commit's `prose check`")
    args = parser.parse_args()
    print(f"load {os.getloadavg()[0]:.2f} (1 min) on {os.cpu_count()} cores")

    prose = _build(_PROSE_CHUNK, args.lines)
    python = _build(_PYTHON_CHUNK, prose.count("\n"))
    prose_lines, python_lines = prose.count("\n"), python.count("\n")

    check: Callable[[ParseResult], object] | None
    try:
        check = importlib.import_module("openprose.checker").check
    except ImportError:
        check = None

    def run_prose() -> object:
        result: ParseResult = parse_text(prose, "bench.prose")
        return check(result) if check is not None else result

    sample = parse_text(prose, "bench.prose")
    found = len(sample.diagnostics)
    errors = sum(d.is_error for d in sample.diagnostics)
    del sample
    what = "check (parse + checker)" if check is not None else "parse only (checker not importable)"
    prose_timing, python_timing = Timing(), Timing()
    for _ in range(args.repeat):  # interleaved, so load changes hit both alike
        prose_timing.measure(run_prose)
        python_timing.measure(lambda: ast.parse(python))
    print(f"openprose {what}: {prose_lines:,} lines")
    print(f"  wall {prose_timing.wall:.3f} s, cpu {prose_timing.cpu:.3f} s (best of {args.repeat})")
    print(f"  parse diagnostics on the bench program: {found} ({errors} errors)")
    print(f"cpython ast.parse: {python_lines:,} lines")
    print(
        f"  wall {python_timing.wall:.3f} s, cpu {python_timing.cpu:.3f} s (best of {args.repeat})"
    )
    wall_ratio = prose_timing.wall / python_timing.wall
    cpu_ratio = prose_timing.cpu / python_timing.cpu
    print(f"ratio openprose/cpython: wall {wall_ratio:.2f} ({_verdict(wall_ratio)}),", end=" ")
    print(f"cpu {cpu_ratio:.2f} ({_verdict(cpu_ratio)})")
    if not args.no_process:
        with tempfile.TemporaryDirectory() as folder:
            trees = {"this tree": Path(__file__).resolve().parent.parent / "src"}
            if args.baseline:  # imported here: tests load this file without bench/ on the path
                from _git_baseline import export

                trees[args.baseline] = export(args.baseline, Path(folder))
            _whole_processes(prose, python, args.repeat, trees)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

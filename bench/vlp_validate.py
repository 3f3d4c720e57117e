"""Benchmark: `vlp validate` as a whole process vs orjson parse-only, and its thread checks
against the code before issue 11.

Generates N mixed messages (~5 % invalid) into a temporary directory, then measures, on the
same bytes in the same run (best of --repeat, rounds interleaved so that load from other
work hits every contender alike), CPU time (user + system of the child) and wall time:
  * parse-only, whole process: a Python process that reads the file in 1 MiB chunks,
    splits lines and orjson.loads each one;
  * `vlp validate FILE`, whole process, default options (thread checks on; a file this
    large is shared by one process per usable CPU, `--jobs` auto), output to a file; the
    same with `--jobs 1` (one process); and `vlp validate --jobs 1 --no-thread`. The CPU
    figures of the default run include its worker processes' CPU (they are reaped by it).
  * the same two commands of the baseline, the tree of commit 966e13c (before issue 11),
    exported with `git archive` and run by the same interpreter. The cost of the thread
    checks is (default - --no-thread), for this tree and for the baseline: what turning
    them on costs a user, report included. (The baseline also reported problems derived
    from invalid lines, a `seq` gap or a dangling reference after each, which issue 11
    removed; their count is printed.)
  * jsonschema: Draft202012Validator.is_valid on a parsed sample with the packaged schema.
  * with --instructions N: callgrind's instruction counts of parse-only, `vlp validate
    --jobs 1` and the baseline's, whole processes on the first N lines and on an empty file
    (start-up): the figure that holds on a loaded machine, where CPU time moves with the
    other processes' use of the shared caches.
The report of the default run is compared byte for byte with the --jobs 1 one and with the
baseline's (equal when the baseline has today's problem codes and wording).
Goals: vlp validate >= 0.5x parse-only (whole processes), thread checks >= 2x faster than
the baseline, vlp >= 25x jsonschema. The 1-minute load average is printed beside every
figure: on a shared machine, compare runs taken at similar load.

    python bench/vlp_validate.py            # 300,000 messages
    python bench/vlp_validate.py --n 100000 # quick run
    python bench/vlp_validate.py --baseline main
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import orjson
from _callgrind import Counter
from _callgrind import available as callgrind_available
from _git_baseline import ROOT, export

import vlp
from vlp.jobs import usable_cpus

BASELINE = "966e13c"  # the tree before issue 11

SENDERS = ["Operator", "Archivist", "TheObserver", "ResearchAgent", "Planner"]
SOURCES = [
    "https://medium.com/@vigilith/article-1",
    "database_query",
    "sha256:9f86d081884c7d65",
    "https://forum.vigilith.ai/post/123",
    "medium_api",
]


def _message(
    rng: random.Random, index: int, session: str, last_claim: int | None
) -> dict[str, Any]:
    kind = rng.choices(
        ["claim", "evidence", "query", "response", "correction", "notice", "session_context"],
        weights=[30, 20, 15, 15, 5, 10, 5],
    )[0]
    second = index % 86400
    msg: dict[str, Any] = {
        "id": f"MSG{index:08d}",
        "protocol": "VLP/1.1",
        "type": kind,
        "timestamp": f"2025-12-14T{second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}Z",
        "session_id": session,
        "seq": index + 1,
        "sender": rng.choice(SENDERS),
        "content": f"Report {index}: processed {rng.randint(1, 500)} records for the audit.",
        "confidence": round(rng.random(), 2),
    }
    if rng.random() < 0.5:
        msg["receiver"] = rng.choice(SENDERS)
    if kind == "evidence" and last_claim is not None:  # evidence supports a claim
        msg["refers_to"] = f"MSG{last_claim:08d}"
    elif kind in ("evidence", "response", "correction") or rng.random() < 0.2:
        msg["refers_to"] = f"MSG{max(index - rng.randint(1, 5), 0):08d}"
    if (
        kind in ("evidence", "correction", "claim")
        and rng.random() < 0.8
        or msg["confidence"] >= 0.9
    ):
        msg["provenance"] = rng.sample(SOURCES, rng.randint(1, 3))
    if kind == "evidence":
        msg["provenance"] = msg.get("provenance") or [SOURCES[0]]
    if rng.random() < 0.3:
        msg["keywords"] = rng.sample(["content", "publishing", "audit", "records", "ops"], 2)
    if rng.random() < 0.2:
        msg["safety"] = {"level": rng.choice(["safe", "safe", "review"]), "issues": []}
    if kind == "session_context":
        msg["content"] = {"messages": index, "summary": "session closed"}
    return msg


def _broken(rng: random.Random, msg: dict[str, Any]) -> bytes:
    """One of the ways messages go wrong in practice."""
    flaw = rng.randrange(8)
    if flaw == 0:
        del msg["confidence"]
    elif flaw == 1:
        msg["confidence"] = 1.5
    elif flaw == 2:
        msg["type"], msg["provenance"] = "evidence", []
    elif flaw == 3:
        msg["confidence"], msg["type"] = 0.97, "claim"
        msg.pop("provenance", None)
        msg.pop("safety", None)
    elif flaw == 4:
        msg["timestamp"] = "14/12/2025 10:30"
    elif flaw == 5:
        msg["protocol"] = "VLP/1.0"
    elif flaw == 6:
        return orjson.dumps(msg)[:-7]
    else:
        return b"[" + orjson.dumps(msg) + b"]"
    return orjson.dumps(msg)


def generate(path: Path, n: int, seed: int) -> int:
    rng = random.Random(seed)
    broken = 0
    with path.open("wb") as out:
        batch: list[bytes] = []
        last_claim: int | None = None
        for index in range(n):
            msg = _message(rng, index, f"S-bench-{index // 1000}", last_claim)
            if msg["type"] == "claim":
                last_claim = index
            if rng.random() < 0.05:
                batch.append(_broken(rng, msg))
                broken += 1
            else:
                batch.append(orjson.dumps(msg))
            if len(batch) == 10000:
                out.write(b"\n".join(batch) + b"\n")
                batch.clear()
        if batch:
            out.write(b"\n".join(batch) + b"\n")
    return broken


PARSE_ONLY = """
import sys, orjson
loads, parsed, carry = orjson.loads, 0, b""
with open(sys.argv[1], "rb") as stream:
    while chunk := stream.read(1024 * 1024):
        lines = (carry + chunk).split(b"\\n")
        carry = lines.pop()
        for line in lines:
            try:
                loads(line)
            except orjson.JSONDecodeError:
                pass
            parsed += 1
print(parsed)
"""


def whole_process(
    argv: list[str], out: Path, env: dict[str, str] | None = None
) -> tuple[float, float, int]:
    """Wall and CPU seconds (user + system of the child) of one command, and its exit code."""
    before = os.times()
    wall = time.perf_counter()
    with out.open("wb") as sink:
        code = subprocess.run(argv, stdout=sink, check=False, env=env).returncode
    wall = time.perf_counter() - wall
    after = os.times()
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return wall, cpu, code


def best_times(runs: list[Any], repeat: int) -> list[tuple[float, float, Any]]:
    """Best wall and CPU time of each run over ``repeat`` rounds, interleaved so that load
    from other processes on the machine hits every contender alike. A run returning
    ``(wall, cpu, result)`` (a child process) is timed by what it returns."""
    best: list[tuple[float, float, Any]] = [(float("inf"), float("inf"), None)] * len(runs)
    for _ in range(repeat):
        for index, (run, timed_itself) in enumerate(runs):
            wall, cpu = time.perf_counter(), time.process_time()
            result = run()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            if timed_itself:
                wall, cpu, result = result
            best[index] = (min(wall, best[index][0]), min(cpu, best[index][1]), result)
    return best


def export_built(ref: str, into: Path) -> Path:
    """``export`` of ``ref``, with its C extensions built in place when it has any (since
    vlp35e: ``vlp._keyscan``); returns its src/."""
    source = export(ref, into)
    build_files = ["setup.py", "pyproject.toml", "README.md"]
    present = subprocess.run(
        ["git", "-C", str(ROOT), "ls-tree", "--name-only", ref, *build_files],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    if "setup.py" in present:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", "--format=tar", ref, *present],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
        subprocess.run(
            [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
            cwd=into,
            check=True,
            capture_output=True,
        )
    return source


def _load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def _rates(label: str, count: int, wall: float, cpu: float) -> tuple[float, float]:
    print(
        f"{label:<30}: {count / cpu:10,.0f} msg/s CPU ({cpu:5.2f} s)"
        f"  {count / wall:10,.0f} msg/s wall  [{_load()}]"
    )
    return count / cpu, count / wall


def instructions(
    lines: Path,
    empty: Path,
    this_tree: list[str],
    this_env: dict[str, str],
    baseline_env: dict[str, str],
    baseline: str,
) -> None:
    """Instructions of whole processes on ``lines`` and on ``empty`` (start-up), per line
    with start-up taken out, and parse-only's share of each: the goal's ratio counted."""
    if not callgrind_available():
        print("-- instructions: valgrind not found, not counted")
        return
    count = sum(1 for _ in lines.open("rb"))
    contenders = [
        ("orjson parse-only", [sys.executable, "-c", PARSE_ONLY], this_env),
        ("vlp validate --jobs 1", [*this_tree, "validate", "--jobs", "1"], this_env),
        (f"{baseline}: --jobs 1", [*this_tree, "validate", "--jobs", "1"], baseline_env),
    ]
    print(f"-- instructions (callgrind), whole processes, {count:,} lines  [{_load()}]")
    figures: list[tuple[int, float]] = []
    for label, argv, env in contenders:
        totals = []
        for data in (lines, empty):
            counter = Counter()
            subprocess.run(
                [*counter.argv, *argv, str(data)], env=env, stdout=subprocess.DEVNULL, check=False
            )
            totals.append(counter.total())
        whole, start_up = totals
        per_line = (whole - start_up) / count
        figures.append((whole, per_line))
        share = (
            ""
            if not figures[1:]
            else (
                f"  parse-only / this: {figures[0][0] / whole:.2f}x whole,"
                f" {figures[0][1] / per_line:.2f}x per line"
            )
        )
        print(
            f"{label:<30}: {whole / 1e6:9,.1f} M  (start-up {start_up / 1e6:,.1f} M,"
            f" {per_line / 1e3:.1f} k a line){share}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=300_000, help="messages to generate")
    parser.add_argument("--sample", type=int, default=5_000, help="messages for jsonschema")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measure; best is kept")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 20,000 messages")
    parser.add_argument("--baseline", default=BASELINE, help=f"git ref (default {BASELINE})")
    parser.add_argument(
        "--instructions",
        type=int,
        default=0,
        metavar="N",
        help="also count instructions (callgrind) on the first N lines (slow: ~2 min at 60,000)",
    )
    args = parser.parse_args()
    if args.quick:
        args.n, args.repeat = 20_000, 2
    this_tree = [sys.executable, "-m", "vlp.cli"]
    print(f"[{_load()} at start]")

    with tempfile.TemporaryDirectory(prefix="vlp-bench-") as tmp:
        path = Path(tmp) / "messages.ndjson"
        out = Path(tmp) / "out.txt"
        broken = generate(path, args.n, args.seed)
        size = path.stat().st_size
        print(f"generated {args.n:,} messages ({broken:,} broken, {size / 1e6:.0f} MB)")
        baseline_src = export_built(args.baseline, Path(tmp) / "baseline")
        # An installed package runs from cached bytecode: with PYTHONDONTWRITEBYTECODE set
        # (as in some shells) every run would compile both trees' sources again (~0.24 G
        # instructions, most of a start-up), which parse-only never pays.
        this_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        baseline_env = {**this_env, "PYTHONPATH": str(baseline_src)}
        empty = Path(tmp) / "empty.ndjson"
        empty.touch()
        for env in (this_env, baseline_env):  # writes the bytecode before any timing
            subprocess.run(
                [*this_tree, "validate", str(empty)], env=env, check=True, stdout=subprocess.DEVNULL
            )

        def run(argv: list[str], sink: Path, env: dict[str, str] = this_env) -> Any:
            return (lambda: whole_process(argv, sink, env), True)

        reports = {name: Path(tmp) / f"{name}.txt" for name in ("now", "before")}
        reports["one process"] = Path(tmp) / "one.txt"
        parse, full, alone, lean, before_full, before_lean = best_times(
            [
                run([sys.executable, "-c", PARSE_ONLY, str(path)], out),
                run([*this_tree, "validate", str(path)], reports["now"]),
                run([*this_tree, "validate", "--jobs", "1", str(path)], reports["one process"]),
                run([*this_tree, "validate", "--jobs", "1", "--no-thread", str(path)], out),
                run([*this_tree, "validate", str(path)], reports["before"], baseline_env),
                run([*this_tree, "validate", "--no-thread", str(path)], out, baseline_env),
            ],
            args.repeat,
        )
        counts = {}
        for name, report in reports.items():
            lines = report.read_text().splitlines()
            counts[name] = len(lines) - 1
            print(
                f"vlp validate ({name}): exit {full[2]}, {counts[name]:,} problem(s); {lines[-1]}"
            )
        same = reports["now"].read_bytes() == reports["one process"].read_bytes()
        print(f"report of the default run == report of --jobs 1: {same}")
        same = reports["now"].read_bytes() == reports["before"].read_bytes()
        print(f"report of the default run == {args.baseline}'s, byte for byte: {same}")
        if args.instructions:
            counted = Path(tmp) / "counted.ndjson"
            with path.open("rb") as stream, counted.open("wb") as head:
                head.writelines(line for _, line in zip(range(args.instructions), stream))
            instructions(counted, empty, this_tree, this_env, baseline_env, args.baseline)

        validator = jsonschema.Draft202012Validator(vlp.load_schema())
        sample = []
        with path.open("rb") as stream:
            for line in stream:
                try:
                    sample.append(orjson.loads(line))
                except orjson.JSONDecodeError:
                    continue
                if len(sample) == args.sample:
                    break
        [(_, schema_cpu, schema_valid)] = best_times(
            [(lambda: sum(validator.is_valid(msg) for msg in sample), False)], 1
        )

    print(f"-- whole processes (best of {args.repeat}; {usable_cpus()} usable CPU(s))")
    parse_cpu, parse_wall = _rates("orjson parse-only", args.n, parse[0], parse[1])
    vlp_cpu, vlp_wall = _rates("vlp validate (default)", args.n, full[0], full[1])
    alone_cpu, alone_wall = _rates("vlp validate --jobs 1", args.n, alone[0], alone[1])
    _rates("vlp validate -j 1 --no-thread", args.n, lean[0], lean[1])
    _rates(f"{args.baseline}: vlp validate", args.n, before_full[0], before_full[1])
    _rates(f"{args.baseline}: --no-thread", args.n, before_lean[0], before_lean[1])
    for clock, ratio in (("CPU", vlp_cpu / parse_cpu), ("wall", vlp_wall / parse_wall)):
        goal = "met" if ratio >= 0.5 else "MISSED"
        print(
            f"vlp validate / parse-only ({clock:>4}): {ratio:5.2f}x  (goal >= 0.5x: {goal})"
            f"  [{_load()}]"
        )
    for clock, ratio in (("CPU", alone_cpu / parse_cpu), ("wall", alone_wall / parse_wall)):
        print(f"vlp validate --jobs 1 / parse-only ({clock:>4}): {ratio:5.2f}x  [{_load()}]")
    before_cpu = args.n / before_full[1]
    print(
        f"{args.baseline}: vlp validate / parse-only ( CPU): {before_cpu / parse_cpu:5.2f}x"
        f"  (this tree / {args.baseline}: {vlp_cpu / before_cpu:.2f}x)  [{_load()}]"
    )
    print("-- thread checks: (default - --no-thread), one process, whole processes, CPU")
    cost_before, cost_now = before_full[1] - before_lean[1], alone[1] - lean[1]
    print(
        f"before ({args.baseline})  : {cost_before:6.3f} s  "
        f"({counts['before']:,} problems in the report)"
    )
    print(f"now               : {cost_now:6.3f} s  ({counts['now']:,} problems in the report)")
    speedup = cost_before / max(cost_now, 1e-3)
    print(
        f"speed-up: {speedup:.1f}x  (goal >= 2x: {'met' if speedup >= 2 else 'MISSED'})"
        f"  [{_load()}]"
    )
    print("-- jsonschema, on a sample (CPU)")
    schema_rate = len(sample) / schema_cpu
    vs_schema = vlp_cpu / schema_rate
    print(f"jsonschema: {schema_rate:,.0f} msg/s ({schema_valid} of {len(sample)} valid)")
    print(
        f"vlp validate / jsonschema: {vs_schema:.1f}x  (goal >= 25x: "
        f"{'met' if vs_schema >= 25 else 'MISSED'})"
    )
    print(f"[{_load()} at end]")


if __name__ == "__main__":
    main()

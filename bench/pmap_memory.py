"""Flat memory: `prose run` of a `pmap` over 10,000 and over 100,000 items, as whole
processes, against the loopback OpenAI-compatible server (its own process). Goals (issue 35):
peak RSS at 100,000 <= 1.25x the 10,000-item run's + 3x the bytes of the 100,000-item run's
inputs and outputs; time per session at 100,000 <= at 10,000.

    python bench/pmap_memory.py                  # 10,000 and 100,000 items, 1 ms answers
    python bench/pmap_memory.py --quick          # 1,000 and 10,000
    python bench/pmap_memory.py --n 200000 --repeat 2

The program is vm_fanout.py's (the items are a program input, `--inputs items.json`):

    input items: "the collection"
    output results = items | pmap:
      session "Item {item}"

The "bytes of inputs and outputs" are the JSON of the inputs file plus the JSON of the
outputs the run prints: what the run must hold whatever it does. The baseline is the small
run measured in the same invocation (peak RSS from `wait4`, time from spawn to exit).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from _loopback import (
    Table,
    load_note,
    project_dir,
    prose_process,
    reset_server,
    set_project_root,
    start_in_subprocess,
    verdict,
)

RSS_FACTOR = 1.25
IO_FACTOR = 3
PROGRAM = 'input items: "the collection"\noutput results = items | pmap:\n  session "Item {item}"\n'


def one_run(base_url: str, n: int, concurrency: int) -> tuple[float, float, float, int]:
    """(wall s, CPU s, peak RSS MB, bytes of inputs + outputs) of one whole `prose run`."""
    items = [f"x{i}" for i in range(n)]
    inputs = json.dumps({"items": items})
    with project_dir() as project:
        (project / "fan.prose").write_text(PROGRAM, encoding="utf-8")
        (project / "items.json").write_text(inputs, encoding="utf-8")
        argv = ["run", "fan.prose", "--inputs", "items.json", "--provider", "openai"]
        argv += ["--max-concurrency", str(concurrency), "--max-sessions", "none", "--json"]
        wall, cpu, rss, out = prose_process(argv, project, base_url)
    result: dict[str, Any] = json.loads(out)
    assert result["status"] == "succeeded", result
    results = result["outputs"]["results"]
    assert len(results) == n and results[-1] == f"echo: Item x{n - 1}", results[-1]
    io_bytes = len(inputs.encode()) + len(json.dumps(result["outputs"]).encode())
    return wall, cpu, rss, io_bytes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=None, help="large run's items (default 100,000)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 1,000 and 10,000")
    parser.add_argument("--latency-ms", type=float, default=1.0)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=1, help="runs of each size (min kept)")
    parser.add_argument("--project-root", help="where run folders go (default: system temp)")
    args = parser.parse_args()
    where = set_project_root(args.project_root)
    large = args.n or (10_000 if args.quick else 100_000)
    small = large // 10
    print(
        f"pmap_memory: `prose run` of pmap x{small} and x{large} (whole processes), server "
        f"latency {args.latency_ms:g} ms, concurrency {args.concurrency}; {load_note()}; {where}"
    )
    base_url, stop = start_in_subprocess(latency_ms=args.latency_ms)
    runs: dict[int, list[tuple[float, float, float, int]]] = {small: [], large: []}
    try:
        for _ in range(args.repeat):
            for n in (small, large):
                reset_server(base_url)
                runs[n].append(one_run(base_url, n, args.concurrency))
    finally:
        stop()
    table = Table(
        "pmap memory", ("items", "wall s", "CPU s", "ms/session (wall)", "peak RSS MB", "I/O MB")
    )
    best: dict[int, tuple[float, float, float, int]] = {}
    for n, samples in runs.items():
        wall = min(s[0] for s in samples)
        cpu = min(s[1] for s in samples)
        rss = min(s[2] for s in samples)
        best[n] = (wall, cpu, rss, samples[0][3])
        table.add(
            n,
            f"{wall:.2f}",
            f"{cpu:.2f}",
            f"{wall / n * 1000:.3f}",
            f"{rss:.1f}",
            f"{samples[0][3] / 1e6:.2f}",
        )
    table.print()
    allowance = RSS_FACTOR * best[small][2] + IO_FACTOR * best[large][3] / 2**20
    rss_ok = best[large][2] <= allowance
    per_small, per_large = best[small][0] / small, best[large][0] / large
    time_ok = per_large <= per_small
    print(
        f"peak RSS x{large}: {best[large][2]:.1f} MB, allowance {allowance:.1f} MB "
        f"({RSS_FACTOR}x {best[small][2]:.1f} + {IO_FACTOR}x {best[large][3] / 2**20:.1f}): "
        f"{verdict(rss_ok)}"
    )
    print(
        f"time per session x{large}: {per_large * 1000:.3f} ms vs x{small}: "
        f"{per_small * 1000:.3f} ms: {verdict(time_ok)}"
    )
    print(load_note())


if __name__ == "__main__":
    main()

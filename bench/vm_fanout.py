"""Fan-out: `pmap` over 10,000 items against a loopback OpenAI-compatible server answering
after 20 ms, concurrency 256, beside a bare asyncio loop making the same 10,000 calls with the
same SDK (aiohttp transport) in the same run. Goal: VM wall time <= 1.25x the bare loop's.

    python bench/vm_fanout.py                 # issue sizes: 10,000 items, 20 ms, 256
    python bench/vm_fanout.py --quick         # 1,000 items
    python bench/vm_fanout.py --n 2000 --repeat 3

The program (generated; the items are a program input, not a 10,000-element literal):

    input items: "the collection"
    output results = items | pmap:
      session "Item {item}"

The bare loop sends byte-for-byte the same requests (user message `Item x17`, same model,
`max_tokens`) through `AsyncOpenAI(http_client=DefaultAioHttpClient(), max_retries=0)`, two
ways: 10,000 tasks behind an `asyncio.Semaphore(256)` (the textbook loop), and 256 worker tasks
pulling items (as the VM's pmap does); the ratio is against the faster of the two. Both sides get a fresh client per timed run
(so both pay for opening their connections), after one untimed warm-up run each; timed runs
alternate bare/VM. The server runs in its own process (`start_in_subprocess`).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import time
from typing import Any

from _loopback import (
    Table,
    bare_client,
    fetch_stats,
    load_note,
    parse_program,
    project_dir,
    reset_server,
    set_project_root,
    start_in_subprocess,
    summary,
    verdict,
    vm_openai_provider,
    vm_run,
)

GOAL_RATIO = 1.25
PROGRAM = 'input items: "the collection"\noutput results = items | pmap:\n  session "Item {item}"\n'
MODEL = "gpt-4.1-mini"  # what `sonnet` resolves to on the openai provider


def items_for(n: int) -> list[str]:
    return [f"x{i}" for i in range(n)]


async def bare_loop(base_url: str, items: list[str], concurrency: int) -> tuple[float, float]:
    """One task per item behind a Semaphore: the textbook bare loop."""
    client = bare_client(base_url)
    slots = asyncio.Semaphore(concurrency)

    async def one(item: str) -> str:
        async with slots:
            return await call(client, item)

    cpu = time.process_time()
    started = time.perf_counter()
    try:
        answers = await asyncio.gather(*(one(item) for item in items))
        elapsed = time.perf_counter() - started
        cpu = time.process_time() - cpu
    finally:
        await client.close()
    assert len(answers) == len(items) and answers[-1] == f"echo: Item {items[-1]}"
    return elapsed, cpu


async def bare_workers(base_url: str, items: list[str], concurrency: int) -> tuple[float, float]:
    """`concurrency` worker tasks pulling items, as the VM's pmap does: the fairest baseline
    (no task or semaphore wait per item)."""
    client = bare_client(base_url)
    answers: list[str] = [""] * len(items)
    cursor = iter(range(len(items)))

    async def worker() -> None:
        for index in cursor:
            answers[index] = await call(client, items[index])

    cpu = time.process_time()
    started = time.perf_counter()
    try:
        await asyncio.gather(*(worker() for _ in range(min(concurrency, len(items)))))
        elapsed = time.perf_counter() - started
        cpu = time.process_time() - cpu
    finally:
        await client.close()
    assert answers[-1] == f"echo: Item {items[-1]}"
    return elapsed, cpu


async def call(client: Any, item: str) -> str:
    completion = await client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": f"Item {item}"}],
        max_tokens=1024,
    )
    return completion.choices[0].message.content or ""


async def vm_loop(base_url: str, items: list[str], concurrency: int) -> tuple[float, float]:
    with project_dir() as project:
        program, _ = parse_program(PROGRAM, project)
        settings, provider = vm_openai_provider(base_url, project, concurrency)
        try:
            elapsed, cpu, result = await vm_run(
                program,
                PROGRAM,
                provider=provider,
                project=project,
                concurrency=concurrency,
                inputs={"items": items},
                settings=settings,
                expect_requests=len(items),
            )
        finally:
            await provider.aclose()
    assert result.outputs["results"][-1] == f"echo: Item {items[-1]}"
    return elapsed, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=None, help="items (default 10,000)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 1,000 items")
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=1, help="timed runs of each side")
    parser.add_argument(
        "--project-root", help="where run folders go (default: system temp; /dev/shm for tmpfs)"
    )
    args = parser.parse_args()
    where = set_project_root(args.project_root)
    n = args.n or (1_000 if args.quick else 10_000)
    items = items_for(n)
    warm = items_for(min(n, args.concurrency))

    print(
        f"vm_fanout: pmap x{n}, server latency {args.latency_ms:g} ms, concurrency "
        f"{args.concurrency}, repeat {args.repeat}; {load_note()}; {where}"
    )
    base_url, stop = start_in_subprocess(latency_ms=args.latency_ms)
    sides = {"bare": bare_loop, "workers": bare_workers, "vm": vm_loop}
    walls: dict[str, list[float]] = {side: [] for side in sides}
    cpu: dict[str, list[float]] = {side: [] for side in sides}
    peaks: dict[str, int] = {}
    try:
        for run in sides.values():
            asyncio.run(run(base_url, warm, args.concurrency))
        for _ in range(args.repeat):
            for side, run in sides.items():
                reset_server(base_url)
                wall, used = asyncio.run(run(base_url, items, args.concurrency))
                stats = fetch_stats(base_url)
                assert stats["completed"] == n, stats
                peaks[side] = max(peaks.get(side, 0), stats["max_in_flight"])
                walls[side].append(wall)
                cpu[side].append(used)
    finally:
        stop()

    ideal = math.ceil(n / args.concurrency) * args.latency_ms / 1000
    table = Table(
        f"fan-out (ideal wall at {args.concurrency} in flight: {ideal:.2f}s)",
        ("side", "wall s (min)", "wall s (median)", "CPU s", "calls/s", "peak in flight"),
    )
    labels = {"bare": "bare SDK loop", "workers": "bare SDK workers", "vm": "VM pmap"}
    best: dict[str, float] = {}
    for side, label in labels.items():
        wall, median = summary(walls[side])
        best[side] = wall
        table.add(label, wall, median, min(cpu[side]), f"{n / wall:.0f}", peaks[side])
    table.print()
    # Against the faster of the two bare loops, so the VM's worker pool is no advantage.
    base_side = min(("bare", "workers"), key=best.__getitem__)
    bare, vm = best[base_side], best["vm"]
    ratio = vm / bare
    print(
        f"\nVM / bare wall time: {ratio:.2f}x against the {labels[base_side]} "
        f"({best['vm'] / best['bare']:.2f}x / {best['vm'] / best['workers']:.2f}x against "
        f"each)  (goal <= {GOAL_RATIO}x)  {verdict(ratio <= GOAL_RATIO)}"
    )
    print(
        f"VM extra wall per session: {(vm - bare) / n * 1e6:.0f} us; "
        f"extra CPU per session: {(min(cpu['vm']) - min(cpu[base_side])) / n * 1e6:.0f} us"
    )
    print(f"load after: {load_note()}")


if __name__ == "__main__":
    main()

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
`max_tokens`) through `AsyncOpenAI(http_client=DefaultAioHttpClient(), max_retries=0)` with
10,000 tasks behind an `asyncio.Semaphore(256)`. Both sides get a fresh client per timed run
(so both pay for opening their connections), after one untimed warm-up run each; timed runs
alternate bare/VM. The server runs in its own process (`start_in_subprocess`).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import time

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
    client = bare_client(base_url)
    slots = asyncio.Semaphore(concurrency)

    async def one(item: str) -> str:
        async with slots:
            completion = await client.chat.completions.create(
                model=MODEL,
                messages=[{"role": "user", "content": f"Item {item}"}],
                max_tokens=1024,
            )
            return completion.choices[0].message.content or ""

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
    bare_s: list[float] = []
    vm_s: list[float] = []
    cpu: dict[str, list[float]] = {"bare": [], "vm": []}
    peaks: dict[str, int] = {}
    try:
        asyncio.run(bare_loop(base_url, warm, args.concurrency))
        asyncio.run(vm_loop(base_url, warm, args.concurrency))
        for _ in range(args.repeat):
            for side, run in (("bare", bare_loop), ("vm", vm_loop)):
                reset_server(base_url)
                wall, used = asyncio.run(run(base_url, items, args.concurrency))
                stats = fetch_stats(base_url)
                assert stats["completed"] == n, stats
                peaks[side] = max(peaks.get(side, 0), stats["max_in_flight"])
                (bare_s if side == "bare" else vm_s).append(wall)
                cpu[side].append(used)
    finally:
        stop()

    bare, bare_med = summary(bare_s)
    vm, vm_med = summary(vm_s)
    ideal = math.ceil(n / args.concurrency) * args.latency_ms / 1000
    ratio = vm / bare
    table = Table(
        f"fan-out (ideal wall at {args.concurrency} in flight: {ideal:.2f}s)",
        ("side", "wall s (min)", "wall s (median)", "CPU s", "calls/s", "peak in flight"),
    )
    table.add("bare SDK loop", bare, bare_med, min(cpu["bare"]), f"{n / bare:.0f}", peaks["bare"])
    table.add("VM pmap", vm, vm_med, min(cpu["vm"]), f"{n / vm:.0f}", peaks["vm"])
    table.print()
    print(
        f"\nVM / bare wall time: {ratio:.2f}x  (goal <= {GOAL_RATIO}x)  {verdict(ratio <= GOAL_RATIO)}"
    )
    print(
        f"VM extra wall per session: {(vm - bare) / n * 1e6:.0f} us; "
        f"extra CPU per session: {(min(cpu['vm']) - min(cpu['bare'])) / n * 1e6:.0f} us"
    )
    print(f"load after: {load_note()}")


if __name__ == "__main__":
    main()

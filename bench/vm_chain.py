"""Chain: 200 dependent sequential sessions against a loopback OpenAI-compatible server
answering after 20 ms, journal on, beside a plain aiohttp + orjson loop making the same 200
dependent calls in the same run. Goal: VM overhead <= 0.5 ms per session over the plain loop.

    python bench/vm_chain.py                  # issue size: 200 sessions, 20 ms
    python bench/vm_chain.py --quick          # 50 sessions
    python bench/vm_chain.py --n 500 --repeat 5

The program is generated unrolled, one binding per session, each prompt interpolating the
previous answer (so session N cannot start before N-1 has answered):

    let s0 = session "step 0"
      context: []
    let s1 = session "step 1 {s0}"
      context: []
    ...
    output last = s199

`context: []` keeps the prompt to the dependency itself: with the default context (the last
20 answers) and the fake server's echo replies, prompts would grow geometrically and the
figure would measure string building, not per-session overhead. With it the prompts still
grow linearly (each echo contains the previous one: the last is ~3 kB); the bare loop sends
byte-for-byte the same prompts. The journal, run folder, binding files and state.md are all
on (the VM's defaults). The VM runs through `run_program` in this process with the provider
`prose run --provider openai` opens (so the figure is per session, without the one-off
start-up that bench/vm_startup.py measures). Timed runs alternate plain/VM; the figure uses
the minimum of each. With the official `openai` SDK installed (no dependency), its loop is
timed too, for reference.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from _loopback import (
    PlainClient,
    Table,
    load_note,
    parse_program,
    project_dir,
    sdk_client,
    sdk_installed,
    set_project_root,
    start_in_subprocess,
    summary,
    verdict,
    vm_openai_provider,
    vm_run,
)

GOAL_MS = 0.5
MODEL = "gpt-4.1-mini"  # what `sonnet` resolves to on the openai provider


def chain_program(n: int) -> str:
    lines = ['let s0 = session "step 0"', "  context: []"]
    for i in range(1, n):
        lines += [f'let s{i} = session "step {i} {{s{i - 1}}}"', "  context: []"]
    lines.append(f"output last = s{n - 1}")
    return "\n".join(lines) + "\n"


async def bare_loop(base_url: str, n: int) -> tuple[float, str]:
    client = PlainClient(base_url, 16)
    answer = ""
    started = time.perf_counter()
    try:
        for i in range(n):
            answer = await client.ask(MODEL, f"step {i} {answer}" if i else "step 0")
        elapsed = time.perf_counter() - started
    finally:
        await client.close()
    return elapsed, answer


async def sdk_loop(base_url: str, n: int) -> tuple[float, str]:
    client = sdk_client(base_url)
    answer = ""
    started = time.perf_counter()
    try:
        for i in range(n):
            prompt = f"step {i} {answer}" if i else "step 0"
            completion = await client.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": prompt}], max_tokens=1024
            )
            answer = completion.choices[0].message.content or ""
        elapsed = time.perf_counter() - started
    finally:
        await client.close()
    return elapsed, answer


async def vm_loop(base_url: str, n: int) -> tuple[float, str]:
    source = chain_program(n)
    with project_dir() as project:
        program, _ = parse_program(source, project)
        settings, provider = vm_openai_provider(base_url, project, 16)
        try:
            elapsed, _, result = await vm_run(
                program,
                source,
                provider=provider,
                project=project,
                concurrency=16,
                settings=settings,
                expect_requests=n,
            )
        finally:
            await provider.aclose()
    return elapsed, str(result.outputs["last"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=None, help="sessions (default 200)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 50 sessions")
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of each side")
    parser.add_argument(
        "--project-root", help="where run folders go (default: system temp; /dev/shm for tmpfs)"
    )
    args = parser.parse_args()
    where = set_project_root(args.project_root)
    n = args.n or (50 if args.quick else 200)

    print(
        f"vm_chain: {n} dependent sessions, server latency {args.latency_ms:g} ms, "
        f"repeat {args.repeat}; {load_note()}; {where}"
    )
    base_url, stop = start_in_subprocess(latency_ms=args.latency_ms)
    bare_s: list[float] = []
    vm_s: list[float] = []
    sdk_s: list[float] = []
    with_sdk = sdk_installed()
    try:
        asyncio.run(bare_loop(base_url, min(n, 10)))  # warm-up: imports, code paths
        asyncio.run(vm_loop(base_url, min(n, 10)))
        for _ in range(args.repeat):
            wall, bare_answer = asyncio.run(bare_loop(base_url, n))
            bare_s.append(wall)
            wall, vm_answer = asyncio.run(vm_loop(base_url, n))
            vm_s.append(wall)
            if vm_answer != bare_answer:
                raise SystemExit("the VM and the plain loop did not send the same prompts")
            if with_sdk:
                sdk_s.append(asyncio.run(sdk_loop(base_url, n))[0])
    finally:
        stop()

    bare, bare_med = summary(bare_s)
    vm, vm_med = summary(vm_s)
    overhead_ms = (vm - bare) / n * 1000
    overhead_med = (vm_med - bare_med) / n * 1000
    table = Table(
        f"chain (floor: {n} x {args.latency_ms:g} ms = {n * args.latency_ms / 1000:.2f}s)",
        ("side", "wall s (min)", "wall s (median)", "ms/session (min)"),
    )
    table.add("plain aiohttp+orjson loop", bare, bare_med, bare / n * 1000)
    table.add("VM chain", vm, vm_med, vm / n * 1000)
    if sdk_s:
        table.add(
            "openai SDK loop (reference)", min(sdk_s), summary(sdk_s)[1], min(sdk_s) / n * 1000
        )
    table.print()
    if not with_sdk:
        print("note: the openai SDK is not installed (no dependency): no SDK reference figure")
    print(
        f"\nVM overhead: {overhead_ms:.2f} ms/session (median-based {overhead_med:.2f}); "
        f"ratio {vm / bare:.2f}x  (goal <= {GOAL_MS:g} ms)  {verdict(overhead_ms <= GOAL_MS)}"
    )
    print(f"load after: {load_note()}")


if __name__ == "__main__":
    main()

"""VM overhead per session with no HTTP: the replay provider with zero latency, journal on.

Figures, each beside bare asyncio baselines measured in the same run:
  * fan-out: `pmap` over 10,000 items; goal <= 100 us of VM overhead per session;
  * chain:   1,000 dependent sequential sessions; goal <= 300 us per session;
  * scaling: the fan-out at 1,000 / 10,000 / 100,000 items must stay flat per session
             (no superlinear growth); also the chain at 1,000 / 10,000 steps.

    python bench/vm_overhead.py               # issue sizes
    python bench/vm_overhead.py --quick       # 1,000 items, 200-step chain, scales 500..5,000
    python bench/vm_overhead.py --only fanout --profile      # cProfile of the VM side
    py-spy record -o vm.svg -- python bench/vm_overhead.py --only fanout

Programs (generated):
    fan-out   input items: "the collection"
              output results = items | pmap:
                session "Item {item}"
    chain     let s0 = session "step 0"          (unrolled: one binding per session;
                context: []                       `context: []` so a prompt is only its
              let s1 = session "step 1 {s0}"      dependency, see vm_chain.py)
                context: []
              ...

Provider: an in-memory `ReplayProvider` holding exactly the requests the program sends
(answers `r17`, so prompts stay short). Baselines, same run, same process:
  * bare tasks:  N asyncio tasks (gather) each awaiting a trivial coroutine — what an asyncio
                 task costs on this machine;
  * bare replay: the same N `ReplayProvider.complete` calls with the same requests, as N tasks
                 behind a Semaphore(256) (fan-out) or N sequential awaits (chain).
VM overhead per session = (VM wall - bare replay wall) / N: everything the VM adds to the
provider calls themselves (run folder, journal, bindings, state.md, scopes, step ids...).
The VM wall covers `run_program` only (parse excluded; reported separately), which includes
the fixed per-run cost (run folder, run.json, final fsync), also reported separately.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import io
import pstats
import time
from typing import Any

from _loopback import (
    Table,
    load_note,
    parse_program,
    project_dir,
    set_project_root,
    summary,
    verdict,
    vm_run,
)

from openprose.providers import Message, ModelRequest, ModelResponse, ReplayProvider, Usage

GOAL_FANOUT_US = 100.0
GOAL_CHAIN_US = 300.0
GOAL_FLAT = 1.25  # per-session VM time at the largest size / the smallest per-session time
CONCURRENCY = 256
MODEL = "sonnet"  # no settings: the router passes the alias through as the model id
FANOUT = 'input items: "the collection"\noutput results = items | pmap:\n  session "Item {item}"\n'


def chain_program(n: int) -> str:
    lines = ['let s0 = session "step 0"', "  context: []"]
    for i in range(1, n):
        lines += [f'let s{i} = session "step {i} {{s{i - 1}}}"', "  context: []"]
    lines.append(f"output last = s{n - 1}")
    return "\n".join(lines) + "\n"


def request(text: str) -> ModelRequest:
    return ModelRequest(model=MODEL, messages=(Message("user", text),))


def response(i: int) -> ModelResponse:
    return ModelResponse(text=f"r{i}", usage=Usage(3, 1), finish_reason="stop", model=MODEL)


def fanout_prompts(n: int) -> list[str]:
    return [f"Item x{i}" for i in range(n)]


def chain_prompts(n: int) -> list[str]:
    return ["step 0", *(f"step {i} r{i - 1}" for i in range(1, n))]


def replay_for(prompts: list[str]) -> ReplayProvider:
    return ReplayProvider([(request(p), response(i)) for i, p in enumerate(prompts)])


# --- baselines -----------------------------------------------------------------------------


async def bare_tasks(n: int) -> float:
    async def nothing(i: int) -> int:
        return i

    started = time.perf_counter()
    await asyncio.gather(*(asyncio.create_task(nothing(i)) for i in range(n)))
    return time.perf_counter() - started


async def bare_replay_fanout(prompts: list[str]) -> float:
    provider = replay_for(prompts)
    slots = asyncio.Semaphore(CONCURRENCY)

    async def one(prompt: str) -> str:
        async with slots:
            return (await provider.complete(request(prompt))).text

    started = time.perf_counter()
    await asyncio.gather(*(asyncio.create_task(one(p)) for p in prompts))
    return time.perf_counter() - started


async def bare_replay_chain(n: int) -> float:
    provider = replay_for(chain_prompts(n))
    answer = ""
    started = time.perf_counter()
    for i in range(n):
        answer = (await provider.complete(request(f"step {i} {answer}" if i else "step 0"))).text
    return time.perf_counter() - started


# --- the VM --------------------------------------------------------------------------------


async def vm_fanout(n: int, profile: cProfile.Profile | None = None) -> tuple[float, float]:
    """(run seconds, parse seconds)"""
    prompts = fanout_prompts(n)
    items = [p.removeprefix("Item ") for p in prompts]
    with project_dir() as project:
        program, parsed_in = parse_program(FANOUT, project)
        provider = replay_for(prompts)
        if profile:
            profile.enable()
        elapsed, _, result = await vm_run(
            program,
            FANOUT,
            provider=provider,
            project=project,
            concurrency=CONCURRENCY,
            inputs={"items": items},
            expect_requests=n,
        )
        if profile:
            profile.disable()
    assert result.outputs["results"][-1] == f"r{n - 1}"
    return elapsed, parsed_in


async def vm_chain(n: int, profile: cProfile.Profile | None = None) -> tuple[float, float]:
    source = chain_program(n)
    with project_dir() as project:
        program, parsed_in = parse_program(source, project)
        provider = replay_for(chain_prompts(n))
        if profile:
            profile.enable()
        elapsed, _, result = await vm_run(
            program,
            source,
            provider=provider,
            project=project,
            concurrency=CONCURRENCY,
            expect_requests=n,
        )
        if profile:
            profile.disable()
    assert result.outputs["last"] == f"r{n - 1}"
    return elapsed, parsed_in


def timed(fn: Any, *args: Any) -> Any:
    gc.collect()
    return asyncio.run(fn(*args))


def best(repeat: int, fn: Any, *args: Any) -> tuple[float, float]:
    """(min, median) over `repeat` runs of a coroutine function returning seconds (or a
    tuple whose first item is seconds)."""
    samples = []
    for _ in range(repeat):
        got = timed(fn, *args)
        samples.append(got[0] if isinstance(got, tuple) else got)
    return summary(samples)


# --- figures -------------------------------------------------------------------------------


def fanout_figure(n: int, repeat: int) -> dict[str, float]:
    tasks = best(repeat, bare_tasks, n)[0]
    replay = best(repeat, bare_replay_fanout, fanout_prompts(n))[0]
    vm, vm_med = best(repeat, vm_fanout, n)
    return {"n": n, "tasks": tasks, "replay": replay, "vm": vm, "vm_med": vm_med}


def chain_figure(n: int, repeat: int) -> dict[str, float]:
    tasks = best(repeat, bare_tasks, n)[0]
    replay = best(repeat, bare_replay_chain, n)[0]
    vm, vm_med = best(repeat, vm_chain, n)
    return {"n": n, "tasks": tasks, "replay": replay, "vm": vm, "vm_med": vm_med}


def us(seconds: float, n: int) -> float:
    return seconds / n * 1e6


def print_pair(kind: str, fig: dict[str, float], goal: float) -> None:
    n = int(fig["n"])
    overhead = us(fig["vm"] - fig["replay"], n)
    table = Table(
        f"{kind} x{n} (replay provider, zero latency, journal on)",
        ("side", "wall s (min)", "us/session", "note"),
    )
    table.add("bare asyncio tasks", fig["tasks"], us(fig["tasks"], n), "trivial coroutine per task")
    table.add(
        "bare replay calls", fig["replay"], us(fig["replay"], n), "same provider calls, no VM"
    )
    table.add("VM", fig["vm"], us(fig["vm"], n), f"median {fig['vm_med']:.3f}s")
    table.print()
    print(
        f"{kind}: VM overhead {overhead:.1f} us/session over the bare replay loop "
        f"({us(fig['vm'] - fig['tasks'], n):.1f} over bare tasks)  "
        f"(goal <= {goal:g} us)  {verdict(overhead <= goal)}"
    )


def print_scaling(kind: str, figs: list[dict[str, float]]) -> None:
    table = Table(
        f"{kind} scaling (per session; flat means the last row ~ the others)",
        ("n", "VM wall s", "VM us/session", "overhead us/session", "bare replay us/session"),
    )
    for fig in figs:
        n = int(fig["n"])
        table.add(
            n, fig["vm"], us(fig["vm"], n), us(fig["vm"] - fig["replay"], n), us(fig["replay"], n)
        )
    table.print()
    per = [us(f["vm"], int(f["n"])) for f in figs]
    growth = per[-1] / min(per)
    print(
        f"{kind} scaling: per-session VM time at {int(figs[-1]['n'])} = {growth:.2f}x the "
        f"lowest per-session time (goal <= {GOAL_FLAT}x, flat)  {verdict(growth <= GOAL_FLAT)}"
    )


def fixed_cost(repeat: int) -> float:
    """`run_program` of a one-session program: the per-run floor included in every VM wall."""
    return best(repeat, vm_chain, 1)[0]


def profile_run(kind: str, n: int, top: int) -> None:
    profile = cProfile.Profile()
    started = time.perf_counter()
    if kind == "fanout":
        asyncio.run(vm_fanout(n, profile))
    else:
        asyncio.run(vm_chain(n, profile))
    print(f"\ncProfile of the VM {kind} x{n} (profiled wall {time.perf_counter() - started:.2f}s)")
    for order in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(profile, stream=out).strip_dirs().sort_stats(order).print_stats(top)
        text = out.getvalue()
        print(text[text.find("   ncalls") :].rstrip() if "   ncalls" in text else text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=None, help="fan-out items (default 10,000)")
    parser.add_argument("--chain", type=int, default=None, help="chain steps (default 1,000)")
    parser.add_argument("--scales", default=None, help="fan-out sizes (default 1000,10000,100000)")
    parser.add_argument("--chain-scales", default=None, help="chain sizes (default 1000,10000)")
    parser.add_argument("--quick", action="store_true", help="smoke run at small sizes")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (min is used)")
    parser.add_argument("--only", choices=("fanout", "chain", "scaling", "fixed"), action="append")
    parser.add_argument("--profile", action="store_true", help="cProfile the VM side instead")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument(
        "--project-root", help="where run folders go (default: system temp; /dev/shm for tmpfs)"
    )
    args = parser.parse_args()
    where = set_project_root(args.project_root)
    n = args.n or (1_000 if args.quick else 10_000)
    chain_n = args.chain or (200 if args.quick else 1_000)
    scales = [
        int(x)
        for x in (args.scales or ("500,1000,5000" if args.quick else "1000,10000,100000")).split(
            ","
        )
    ]
    chain_scales = [
        int(x)
        for x in (args.chain_scales or ("200,1000" if args.quick else "1000,10000")).split(",")
    ]
    only = set(args.only or ("fixed", "fanout", "chain", "scaling"))

    if args.profile:
        for kind in sorted(only & {"fanout", "chain"}) or ["fanout"]:
            profile_run(kind, n if kind == "fanout" else chain_n, args.top)
        return

    print(
        f"vm_overhead: fan-out x{n}, chain x{chain_n}, scales {scales}, chain scales "
        f"{chain_scales}, repeat {args.repeat}; {load_note()}; {where}"
    )
    timed(bare_tasks, 1000)  # warm-up
    timed(vm_fanout, 300)
    if "fixed" in only:
        print(
            f"\nfixed cost of one run_program (1-session program): {fixed_cost(args.repeat) * 1e3:.2f} ms"
        )
    if "fanout" in only:
        print_pair("fan-out", fanout_figure(n, args.repeat), GOAL_FANOUT_US)
    if "chain" in only:
        print_pair("chain", chain_figure(chain_n, args.repeat), GOAL_CHAIN_US)
    if "scaling" in only:
        figs = [fanout_figure(size, args.repeat if size <= 10_000 else 1) for size in scales]
        print_scaling("fan-out", figs)
        chains = [chain_figure(size, args.repeat if size <= 1_000 else 1) for size in chain_scales]
        print_scaling("chain", chains)
    print(f"\nload after: {load_note()}")


if __name__ == "__main__":
    main()

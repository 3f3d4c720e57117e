"""`prose batch` over 10,000 cases of a one-session program, against a loopback
OpenAI-compatible server answering after 20 ms, beside a plain aiohttp + orjson loop making the
same 10,000 calls in the same run. Goal (issues 14, 33): the in-process executor's whole
process <= 1.5x the plain loop: the median of each repeat's ratio to the loop run just before
it. Wall, CPU (the client's) and the loopback server's CPU are printed as medians; on a
shared machine the wall ratio follows the sum of both processes' CPU. The Ray executor (when the `[ray]` extra is installed) runs the same
batch on a local Ray instance; its time and its ratio to in-process are printed.

    python bench/batch.py                 # issue size: 10,000 cases, 20 ms, 256 in flight
    python bench/batch.py --quick         # 1,000 cases
    python bench/batch.py --n 2000 --no-ray
    python bench/batch.py --no-ray --repeat 3 --baseline 4b4de7b   # before/after, same run

`prose batch` runs as a user runs it: a child process, start-up and exit included, every run
a run folder under a fresh temporary project (`--project-root /dev/shm` for tmpfs). With
`--baseline REF` the same batch also runs from that commit's `src/` (exported with `git
archive`, same interpreter), interleaved with this tree's runs so that load from other work
hits both alike; its time, CPU and its ratio to this tree are printed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from statistics import median

import orjson
from _git_baseline import export
from _loopback import fetch_stats, load_note, reset_server, start_in_subprocess

GOAL_RATIO = 1.5
PROGRAM = 'input item: "the case"\noutput answer = session "Item {item}"\n'
MODEL = "gpt-4.1-mini"  # what `sonnet` resolves to on the openai provider


async def plain_loop(base_url: str, n: int, in_flight: int) -> float:
    """n chat completions, `in_flight` workers, one aiohttp session: the transport limit."""
    import aiohttp

    started = time.perf_counter()
    connector = aiohttp.TCPConnector(limit=in_flight)
    headers = {"authorization": "Bearer bench", "content-type": "application/json"}
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
        items = iter(range(n))

        async def worker() -> None:
            for item in items:
                body = {
                    "model": MODEL,
                    "messages": [{"role": "user", "content": f"Item x{item}"}],
                    "max_tokens": 1024,
                }
                async with session.post(
                    f"{base_url}/v1/chat/completions", data=orjson.dumps(body)
                ) as response:
                    answer = orjson.loads(await response.read())
                    assert answer["choices"][0]["message"]["content"]

        await asyncio.gather(*(worker() for _ in range(in_flight)))
    return time.perf_counter() - started


def prose_batch(
    base_url: str,
    n: int,
    in_flight: int,
    root: str | None,
    executor: str,
    processes: int | None = None,
    src: Path | None = None,
) -> tuple[float, Cpu, int]:
    """Whole-process seconds of `prose batch`, its CPU (worker processes included)
    and how many rows succeeded; `src`: run that tree's code instead."""
    project = Path(tempfile.mkdtemp(prefix="bench-batch-", dir=root))
    (project / "p.prose").write_text(PROGRAM)
    with (project / "in.jsonl").open("wb") as cases:
        for item in range(n):
            cases.write(orjson.dumps({"item": f"x{item}"}) + b"\n")
    env = {  # as bench/_loopback.prose_process: no stray provider settings, bytecode cached
        **{
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("PROSE_", "ANTHROPIC_", "OPENAI_"))
            and k != "PYTHONDONTWRITEBYTECODE"
        },
        "OPENAI_API_KEY": "bench",
        "OPENAI_BASE_URL": f"{base_url}/v1",
        "PROSE_PROVIDER": "openai",
    }
    if src is not None:  # ahead of the editable install of this tree
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(src), env.get("PYTHONPATH")]))
    command = [
        sys.executable,
        "-m",
        "openprose.cli",
        "batch",
        "p.prose",
        "in.jsonl",
        "-o",
        "out.jsonl",
        "--json",
        "--max-runs",
        str(in_flight),
        "--max-concurrency",
        str(in_flight),
        "--executor",
        executor,
    ]
    if processes is not None:
        command += ["--processes", str(processes)]
    cpu_before = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run(
        command, cwd=project, env=env, capture_output=True, timeout=3600, check=False
    )
    seconds = time.perf_counter() - started
    cpu = _children_cpu().since(cpu_before)
    if done.returncode not in (0, 1):
        sys.exit(
            f"prose batch failed ({done.returncode}): {done.stderr.decode()[-2000:]}"
            f" (its project is kept: {project})"
        )
    shutil.rmtree(project)  # ~30 MB a 10,000-case batch, in memory under /dev/shm
    summary = orjson.loads(done.stdout)
    return seconds, cpu, int(summary["succeeded"])


@dataclass(frozen=True)
class Cpu:
    """CPU seconds in user space and in the kernel (system calls, page faults)."""

    user: float
    system: float

    @property
    def total(self) -> float:
        return self.user + self.system

    def since(self, before: Cpu) -> Cpu:
        return Cpu(self.user - before.user, self.system - before.system)


@dataclass(frozen=True)
class Sample:
    wall: float  # seconds
    client: Cpu  # the client's CPU (the loop's process, or `prose batch`'s)
    server: float  # CPU seconds of the loopback server meanwhile

    @property
    def cpu(self) -> float:
        return self.client.total


def _server_cpu() -> float:
    """CPU seconds of this process's children now: the loopback server (`prose batch`
    runs are waited for, so they are not among them); 0 where /proc is missing."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    try:
        kids = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read_text().split()
        for kid in kids:
            fields = Path(f"/proc/{kid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
    except OSError:
        return 0.0
    return total


def _batch_loop_note() -> str:
    """The event loop this tree's `prose batch` runs on (a baseline before batch33d: asyncio's)."""
    try:
        import uvloop
    except ImportError:
        return "asyncio's event loop (uvloop is not installed)"
    return f"uvloop {uvloop.__version__}'s event loop; the plain loop on asyncio's"


def _children_cpu() -> Cpu:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return Cpu(usage.ru_utime, usage.ru_stime)


def _own_cpu() -> Cpu:
    """This process's CPU: the plain loop runs here (the server is a child process)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return Cpu(usage.ru_utime, usage.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--quick", action="store_true", help="1,000 cases")
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--in-flight", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--no-ray", action="store_true")
    parser.add_argument("--project-root", default=None)
    parser.add_argument(
        "--processes", type=int, default=None, help="prose batch --processes (default: its own)"
    )
    parser.add_argument("--baseline", default=None, help="git ref to compare with (its src/)")
    args = parser.parse_args()
    n = 1_000 if args.quick else args.n
    print(
        f"# bench/batch.py: {n} cases, {args.latency_ms:g} ms answers, {args.in_flight} in flight"
    )
    print(f"# {load_note()}")
    print(f"# this tree's prose batch runs on {_batch_loop_note()}")
    baseline_dir = tempfile.TemporaryDirectory(prefix="bench-batch-baseline-")
    baseline_src = export(args.baseline, Path(baseline_dir.name)) if args.baseline else None
    base_url, stop = start_in_subprocess(latency_ms=args.latency_ms)
    try:
        asyncio.run(plain_loop(base_url, min(n, 500), args.in_flight))  # warm-up
        plain: list[Sample] = []
        local: list[Sample] = []
        before: list[Sample] = []
        for _ in range(args.repeat):
            if baseline_src is not None:
                reset_server(base_url)
                served = _server_cpu()
                seconds, cpu, ok = prose_batch(
                    base_url, n, args.in_flight, args.project_root, "local", src=baseline_src
                )
                if ok != n:
                    sys.exit(f"baseline batch: {ok} of {n} succeeded")
                before.append(Sample(seconds, cpu, _server_cpu() - served))
                print(f"# run: baseline {args.baseline} {seconds:.3f} s ({load_note()})")
            reset_server(base_url)
            served, cpu_before = _server_cpu(), _own_cpu()
            seconds = asyncio.run(plain_loop(base_url, n, args.in_flight))
            plain.append(Sample(seconds, _own_cpu().since(cpu_before), _server_cpu() - served))
            reset_server(base_url)
            served = _server_cpu()
            seconds, cpu, ok = prose_batch(
                base_url, n, args.in_flight, args.project_root, "local", args.processes
            )
            attempts = fetch_stats(base_url)["attempts"]
            if ok != n or attempts != n:
                sys.exit(f"in-process batch: {ok} of {n} succeeded, {attempts} requests")
            local.append(Sample(seconds, cpu, _server_cpu() - served))
            print(f"# run: plain {plain[-1].wall:.3f} s, batch {seconds:.3f} s ({load_note()})")
        # Medians, and each run's ratio to the plain loop run just before it (the same load):
        # on a shared machine the load changes between runs more than the code does.
        ratio = median(b.wall / p.wall for b, p in zip(local, plain))
        cpu_ratio = median(b.cpu / p.cpu for b, p in zip(local, plain))
        verdict = "PASS" if ratio <= GOAL_RATIO else "FAIL"
        for name, samples in (
            ("plain aiohttp+orjson loop", plain),
            ("prose batch (in-process)", local),
        ):
            wall = median(x.wall for x in samples)
            print(
                f"{name:<26}: {wall:8.3f} s  ({n / wall:8.0f} a s)  CPU {median(x.cpu for x in samples):.3f} s"
                f" ({median(x.cpu for x in samples) / n * 1e6:.0f} µs a case: user"
                f" {median(x.client.user for x in samples) / n * 1e6:.0f}, system"
                f" {median(x.client.system for x in samples) / n * 1e6:.0f}), server CPU"
                f" {median(x.server for x in samples):.3f} s  (medians of {len(samples)})"
            )
        print(
            f"ratio in-process / plain  : {ratio:8.2f}x  goal <= {GOAL_RATIO}x  {verdict}"
            f"  (median of each run's ratio; runs {', '.join(f'{b.wall / p.wall:.2f}' for b, p in zip(local, plain))})"
        )
        user_ratio = median(b.client.user / p.client.user for b, p in zip(local, plain))
        system_ratio = median(b.client.system / p.client.system for b, p in zip(local, plain))
        print(
            f"CPU in-process / plain    : {cpu_ratio:8.2f}x  (median; the batch's start-up included;"
            f" user {user_ratio:.2f}x, system {system_ratio:.2f}x)"
        )
        in_process = median(x.wall for x in local)
        if before:
            then = median(x.wall for x in before)
            then_cpu = median(x.cpu for x in before)
            print(
                f"baseline {args.baseline:<16}: {then:8.3f} s  CPU {then_cpu:.3f} s"
                f" ({then_cpu / n * 1e6:.0f} µs a case)  this tree:"
                f" {median(b.wall / a.wall for b, a in zip(local, before)):.2f}x its time,"
                f" {median(b.cpu / a.cpu for b, a in zip(local, before)):.2f}x its CPU"
                " (medians of each run's ratio)"
            )
        children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"peak RSS of a child       : {children:8.0f} MB")
        if args.no_ray:
            return
        try:
            import ray  # noqa: F401
        except ImportError:
            print("ray executor              : skipped (the [ray] extra is not installed)")
            return
        reset_server(base_url)
        seconds, _, ok = prose_batch(base_url, n, args.in_flight, args.project_root, "ray")
        if ok != n:
            sys.exit(f"ray batch: {ok} of {n} succeeded")
        print(
            f"prose batch (ray, local)  : {seconds:8.3f} s  ({n / seconds:8.0f} runs/s)"
            f"  {seconds / in_process:.2f}x in-process (Ray start-up included)"
        )
        print(f"Ray overhead a case       : {(seconds - in_process) / n * 1e3:8.2f} ms")
    finally:
        stop()
        baseline_dir.cleanup()
        print(f"# {load_note()}")


if __name__ == "__main__":
    main()

"""Audit trail + OpenTelemetry tracing on vs off: a 10,000-session `pmap` fan-out.

Goal (issue 13): audit trail + tracing on costs <= 10 % more wall time than both off.

Three sides, alternated, best of `--repeat` each, all in this process through
`run_program` (as `vm_overhead.py` measures the VM), each under the collector settings
`prose run` gives a run (`lean_collector`; `--default-gc` for CPython's defaults):
  * off:          `VMConfig(audit=False)`, no tracer — the issue's baseline;
  * audit:        the audit trail only (`audit.ndjson`, the default of every run): the
                  untraced run;
  * audit+trace:  the trail and an OpenTelemetry tracer as `prose run --trace` opens it:
                  spans exported OTLP/HTTP by its helper process to a loopback receiver
                  (also its own process): the traced run. The wall time includes waiting
                  for the last export (the "flush" column); "CPU" is this process,
                  "export CPU" the helper's (children reaped during the run).

Printed: each side's wall and CPU with the 1-minute load average of its best run, the CPU
each side adds per session (this process, and the export helper's), then traced vs untraced
(the tracing overhead) and trail + tracing vs off (issue 13's goal). Per-session CPU is the
figure to watch: the wall ratio moves with the load of a shared machine, and the base run
gets cheaper as the VM and transport do (the trail and tracing must stay a few µs).

Providers (`--provider`):
  * replay    the in-memory ReplayProvider, zero latency: only the VM's own work is timed,
              so this is the harshest ratio (default);
  * loopback  the fake OpenAI-compatible server in its own process, answers after 20 ms,
              256 in flight, through the real openai provider (HTTP/1.1 client + orjson).

    python bench/audit_overhead.py                 # replay, 10,000 sessions
    python bench/audit_overhead.py --provider loopback
    python bench/audit_overhead.py --quick         # 1,000 sessions
    python bench/audit_overhead.py --baseline 9219e1e            # both trees, same run
    python bench/audit_overhead.py --baseline 9219e1e --callgrind --n 800

`--baseline REF` measures that commit's src/ (exported from git) beside this tree's: each
tree runs in a process of its own (this script again, with the tree first on its path; one
untimed run first so both run from compiled bytecode), a warm-up then the three sides once
per repeat, the trees alternated. Printed per tree and side: CPU µs per session and the
ratio this tree / the baseline. With `--callgrind` the children run under valgrind instead
(no warm-up, one side per process, off and audit, at n/4 and n sessions, `PYTHONHASHSEED=0`): the
instructions of the whole process, and per session the difference over the 3n/4 sessions
between the two sizes (start-up taken out): the figure that holds on a loaded machine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from _callgrind import Counter, available
from _git_baseline import ROOT, export
from _loopback import (
    Table,
    load_note,
    parse_program,
    project_dir,
    reset_server,
    set_project_root,
    verdict,
    vm_openai_provider,
)

# openprose is imported inside the functions: a `--baseline` child puts its tree first on the
# path before the first import.

GOAL = 1.10
CONCURRENCY = 256
MODEL = "sonnet"
FANOUT = 'input items: "the collection"\noutput results = items | pmap:\n  session "Item {item}"\n'
SIDES = ("off", "audit", "audit+trace")

# A loopback OTLP/HTTP receiver: accepts every export and discards it.
RECEIVER = """
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class H(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200); self.send_header("content-length", "0"); self.end_headers()
    def log_message(self, *a): pass
server = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(f"http://127.0.0.1:{server.server_port}", flush=True)
server.serve_forever()
"""


@dataclass
class Receiver:
    url: str
    process: subprocess.Popen[str]

    @classmethod
    def start(cls) -> Receiver:
        process = subprocess.Popen(
            [sys.executable, "-c", RECEIVER], stdout=subprocess.PIPE, text=True
        )
        assert process.stdout is not None
        return cls(process.stdout.readline().strip(), process)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait()


def tracer_for(receiver: Receiver) -> Any:
    """What `prose run --trace` opens: spans exported by the helper process, OTLP/HTTP."""
    from openprose.telemetry.otel import OtelTracer

    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url}
    env.pop("OTEL_TRACES_EXPORTER", None)
    return OtelTracer.from_environment(env)


def replay_for(n: int) -> Any:
    from openprose.providers import Message, ModelRequest, ModelResponse, ReplayProvider, Usage

    return ReplayProvider(
        [
            (
                ModelRequest(model=MODEL, messages=(Message("user", f"Item x{i}"),)),
                ModelResponse(text=f"r{i}", usage=Usage(3, 1), finish_reason="stop", model=MODEL),
            )
            for i in range(n)
        ]
    )


@dataclass
class Figures:
    wall: float
    cpu: float
    export_cpu: float  # the export helper's CPU seconds
    flush: float  # seconds from the run's end to the last span exported
    load: float  # 1-minute load average at the end


def children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


async def one_run(
    side: str, n: int, provider_kind: str, base_url: str, receiver: Receiver | None
) -> Figures:
    from openprose.vm.runner import VMConfig, run_program

    items = [f"x{i}" for i in range(n)]
    with project_dir() as project:
        program, _ = parse_program(FANOUT, project)
        settings = None
        if provider_kind == "replay":
            provider: Any = replay_for(n)
        else:
            reset_server(base_url)
            settings, provider = vm_openai_provider(base_url, project, CONCURRENCY)
        tracer = tracer_for(receiver) if side == "audit+trace" and receiver else None
        config = VMConfig(max_concurrency=CONCURRENCY, max_sessions=None, audit=side != "off")
        cpu, export_cpu = time.process_time(), children_cpu()
        started = time.perf_counter()
        result = await run_program(
            program,
            FANOUT,
            provider=provider,
            project_dir=project,
            inputs={"items": items},
            settings=settings,
            config=config,
            tracer=tracer,
        )
        ran = time.perf_counter()
        if tracer is not None:
            tracer.shutdown()  # the last batch exported, as `prose run --trace` does
        ended = time.perf_counter()
        figures = Figures(
            wall=ended - started,
            cpu=time.process_time() - cpu,
            export_cpu=children_cpu() - export_cpu,
            flush=ended - ran,
            load=os.getloadavg()[0],
        )
        await provider.aclose()
        if result.status != "succeeded" or result.usage["requests_sent"] != n:
            raise SystemExit(f"{side}: run {result.status}: {result.error}")
        if side != "off":
            lines = (result.run_dir / "audit.ndjson").read_bytes().count(b"\n")
            assert lines == 2 * n + 2, lines  # query + response per session, start, end
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=None, help="sessions (default 10,000)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 1,000 sessions")
    parser.add_argument("--repeat", type=int, default=3, help="runs per side (min is used)")
    parser.add_argument("--provider", choices=("replay", "loopback"), default="replay")
    parser.add_argument(
        "--project-root", help="where run folders go (default: system temp; /dev/shm for tmpfs)"
    )
    parser.add_argument(
        "--default-gc",
        action="store_true",
        help="CPython's default collector thresholds instead of the ones `prose run` sets",
    )
    parser.add_argument("--baseline", metavar="REF", help="also measure this commit's src/")
    parser.add_argument(
        "--callgrind",
        action="store_true",
        help="with --baseline: instructions of whole processes (valgrind) instead of times",
    )
    parser.add_argument(
        "--counted",
        type=lambda text: tuple(text.split(",")),
        default=COUNTED_SIDES,
        help="with --callgrind: the sides counted (default off,audit)",
    )
    parser.add_argument("--child", metavar="SIDES", help=argparse.SUPPRESS)
    parser.add_argument("--tree", help=argparse.SUPPRESS)
    parser.add_argument("--base-url", default="", help=argparse.SUPPRESS)
    parser.add_argument("--no-warm-up", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.tree:
        sys.path.insert(0, args.tree)
    if args.child:
        child(args)
        return
    if args.baseline:
        both_trees(args)
        return
    from openprose.cli.run import lean_collector

    collector = contextlib.nullcontext if args.default_gc else lean_collector
    where = set_project_root(args.project_root)
    n = args.n or (1_000 if args.quick else 10_000)
    print(
        f"audit_overhead: pmap x{n}, provider {args.provider}, repeat {args.repeat}; "
        f"{load_note()}; {where}"
    )
    base_url, stop_server = "", None
    if args.provider == "loopback":
        from tests.support.fake_llm_server import start_in_subprocess

        base_url, stop_server = start_in_subprocess(latency_ms=20.0)
    receiver = Receiver.start()
    runs: dict[str, list[Figures]] = {side: [] for side in SIDES}
    try:
        for side in SIDES:  # warm-up
            asyncio.run(one_run(side, min(n, 500), args.provider, base_url, receiver))
        for _ in range(args.repeat):
            for side in SIDES:
                gc.collect()
                with collector():
                    runs[side].append(
                        asyncio.run(one_run(side, n, args.provider, base_url, receiver))
                    )
    finally:
        receiver.stop()
        if stop_server is not None:
            stop_server()
    best = {side: min(runs[side], key=lambda f: f.wall) for side in SIDES}
    cpu = {side: min(f.cpu for f in runs[side]) for side in SIDES}
    export_cpu = {side: min(f.export_cpu for f in runs[side]) for side in SIDES}
    table = Table(
        f"{n} sessions, {args.provider}",
        (
            "side",
            "wall s (min)",
            "wall s (median)",
            "wall vs off",
            "flush s",
            "CPU s (min)",
            "CPU vs off",
            "µs/session",
            "+µs/session",
            "export µs/session",
            "load (1 min)",
        ),
    )
    for side in SIDES:
        walls = sorted(f.wall for f in runs[side])
        table.add(
            side,
            walls[0],
            walls[len(walls) // 2],
            f"{walls[0] / best['off'].wall:.3f}x",
            best[side].flush,
            cpu[side],
            f"{cpu[side] / cpu['off']:.3f}x",
            f"{cpu[side] / n * 1e6:.1f}",
            f"{(cpu[side] - cpu['off']) / n * 1e6:+.1f}",
            f"{export_cpu[side] / n * 1e6:.1f}",
            f"{best[side].load:.2f}",
        )
    table.print()
    untraced, traced = best["audit"], best["audit+trace"]
    ratio = traced.wall / untraced.wall
    print(
        f"untraced run {untraced.wall:.3f} s (load {untraced.load:.2f}), traced run "
        f"{traced.wall:.3f} s (load {traced.load:.2f}): tracing overhead {ratio:.3f}x "
        f"(goal <= {GOAL:.2f}x) {verdict(ratio <= GOAL)}"
    )
    ratio = traced.wall / best["off"].wall
    print(f"audit + tracing on vs off: {ratio:.3f}x (goal <= {GOAL:.2f}x) {verdict(ratio <= GOAL)}")
    print(load_note())


# --- --baseline: each tree in a child process --------------------------------------------------


def child(args: argparse.Namespace) -> None:
    """One process of one tree: a warm-up (unless counted), then each side in `args.child`
    once; prints the figures as one JSON line, with the openprose module it ran."""
    import openprose
    from openprose.cli.run import lean_collector

    collector = contextlib.nullcontext if args.default_gc else lean_collector
    set_project_root(args.project_root)
    sides = args.child.split(",")
    receiver = Receiver.start() if "audit+trace" in sides else None
    figures: dict[str, dict[str, float]] = {}
    try:
        if not args.no_warm_up:
            for side in sides:
                asyncio.run(one_run(side, min(args.n, 500), args.provider, args.base_url, receiver))
        for side in sides:
            gc.collect()
            with collector():
                ran = asyncio.run(one_run(side, args.n, args.provider, args.base_url, receiver))
            figures[side] = asdict(ran)
    finally:
        if receiver is not None:
            receiver.stop()
    print(json.dumps({"module": openprose.__file__, "figures": figures}))


def run_child(
    args: argparse.Namespace,
    tree: Path,
    sides: tuple[str, ...],
    n: int,
    base_url: str,
    counter: Counter | None = None,
) -> dict[str, Any]:
    argv = [sys.executable, __file__, "--child", ",".join(sides), "--tree", str(tree)]
    argv += ["--n", str(n), "--provider", args.provider, "--base-url", base_url]
    if args.project_root:
        argv += ["--project-root", args.project_root]
    if args.default_gc:
        argv.append("--default-gc")
    if counter is not None:
        argv = [*counter.argv, *argv, "--no-warm-up"]
    # Bytecode written and read (`PYTHONDONTWRITEBYTECODE` would make each start compile its
    # tree); one hash seed, so the instruction counts repeat.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONHASHSEED"] = "0"
    done = subprocess.run(argv, check=False, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{tree}: the child failed ({done.returncode}): {done.stderr[-3000:]}")
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if not str(report["module"]).startswith(str(tree)):
        raise SystemExit(f"{tree}: the child ran {report['module']}")
    return report


def both_trees(args: argparse.Namespace) -> None:
    where = set_project_root(args.project_root)
    counting = args.callgrind
    if counting and not available():
        raise SystemExit("--callgrind: valgrind is not installed")
    n = args.n or (800 if counting else 1_000 if args.quick else 10_000)
    exported = tempfile.TemporaryDirectory(prefix="audit-baseline-")
    trees = {"this tree": ROOT / "src", args.baseline: export(args.baseline, Path(exported.name))}
    print(
        f"audit_overhead: pmap x{n}, provider {args.provider}, this tree vs {args.baseline}, "
        f"{'callgrind' if counting else f'repeat {args.repeat}'}; {load_note()}; {where}"
    )
    base_url, stop_server = "", None
    if args.provider == "loopback":
        from tests.support.fake_llm_server import start_in_subprocess

        base_url, stop_server = start_in_subprocess(latency_ms=20.0)
    try:
        for tree in trees.values():  # compiles each tree's bytecode, untimed
            run_child(args, tree, ("off",), 10, base_url)
        if counting:
            counted(args, trees, n, base_url)
        else:
            timed(args, trees, n, base_url)
    finally:
        exported.cleanup()
        if stop_server is not None:
            stop_server()
    print(load_note())


def timed(args: argparse.Namespace, trees: dict[str, Path], n: int, base_url: str) -> None:
    cpu: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.repeat):
        for name, tree in trees.items():
            figures = run_child(args, tree, SIDES, n, base_url)["figures"]
            for side in SIDES:
                cpu.setdefault((name, side), []).append(figures[side]["cpu"])
    best = {key: min(values) for key, values in cpu.items()}
    table = Table(
        f"{n} sessions, {args.provider}, CPU of this process (min of {args.repeat})",
        ("tree", "side", "CPU s", "µs/session", "+µs/session vs off", "vs the baseline"),
    )
    now, before = trees
    for name in trees:
        for side in SIDES:
            table.add(
                name,
                side,
                best[name, side],
                f"{best[name, side] / n * 1e6:.1f}",
                f"{(best[name, side] - best[name, 'off']) / n * 1e6:+.1f}",
                f"{best[name, side] / best[before, side]:.3f}x",
            )
    table.print()
    for side in SIDES:
        ratio = best[now, side] / best[before, side]
        print(f"{side}: this tree / {before} CPU {ratio:.3f}x  {verdict(ratio <= 1.0)}")


# Counted by default: the trail's cost over none. The traced side is left out (its spans go
# through the export helper, a process callgrind does not count); each counted run takes
# minutes, so `--counted audit` counts the default run alone.
COUNTED_SIDES = ("off", "audit")


def counted(args: argparse.Namespace, trees: dict[str, Path], n: int, base_url: str) -> None:
    small = n // 4
    total: dict[tuple[str, str, int], int] = {}
    for side in args.counted:
        for name, tree in trees.items():
            for size in (small, n):
                counter = Counter()
                run_child(args, tree, (side,), size, base_url, counter)
                total[name, side, size] = counter.total()
    per = {
        (name, side): (total[name, side, n] - total[name, side, small]) / (n - small)
        for name in trees
        for side in args.counted
    }
    table = Table(
        f"instructions, whole process (callgrind, PYTHONHASHSEED=0), {args.provider}",
        ("tree", "side", f"x{small}", f"x{n}", "per session", "start-up", "vs the baseline"),
    )
    now, before = trees
    for name in trees:
        for side in args.counted:
            table.add(
                name,
                side,
                f"{total[name, side, small] / 1e6:.1f}M",
                f"{total[name, side, n] / 1e6:.1f}M",
                f"{per[name, side] / 1e3:.1f}k",
                f"{(total[name, side, small] - small * per[name, side]) / 1e6:.1f}M",
                f"{per[name, side] / per[before, side]:.3f}x",
            )
    table.print()
    for side in args.counted:
        ratio = per[now, side] / per[before, side]
        print(f"{side}: this tree / {before} per session {ratio:.3f}x  {verdict(ratio <= 1.0)}")


if __name__ == "__main__":
    main()

"""Start-up: `prose run` of a one-session program, from process start to its first request
reaching the server. Goal: <= 0.5 s.

    python bench/vm_startup.py                # 5 timed runs after one warm-up
    python bench/vm_startup.py --quick        # 2 timed runs
    python bench/vm_startup.py --importtime   # always print the -X importtime top offenders

Each run spawns `prose run hello.prose --provider openai --json` (the installed console
script next to this interpreter, else `python -m openprose.cli`) in a fresh project folder,
with OPENAI_BASE_URL pointing at a loopback fake server (no latency) running in this
process — a different process from `prose`, as the issue asks. The figure is
`server arrival time of the first request - time just before spawning`, both on the system-wide
monotonic clock; it includes interpreter start, imports, parsing and checking the program,
opening the provider, creating the run folder and the SDK's request. Also shown, for scale:
the bare interpreter (`python -c pass`) and `python -c "import openai"`.

When the figure is over the goal (or with --importtime), `python -X importtime` of the same
command is parsed and the largest imports are listed (cumulative and self time).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _loopback import REPO, Table, load_note, verdict

from tests.support.fake_llm_server import FakeLLMServer

GOAL_S = 0.5
PROGRAM = 'let answer = session "Say hello"\noutput greeting = answer\n'


def prose_command() -> list[str]:
    script = Path(sys.executable).parent / "prose"
    if script.exists():
        return [sys.executable, str(script)]  # what the `prose` console script runs
    return [sys.executable, "-m", "openprose.cli"]


def child_env(base_url: str) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("PROSE_", "ANTHROPIC_", "OPENAI_"))
    }
    env.update(OPENAI_BASE_URL=f"{base_url}/v1", OPENAI_API_KEY="bench", TERM="dumb")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), env.get("PYTHONPATH")]))
    return env


async def one_run(
    server: FakeLLMServer, argv: list[str], env: dict[str, str]
) -> tuple[float, float, str]:
    """(seconds to first request, seconds to exit, stderr)"""
    server.reset()
    with tempfile.TemporaryDirectory(prefix="prose-startup-") as project:
        (Path(project) / "hello.prose").write_text(PROGRAM, encoding="utf-8")
        started = time.monotonic()
        process = await asyncio.create_subprocess_exec(
            *argv,
            "run",
            "hello.prose",
            "--provider",
            "openai",
            "--json",
            cwd=project,
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await process.communicate()
        ended = time.monotonic()
    if process.returncode != 0 or not server.stats.attempt_times:
        raise SystemExit(f"prose run failed ({process.returncode}): {out.decode()} {err.decode()}")
    return server.stats.attempt_times[0] - started, ended - started, err.decode()


async def plain(argv: list[str]) -> float:
    started = time.monotonic()
    process = await asyncio.create_subprocess_exec(*argv)
    await process.wait()
    return time.monotonic() - started


IMPORT_LINE = re.compile(r"import time:\s+(\d+)\s+\|\s+(\d+)\s+\|(\s*)(\S+)")


def import_offenders(stderr: str, top: int) -> None:
    rows = []
    for line in stderr.splitlines():
        match = IMPORT_LINE.match(line)
        if match:
            self_us, cum_us, indent, name = match.groups()
            rows.append((name, int(self_us), int(cum_us), (len(indent) - 1) // 2))
    if not rows:
        print("(no -X importtime output found)")
        return
    total = sum(r[1] for r in rows)
    print(f"\n-X importtime: {len(rows)} modules, {total / 1e3:.0f} ms of import time in total")
    roots = sorted((r for r in rows if r[3] == 0), key=lambda r: -r[2])[:top]
    table = Table("largest top-level imports (cumulative)", ("module", "cumulative ms", "self ms"))
    for name, self_us, cum_us, _ in roots:
        table.add(name, cum_us / 1e3, self_us / 1e3)
    table.print()
    nested = sorted(rows, key=lambda r: -r[2])[: top * 2]
    table = Table(
        "largest imports at any depth (cumulative; nesting depth shown)",
        ("module", "depth", "cumulative ms", "self ms"),
    )
    for name, self_us, cum_us, depth in nested:
        table.add(name, depth, cum_us / 1e3, self_us / 1e3)
    table.print()
    by_self = sorted(rows, key=lambda r: -r[1])[:top]
    table = Table("largest self times", ("module", "self ms"))
    for name, self_us, _, _ in by_self:
        table.add(name, self_us / 1e3)
    table.print()


async def bench(args: argparse.Namespace) -> None:
    argv = prose_command()
    print(
        f"vm_startup: `{' '.join(Path(a).name for a in argv)} run hello.prose --provider openai "
        f"--json`, {args.repeat} timed runs; {load_note()}"
    )
    async with FakeLLMServer(latency_ms=0, keep_requests=False) as server:
        env = child_env(server.base_url)
        await one_run(server, argv, env)  # warm-up: bytecode caches, page cache
        firsts, exits = [], []
        for _ in range(args.repeat):
            first, done, _ = await one_run(server, argv, env)
            firsts.append(first)
            exits.append(done)
        python_s = min([await plain([sys.executable, "-c", "pass"]) for _ in range(3)])
        openai_s = min([await plain([sys.executable, "-c", "import openai"]) for _ in range(3)])
        first, median = min(firsts), statistics.median(firsts)
        table = Table("start-up (seconds from spawn)", ("what", "min", "median"))
        table.add("prose run: first request at server", first, median)
        table.add("prose run: process exit", min(exits), statistics.median(exits))
        table.add("python -c pass", python_s, "")
        table.add("python -c 'import openai'", openai_s, "")
        table.print()
        print(
            f"\nstart-up to first request: {first:.3f}s (goal <= {GOAL_S}s)  {verdict(first <= GOAL_S)}"
        )
        if first > GOAL_S or args.importtime:
            _, _, stderr = await one_run(server, [argv[0], "-X", "importtime", *argv[1:]], env)
            import_offenders(stderr, args.top)
    print(f"load after: {load_note()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--n", "--repeat", dest="repeat", type=int, default=None, help="timed runs (default 5)"
    )
    parser.add_argument("--quick", action="store_true", help="smoke run: 2 timed runs")
    parser.add_argument("--importtime", action="store_true", help="always list import offenders")
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    args.repeat = args.repeat or (2 if args.quick else 5)
    if shutil.which("prose") is None and not (Path(sys.executable).parent / "prose").exists():
        print("note: no `prose` console script found; using python -m openprose.cli")
    asyncio.run(bench(args))


if __name__ == "__main__":
    main()

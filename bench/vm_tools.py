"""Tools: what the tool loop adds per tool call, and what the sandbox adds per command.

Figures, each beside its baseline measured in the same run:
  * tool loop: one session of an agent with `read:` permission whose (scripted, zero-latency)
    model asks for N read_file calls, one per turn and again 10 per turn, run by
    `run_program` with the journal on; baseline: the same N read_file calls made directly
    on a `Toolbox`. Overhead per call = (loop wall - direct wall) / N. Goal <= 1 ms.
    It covers everything the loop adds: the model turn (request building, the scripted
    provider, journaling the request and response), the tool_call / permission /
    tool_result events, and run start-up spread over N.
  * per-turn cost: one session of 50 tool turns (one read_file each); the time and journal
    bytes of turn 1, 10 and 50 (from the journal's timestamps: end of model turn k-1 to end
    of model turn k; median of turns k-1..k+1 over the runs). Both should be flat: a turn
    journals only its delta (the assistant's tool calls and their results), not the
    conversation so far. Baseline: turn 1 of the same runs; goal: turn 50 <= 1.5x.
  * sandbox: `true` run through the bubblewrap sandbox (namespaces, mounts, clean env) vs a
    plain `asyncio` subprocess of `true`; median of --repeat runs each. Goal <= 30 ms more.

    python bench/vm_tools.py            # N = 200 calls, 30 commands
    python bench/vm_tools.py --quick    # N = 40, 10 commands
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _loopback import load_note, verdict

from openprose.parser import parse_text
from openprose.providers import ScriptedProvider
from openprose.providers.base import ToolCall
from openprose.vm.runner import VMConfig, run_program
from openprose.vm.tools import Permissions, Toolbox, sandbox_problem
from openprose.vm.tools.sandbox import Sandbox, run_process

GOAL_LOOP_MS = 1.0
GOAL_SANDBOX_MS = 30.0
GOAL_FLAT_RATIO = 1.5
TURN_COUNTS = (1, 10, 50)
PROGRAM = """\
agent reader:
  prompt: "You read files"
  permissions:
    read: ["src/"]

session: reader
  prompt: "Read the files"
"""


def _project() -> Path:
    root = Path(tempfile.mkdtemp(prefix="prose-bench-tools-"))
    (root / "src").mkdir()
    for i in range(10):
        (root / "src" / f"m{i}.py").write_text(f"VALUE_{i} = {i}\n" * 20)
    return root


def _provider(calls: int, per_turn: int) -> ScriptedProvider:
    turns: list[object] = []
    for start in range(0, calls, per_turn):
        batch = range(start, min(calls, start + per_turn))
        turns.append(
            {
                "tool_calls": [
                    {"name": "read_file", "arguments": {"path": f"src/m{i % 10}.py"}} for i in batch
                ]
            }
        )
    turns.append("done")
    return ScriptedProvider([{"match": "Read the files", "turns": turns}])


async def _loop_run(calls: int, per_turn: int) -> tuple[float, int]:
    """Wall time of one run and the size of its journal in bytes."""
    project = _project()
    parsed = parse_text(PROGRAM, str(project / "main.prose"))
    provider = _provider(calls, per_turn)
    config = VMConfig(max_turns=calls + 5, max_tool_calls_per_session=max(200, calls))
    started = time.perf_counter()
    result = await run_program(
        parsed.program, PROGRAM, provider=provider, project_dir=project, config=config
    )
    wall = time.perf_counter() - started
    assert result.status == "succeeded", result.error
    return wall, (result.run_dir / "journal.jsonl").stat().st_size


async def _loop_wall(calls: int, per_turn: int) -> float:
    return (await _loop_run(calls, per_turn))[0]


def _turn_costs(journal: Path) -> list[tuple[float, int]]:
    """(seconds, journal bytes) of each tool turn k >= 1 of the run's one session: from the
    end of model turn k-1 to the end of model turn k, i.e. the tool call, its events and
    the next model call with its journaling."""
    import orjson

    costs: list[tuple[float, int]] = []
    last_t: float | None = None
    since = 0
    for line in journal.read_bytes().splitlines():
        since += len(line) + 1
        event = orjson.loads(line)
        if event["ev"] != "session_finished":
            continue
        if last_t is not None:
            costs.append((event["t"] - last_t, since))
        last_t, since = event["t"], 0
    return costs


async def _per_turn(repeat: int) -> bool:
    """Cost of one tool turn at turns 1, 10 and 50 of a 50-turn conversation; True when flat.

    Read from the journal's timestamps (microseconds): the median of turns k-1..k+1 over
    --repeat runs, and the journal bytes each of those turns added. Baseline: turn 1."""
    last = TURN_COUNTS[-1]
    print(f"\nper-turn cost: {last} turns, one read_file each, median over {repeat} runs")
    runs = []
    for _ in range(repeat):
        project = _project()
        parsed = parse_text(PROGRAM, str(project / "main.prose"))
        config = VMConfig(max_turns=last + 5, max_tool_calls_per_session=max(200, last))
        result = await run_program(
            parsed.program, PROGRAM, provider=_provider(last, 1), project_dir=project, config=config
        )
        assert result.status == "succeeded", result.error
        runs.append(_turn_costs(result.run_dir / "journal.jsonl"))
    ok = True
    first: tuple[float, float] | None = None
    for turn in TURN_COUNTS:
        window = range(max(1, turn - 1), min(last, turn + 1) + 1)
        seconds = statistics.median(run[k - 1][0] for run in runs for k in window)
        size = statistics.median(run[k - 1][1] for run in runs for k in window)
        ms = seconds * 1000
        if first is None:
            first, shown = (ms, size), "baseline"
        else:
            ratio, bytes_ratio = ms / first[0], size / first[1]
            flat = ratio <= GOAL_FLAT_RATIO and bytes_ratio <= GOAL_FLAT_RATIO
            ok = ok and flat
            shown = (
                f"{ratio:4.2f}x time, {bytes_ratio:4.2f}x bytes of turn {TURN_COUNTS[0]}  "
                f"goal <= {GOAL_FLAT_RATIO}x  {verdict(flat)}"
            )
        print(
            f"  turn {turn:>2}: {ms:6.3f} ms  journal {size:6.0f} bytes  {shown}  ({load_note()})"
        )
    return ok


async def _direct_wall(calls: int) -> float:
    project = _project()
    toolbox = Toolbox(project, Permissions.from_mapping({"read": ["src/"]}))
    started = time.perf_counter()
    for i in range(calls):
        outcome = await toolbox.call(ToolCall(str(i), "read_file", {"path": f"src/m{i % 10}.py"}))
        assert not outcome.is_error
    return time.perf_counter() - started


async def _command_times(repeat: int) -> tuple[list[float], list[float]]:
    project = _project()
    sandbox = Sandbox(project, writable=(), network=False)
    plain, boxed = [], []
    for _ in range(repeat):
        started = time.perf_counter()
        await run_process(["true"], timeout=10, output_cap=65536)
        plain.append(time.perf_counter() - started)
        started = time.perf_counter()
        result = await sandbox.run(["true"], timeout=10, output_cap=65536)
        boxed.append(time.perf_counter() - started)
        assert result.exit_code == 0, result.stderr
    return plain, boxed


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--n", type=int, help="tool calls per run")
    parser.add_argument("--repeat", type=int, default=3, help="runs of the loop figure (min)")
    parser.add_argument("--commands", type=int, help="commands per sandbox figure")
    args = parser.parse_args()
    calls = args.n or (40 if args.quick else 200)
    commands = args.commands or (10 if args.quick else 30)
    print(load_note())
    print(f"\ntool loop: {calls} read_file calls (scripted model, zero latency, journal on)")
    direct = min([await _direct_wall(calls) for _ in range(args.repeat)])
    print(
        f"  direct Toolbox.call x{calls}: {direct * 1000:8.1f} ms  ({direct / calls * 1e6:.0f} us/call)"
    )
    ok = True
    for per_turn in (1, 10):
        wall = min([await _loop_wall(calls, per_turn) for _ in range(args.repeat)])
        overhead = (wall - direct) / calls * 1000
        ratio = wall / direct
        ok_here = overhead <= GOAL_LOOP_MS
        ok = ok and ok_here
        print(
            f"  loop, {per_turn:>2} call(s)/turn:    {wall * 1000:8.1f} ms  "
            f"overhead {overhead:.3f} ms/call ({ratio:.1f}x direct)  "
            f"goal <= {GOAL_LOOP_MS} ms  {verdict(ok_here)}"
        )
    await _per_turn(max(args.repeat, 5))
    problem = sandbox_problem()
    if problem is not None:
        print(f"\nsandbox: not measured: {problem}")
    else:
        plain, boxed = await _command_times(commands)
        p, b = statistics.median(plain), statistics.median(boxed)
        extra = (b - p) * 1000
        print(f"\nsandbox start-up: `true` x{commands}, median")
        print(f"  plain subprocess: {p * 1000:6.1f} ms")
        print(
            f"  bubblewrap:       {b * 1000:6.1f} ms  (+{extra:.1f} ms, {b / p:.1f}x)  "
            f"goal <= +{GOAL_SANDBOX_MS} ms  {verdict(extra <= GOAL_SANDBOX_MS)}"
        )
    print(load_note())


if __name__ == "__main__":
    os.environ.pop("PROSE_PROVIDER", None)
    asyncio.run(main())

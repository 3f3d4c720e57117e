"""Prompt caching: `prose run` of a 200-session `pmap` whose sessions share a 3,000-token
`context:`, against a loopback Anthropic-shaped server that answers with cache usage the
way the API does (`tests/support/fake_prompt_cache.py`: a `cache_control` breakpoint writes
its prefix once it reaches 1,024 tokens; a later request whose prefix matches reads it),
twice in the same run: as shipped, and with `prompt_cache = false` in prose.toml (the
baseline: no breakpoints, nothing cached). Goal: billed input cost <= 0.2x the baseline's.

    python bench/prompt_cache.py             # 200 sessions, 3,000-token context
    python bench/prompt_cache.py --quick     # 20 sessions
    python bench/prompt_cache.py --n 50 --context-tokens 2000

The billed input cost is read from the run's own figures (`prose run --json`: tokens in,
cache reads and writes per model) and priced with the packaged table (claude-sonnet-5-5:
input $2, cache read $0.20, cache write $2.50 per million tokens). The server counts a word
as a token; the context is 3,000 words. The fake makes a cache entry readable only once
the request that wrote it has been answered, as the API does: requests sent at the same
time as the first all miss (which is why the provider sends the first one alone).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _loopback import REPO, Table, load_note, start_in_subprocess, verdict

from openprose.providers.prices import Prices

GOAL_RATIO = 0.2
MODEL = "claude-sonnet-5-5"  # what `sonnet` resolves to on the anthropic provider
PROGRAM = """input items: "the collection"
input doc: "the shared document"
output results = items | pmap:
  session "Summarize point {item} of the document"
    context: doc
"""


def run_prose(project: Path, base_url: str) -> tuple[dict[str, Any], float]:
    """`prose run` as a whole process against the fake: its `--json` summary, wall seconds."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("PROSE_", "ANTHROPIC_", "OPENAI_"))
    }
    env.update(ANTHROPIC_BASE_URL=base_url, ANTHROPIC_API_KEY="sk-ant-bench", TERM="dumb")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), env.get("PYTHONPATH")]))
    code = "import sys; from openprose.cli import main; sys.argv[0] = 'prose'; raise SystemExit(main())"
    argv = [
        "run", "cached.prose", "--inputs", "inputs.json", "--provider", "anthropic",
        "--max-sessions", "none", "--json",
    ]  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code, *argv],
        check=False,
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"prose run failed ({done.returncode}): {done.stderr or done.stdout}")
    return json.loads(done.stdout), wall


def input_cost(usage: dict[str, Any]) -> tuple[float, dict[str, int]]:
    """USD of the prompt tokens alone (the output is the same either way), and the counts."""
    prices = Prices.default()
    total = 0.0
    counts = {"input": 0, "read": 0, "write": 0}
    for model, spent in usage["by_model"].items():
        price = prices.price_of(model)
        assert price is not None, f"no price for {model}"
        read, write = spent.get("cache_read_tokens", 0), spent.get("cache_write_tokens", 0)
        total += price.cost(spent["input_tokens"], 0, read, write)
        counts["input"] += spent["input_tokens"]
        counts["read"] += read
        counts["write"] += write
    return total, counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200, help="pmap items (sessions)")
    parser.add_argument("--context-tokens", type=int, default=3000, help="words of context")
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--quick", action="store_true", help="20 sessions")
    args = parser.parse_args()
    if args.quick:
        args.n = 20
    print(load_note())

    words = [f"fact{i % 97}" for i in range(args.context_tokens)]
    inputs = {"items": [f"p{i}" for i in range(args.n)], "doc": " ".join(words)}
    base_url, stop = start_in_subprocess(args.latency_ms, prompt_cache=True)
    table = Table(
        f"prompt cache: pmap of {args.n} sessions, {args.context_tokens}-token shared context",
        ["run", "prompt tokens", "cache read", "cache write", "input cost $", "wall s"],
    )
    try:
        costs = {}
        for name, setting in (("cached", ""), ("baseline (prompt_cache = false)", "false")):
            with tempfile.TemporaryDirectory(prefix="prose-bench-cache-") as folder:
                project = Path(folder)
                (project / "cached.prose").write_text(PROGRAM)
                (project / "inputs.json").write_text(json.dumps(inputs))
                toml = f"prompt_cache = {setting}\n" if setting else ""
                (project / "prose.toml").write_text(toml)
                summary, wall = run_prose(project, base_url)
            cost, counts = input_cost(summary["usage"])
            costs[name] = cost
            table.add(
                name, counts["input"], counts["read"], counts["write"], f"{cost:.6f}", f"{wall:.2f}"
            )
    finally:
        stop()
    table.print()
    print(load_note())
    ratio = costs["cached"] / costs["baseline (prompt_cache = false)"]
    print(
        f"\nbilled input cost, cached / baseline: {ratio:.3f}x (goal <= {GOAL_RATIO}x) "
        f"{verdict(ratio <= GOAL_RATIO)}"
    )


if __name__ == "__main__":
    main()

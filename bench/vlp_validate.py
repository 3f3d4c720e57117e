"""Benchmark: end-to-end VLP validation of an NDJSON stream vs orjson parse-only and jsonschema.

Generates N mixed messages (~5 % invalid) into a temporary directory, then times, on the
same bytes in the same run:
  * parse-only: read in 1 MiB chunks, split lines, orjson.loads each line;
  * vlp end to end: vlp.scan (read, split, parse, schema shapes, truth-serum rules);
  * jsonschema: Draft202012Validator.is_valid on a parsed sample with the packaged schema.
Goals: vlp >= 0.5x parse-only and >= 25x jsonschema.

    python bench/vlp_validate.py            # 1,000,000 messages
    python bench/vlp_validate.py --n 100000 # quick run
    python bench/vlp_validate.py --n 100000 --profile  # then cProfile one vlp run
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import orjson

import vlp
from vlp.ndjson import CHUNK_BYTES

SENDERS = ["Operator", "Archivist", "TheObserver", "ResearchAgent", "Planner"]
SOURCES = [
    "https://medium.com/@vigilith/article-1",
    "database_query",
    "sha256:9f86d081884c7d65",
    "https://forum.vigilith.ai/post/123",
    "medium_api",
]


def _message(rng: random.Random, index: int, session: str) -> dict[str, Any]:
    kind = rng.choices(
        ["claim", "evidence", "query", "response", "correction", "notice", "session_context"],
        weights=[30, 20, 15, 15, 5, 10, 5],
    )[0]
    second = index % 86400
    msg: dict[str, Any] = {
        "id": f"MSG{index:08d}",
        "protocol": "VLP/1.1",
        "type": kind,
        "timestamp": f"2025-12-14T{second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}Z",
        "session_id": session,
        "seq": index + 1,
        "sender": rng.choice(SENDERS),
        "content": f"Report {index}: processed {rng.randint(1, 500)} records for the audit.",
        "confidence": round(rng.random(), 2),
    }
    if rng.random() < 0.5:
        msg["receiver"] = rng.choice(SENDERS)
    if kind in ("evidence", "response", "correction") or rng.random() < 0.2:
        msg["refers_to"] = f"MSG{max(index - rng.randint(1, 5), 0):08d}"
    if (
        kind in ("evidence", "correction", "claim")
        and rng.random() < 0.8
        or msg["confidence"] >= 0.9
    ):
        msg["provenance"] = rng.sample(SOURCES, rng.randint(1, 3))
    if kind == "evidence":
        msg["provenance"] = msg.get("provenance") or [SOURCES[0]]
    if rng.random() < 0.3:
        msg["keywords"] = rng.sample(["content", "publishing", "audit", "records", "ops"], 2)
    if rng.random() < 0.2:
        msg["safety"] = {"level": rng.choice(["safe", "safe", "review"]), "issues": []}
    if kind == "session_context":
        msg["content"] = {"messages": index, "summary": "session closed"}
    return msg


def _broken(rng: random.Random, msg: dict[str, Any]) -> bytes:
    """One of the ways messages go wrong in practice."""
    flaw = rng.randrange(8)
    if flaw == 0:
        del msg["confidence"]
    elif flaw == 1:
        msg["confidence"] = 1.5
    elif flaw == 2:
        msg["type"], msg["provenance"] = "evidence", []
    elif flaw == 3:
        msg["confidence"], msg["type"] = 0.97, "claim"
        msg.pop("provenance", None)
        msg.pop("safety", None)
    elif flaw == 4:
        msg["timestamp"] = "14/12/2025 10:30"
    elif flaw == 5:
        msg["protocol"] = "VLP/1.0"
    elif flaw == 6:
        return orjson.dumps(msg)[:-7]
    else:
        return b"[" + orjson.dumps(msg) + b"]"
    return orjson.dumps(msg)


def generate(path: Path, n: int, seed: int) -> int:
    rng = random.Random(seed)
    broken = 0
    with path.open("wb") as out:
        batch: list[bytes] = []
        for index in range(n):
            msg = _message(rng, index, f"S-bench-{index // 1000}")
            if rng.random() < 0.05:
                batch.append(_broken(rng, msg))
                broken += 1
            else:
                batch.append(orjson.dumps(msg))
            if len(batch) == 10000:
                out.write(b"\n".join(batch) + b"\n")
                batch.clear()
        if batch:
            out.write(b"\n".join(batch) + b"\n")
    return broken


def parse_only(path: Path) -> int:
    loads = orjson.loads
    parsed = 0
    carry = b""
    with path.open("rb") as stream:
        while chunk := stream.read(CHUNK_BYTES):
            lines = (carry + chunk).split(b"\n")
            carry = lines.pop()
            for line in lines:
                try:
                    loads(line)
                except orjson.JSONDecodeError:
                    pass
                parsed += 1
    return parsed


def end_to_end(path: Path) -> vlp.ndjson.ScanSummary:
    problems: list[vlp.Problem] = []
    return vlp.scan(path, problems.append)


def best_times(runs: list[Any], repeat: int) -> list[tuple[float, float, Any]]:
    """Best wall and CPU time of each run over ``repeat`` rounds, interleaved so that load
    from other processes on the machine hits every contender alike."""
    best: list[tuple[float, float, Any]] = [(float("inf"), float("inf"), None)] * len(runs)
    for _ in range(repeat):
        for index, run in enumerate(runs):
            wall, cpu = time.perf_counter(), time.process_time()
            result = run()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            best[index] = (min(wall, best[index][0]), min(cpu, best[index][1]), result)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=1_000_000, help="messages to generate")
    parser.add_argument("--sample", type=int, default=5_000, help="messages for jsonschema")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measure; best is kept")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument(
        "--profile", action="store_true", help="also cProfile one vlp run, after the figures"
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="vlp-bench-") as tmp:
        path = Path(tmp) / "messages.ndjson"
        broken = generate(path, args.n, args.seed)
        size = path.stat().st_size
        print(f"generated {args.n:,} messages ({broken:,} broken, {size / 1e6:.0f} MB)")

        (parse_wall, parse_cpu, parsed), (vlp_wall, vlp_cpu, summary) = best_times(
            [lambda: parse_only(path), lambda: end_to_end(path)], args.repeat
        )
        invalid = summary.messages - summary.valid
        share = invalid / summary.messages
        print(f"vlp found {invalid:,} invalid of {summary.messages:,} ({share:.1%})")

        validator = jsonschema.Draft202012Validator(vlp.load_schema())
        sample = []
        with path.open("rb") as stream:
            for line in stream:
                try:
                    sample.append(orjson.loads(line))
                except orjson.JSONDecodeError:
                    continue
                if len(sample) == args.sample:
                    break
        [(schema_wall, schema_cpu, schema_valid)] = best_times(
            [lambda: sum(validator.is_valid(msg) for msg in sample)], 1
        )
        ours_valid = sum(vlp.is_valid(msg) for msg in sample)
        print(
            f"sample agreement: jsonschema {schema_valid} valid, "
            f"vlp {ours_valid} valid of {len(sample)}"
        )
        profile = cProfile.Profile() if args.profile else None
        if profile is not None:
            profile.runcall(end_to_end, path)

    for clock, parse_s, vlp_s, schema_s in (
        ("CPU time (robust on a shared machine)", parse_cpu, vlp_cpu, schema_cpu),
        ("wall clock", parse_wall, vlp_wall, schema_wall),
    ):
        parse_rate = parsed / parse_s
        vlp_rate = summary.messages / vlp_s
        schema_rate = len(sample) / schema_s
        vs_parse, vs_schema = vlp_rate / parse_rate, vlp_rate / schema_rate
        print(f"-- rates by {clock}")
        print(f"orjson parse-only : {parse_rate:12,.0f} msg/s")
        print(f"vlp end to end    : {vlp_rate:12,.0f} msg/s")
        print(f"jsonschema        : {schema_rate:12,.0f} msg/s")
        parse_goal = "met" if vs_parse >= 0.5 else "MISSED"
        schema_goal = "met" if vs_schema >= 25 else "MISSED"
        print(f"vlp / parse-only  : {vs_parse:6.2f}x  (goal >= 0.5x: {parse_goal})")
        print(f"vlp / jsonschema  : {vs_schema:6.1f}x  (goal >= 25x: {schema_goal})")
    if profile is not None:
        print("-- cProfile of one vlp run (profiling slows it down)")
        pstats.Stats(profile).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()

"""Deterministic NDJSON corpora for comparing `vlp validate` reports across versions:
valid messages of every shape, invalid and broken lines, threads (duplicates, forward and
dangling references, seq gaps, interleaved sessions) and correction chains.

Each corpus is bytes, the same for a given name on every run and machine (seeded RNG, no
clock). tests/vlp/golden_reports.json holds the digests of the reports the code gave
before the issue-11 fast path; `python -m tests.vlp.corpora` prints them anew.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
import sys
import tempfile
from collections.abc import Callable
from contextlib import redirect_stdout
from typing import Any

import orjson

KINDS = ["claim", "evidence", "query", "response", "correction", "notice", "session_context"]
SOURCES = ["database_query", "https://x.example/a", "sha256:9f86d081", "medium_api"]


def _stamp(rng: random.Random, index: int) -> str:
    second = index * 7 % 86400
    day = 1 + index // 86400 % 28
    stamp = f"2025-12-{day:02d}T{second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}"
    roll = rng.random()
    if roll < 0.03:
        return stamp + ".123Z"
    if roll < 0.04:
        return "2016-12-31T23:59:60Z"
    return stamp + "Z"


def _valid(rng: random.Random, index: int, ident: str, known: list[str]) -> dict[str, Any]:
    """A valid message of varied shape: every optional field now and then."""
    kind = rng.choice(KINDS)
    msg: dict[str, Any] = {
        "id": ident,
        "protocol": "VLP/1.1",
        "type": kind,
        "timestamp": _stamp(rng, index),
        "sender": rng.choice(["Operator", "Archivist", "Ärchivist", "A"]),
        "content": rng.choice(
            [f"Report {index}", "", "line\twith tab", "ünïcode ✓", "esc \x1b[2J here"]
        ),
        "confidence": rng.choice([0, 0.0, 0.5, 0.89, round(rng.random() * 0.89, 3)]),
    }
    if rng.random() < 0.1:
        msg["content"] = {"summary": "done", "n": [1, 2.5, None, True], "deep": {"a": {}}}
    if kind in ("evidence", "response", "correction") or rng.random() < 0.3:
        target = rng.choice(known) if known else "ROOT"
        msg["refers_to"] = target if rng.random() < 0.85 else [target]
    if kind == "evidence" or rng.random() < 0.4:
        msg["provenance"] = rng.sample(SOURCES, rng.randint(1, 3))
        if rng.random() < 0.1:
            msg["provenance"].append(
                {"ref": "r", "hash": "h", "fetched_at": "2025-01-01T00:00:00Z"}
            )
    if rng.random() < 0.1:
        msg["confidence"] = rng.choice([0.9, 0.95, 1.0])
        if "provenance" not in msg:
            msg["safety"] = {"level": "review"}
    if kind == "session_context" or rng.random() < 0.7:
        msg["session_id"] = "S-main"
    for field, value in (
        ("receiver", "Archivist"),
        ("topic", "ops"),
        ("keywords", ["a", "b"]),
        ("constraints", ["tone: formal"]),
        ("payload", {"n": 1, "big": "BIGINT"}),
        ("_extras", {"trace": "t"}),
        ("x-vendor", {"any": [1]}),
        ("safety", {"level": "safe", "issues": []}),
        ("safety", {"level": "review", "issues": [{"code": "tone", "detail": "d"}]}),
        ("safety", {"level": "safe", "requires_human": False}),
    ):
        if rng.random() < 0.08:
            msg[field] = value
    return msg


def _break(rng: random.Random, msg: dict[str, Any]) -> bytes:
    """One of many ways a line goes wrong."""
    flaw = rng.randrange(24)
    msg = dict(msg)
    changes: list[tuple[str, Any]] = [
        ("confidence", None),
        ("confidence", 1.5),
        ("confidence", -0.1),
        ("confidence", "high"),
        ("protocol", "VLP/1.0"),
        ("type", "observation"),
        ("type", "Claim"),
        ("timestamp", "14/12/2025 10:30"),
        ("timestamp", "2025-02-30T10:00:00Z"),
        ("id", ""),
        ("id", 7),
        ("sender", None),
        ("refers_to", []),
        ("provenance", ["", {"hash": "h"}]),
        ("safety", {"level": "maybe"}),
        ("seq", -1),
        ("seq", 1.5),
    ]
    if flaw < len(changes):
        field, value = changes[flaw]
        if value is None:
            msg.pop(field, None)
        else:
            msg[field] = value
        if flaw == 0 and rng.random() < 0.5:
            msg["type"], msg["provenance"] = "evidence", []
        return _dumps(msg)
    data = _dumps(msg)
    flaw -= len(changes)
    if flaw == 0:
        return data[: rng.randrange(1, len(data))]
    if flaw == 1:
        return b"[" + data + b"]"
    if flaw == 2:
        return b""
    if flaw == 3:
        return data.replace(b'"sender"', b'"sender\xff"', 1)
    if flaw == 4:
        return data[:-1] + b',"confidence":0.5,"confidence":7}'
    if flaw == 5:
        return data[:-1] + b',"payload":{"n":1' + b"9" * 400 + b"}}"
    return rng.choice([b"42", b'"text"', b"null", b"  ", b"{}", b'{"id":"\\ud800"}'])


def _dumps(msg: dict[str, Any]) -> bytes:
    """The message as a line; a payload's "BIGINT" becomes a 30-digit number (valid JSON
    that orjson reads as a float and cannot write)."""
    return orjson.dumps(msg).replace(b'"BIGINT"', b"123456789012345678901234567890")


def _lines(
    seed: int, count: int, broken: float, make_id: Callable[[random.Random, int], str]
) -> bytes:
    rng = random.Random(seed)
    known: list[str] = []
    out: list[bytes] = []
    seq = 0
    for index in range(count):
        ident = make_id(rng, index)
        msg = _valid(rng, index, ident, known[-8:])
        if "session_id" in msg:
            seq += 1
            msg["seq"] = seq
        if rng.random() < broken:
            out.append(_break(rng, msg))
        else:
            out.append(_dumps(msg))
        known.append(ident)
    return b"\n".join(out) + b"\n"


def valid_corpus() -> bytes:
    return _lines(1, 3000, 0.0, lambda rng, index: f"MSG{index:06d}")


def invalid_corpus() -> bytes:
    return _lines(2, 3000, 0.3, lambda rng, index: f"MSG{index:06d}")


def threaded_corpus() -> bytes:
    """Threads with every cross-message problem: the ids repeat, references go forward,
    dangle and point at themselves, sessions interleave and their seq jump and repeat."""
    rng = random.Random(3)
    lines: list[bytes] = []
    last = {"S1": 0, "S2": 0, "S3": 0}
    for index in range(6000):
        ident = f"M{index}" if rng.random() < 0.97 else f"M{rng.randrange(index + 1)}"
        msg = _valid(rng, index, ident, [])
        roll = rng.random()
        if "refers_to" in msg or roll < 0.3:
            if roll < 0.9:
                target = f"M{max(0, index - rng.randint(1, 40))}"
            elif roll < 0.95:
                target = f"M{index + rng.randint(0, 30)}"  # itself or forward
            else:
                target = f"NOPE{index}"
            msg["refers_to"] = target if rng.random() < 0.9 else [target, f"M{index // 2}"]
        session = rng.choice(["S1", "S1", "S1", "S2", "S3"]) if rng.random() < 0.9 else None
        msg.pop("session_id", None)
        msg.pop("seq", None)
        if session is not None:
            msg["session_id"] = session
            step = rng.choices([1, 2, 0, -3, 1000], weights=[90, 4, 2, 2, 2])[0]
            last[session] = max(0, last[session] + step)
            if rng.random() < 0.97:
                msg["seq"] = last[session]
        elif msg["type"] == "session_context":
            msg["type"] = "notice"
        if rng.random() < 0.06:
            lines.append(_break(rng, msg))
        else:
            lines.append(_dumps(msg))
        if rng.random() < 0.01:
            lines.append(b"")
    return b"\n".join(lines) + b"\n"


def corrections_corpus() -> bytes:
    """Correction chains (corrections of corrections), cycles, evidence attached to claims,
    to corrections of claims and to other types."""
    rng = random.Random(4)
    lines: list[bytes] = []
    claims: list[str] = []
    others: list[str] = []
    for index in range(3000):
        ident = f"C{index}"
        msg = _valid(rng, index, ident, [])
        msg.pop("session_id", None)
        roll = rng.random()
        if roll < 0.3 or not claims:
            msg["type"] = "claim"
            msg.pop("refers_to", None)
            claims.append(ident)
        elif roll < 0.6:
            msg["type"] = "correction"
            pool = claims[-5:] + others[-5:]
            target = rng.choice(pool)
            if rng.random() < 0.03:
                target = f"C{index + rng.randint(0, 3)}"  # forward or self: cycles
            msg["refers_to"] = target if rng.random() < 0.9 else [target, rng.choice(pool)]
            others.append(ident)
        elif roll < 0.85:
            msg["type"] = "evidence"
            msg["provenance"] = ["db"]
            msg["refers_to"] = rng.choice(claims[-5:] + others[-5:])
        else:
            msg["type"] = rng.choice(["query", "response", "notice"])
            msg["refers_to"] = rng.choice(claims[-5:])
            others.append(ident)
        lines.append(_break(rng, msg) if rng.random() < 0.03 else _dumps(msg))
    return b"\n".join(lines) + b"\n"


CORPORA: dict[str, Callable[[], bytes]] = {
    "valid": valid_corpus,
    "invalid": invalid_corpus,
    "threaded": threaded_corpus,
    "corrections": corrections_corpus,
}

# The command lines whose reports are compared; the corpus is `corpus.ndjson` in the
# working directory, so the reports name it the same way everywhere.
VARIANTS: dict[str, list[str]] = {
    "text": ["validate", "corpus.ndjson"],
    "json": ["validate", "--format", "json", "corpus.ndjson"],
    "no-thread": ["validate", "--no-thread", "corpus.ndjson"],
}


def run_cli(argv: list[str]) -> tuple[int, bytes]:
    """`vlp ARGV` in process: exit code and stdout bytes."""
    from vlp.cli import main

    buffer = io.BytesIO()
    text = io.TextIOWrapper(buffer, encoding="utf-8", newline="")
    with redirect_stdout(text):
        code = main(argv)
        text.flush()
    return code, buffer.getvalue()


def chunked_report(path: str, chunk_bytes: int = 4096) -> bytes:
    """The thread-checked problems of ``vlp.scan`` reading small chunks, one per line."""
    from vlp import Problem, ThreadChecker, scan

    found: list[Problem] = []
    checker = ThreadChecker()
    summary = scan(path, found.append, thread=checker, chunk_bytes=chunk_bytes)
    found.extend(checker.finish())
    lines = [f"{p.line} {p.code} {p.id} {p.message}" for p in found]
    lines.append(f"{summary.messages} {summary.valid} {summary.problems}")
    return "\n".join(lines).encode("utf-8", "backslashreplace")


def report_digest(code: int, out: bytes) -> str:
    return f"{code}:{len(out.splitlines())}:{hashlib.sha256(out).hexdigest()}"


def digests() -> dict[str, str]:
    """Digest of every variant's report on every corpus, run in a scratch directory."""
    found: dict[str, str] = {}
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as scratch:
        os.chdir(scratch)
        try:
            for name, make in CORPORA.items():
                with open("corpus.ndjson", "wb") as out:
                    out.write(make())
                for variant, argv in VARIANTS.items():
                    found[f"{name}/{variant}"] = report_digest(*run_cli(argv))
                found[f"{name}/chunked"] = report_digest(0, chunked_report("corpus.ndjson"))
        finally:
            os.chdir(here)
    return found


if __name__ == "__main__":
    json.dump(digests(), sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")

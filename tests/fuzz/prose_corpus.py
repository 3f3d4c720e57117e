"""Shared pieces of the openprose fuzzers (tests/fuzz/test_prose_*.py): the seed corpora,
a hypothesis strategy that mutates them, the in-process `prose` runner that fails on any
traceback or "internal error", and the budget.

Budget: `PROSE_FUZZ_EXAMPLES` inputs per CLI test and ten times that per front-end test
(default 60, for CI). The large run is
documented in docs/fuzzing-prose.md; it sets `PROSE_FUZZ_REPORT=FILE` to have every test
append how many inputs it ran.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from openprose.cli import main
from tests.openprose.test_nesting_limit import nested

ROOT = Path(__file__).resolve().parents[2]
_CONFORMANCE = ROOT / "tests" / "openprose" / "conformance"
# the examples, the reference's blocks, and programs as people write them, rule-breaking ones
# included (their recoveries are where the parser does the most)
EXAMPLES = sorted((ROOT / "examples").glob("*.prose")) + sorted(
    p
    for folder in ("reference_examples", "fixable", "beyond_grammar", "workflows")
    for p in (_CONFORMANCE / folder).glob("*.prose")
)
# ... and programs nested just under the E115 limit, whose mutations cross it (a
# RecursionError in the checker was found this way: issue 29)
PROGRAMS = [p.read_bytes() for p in EXAMPLES] + [
    nested(kind, 990).encode() for kind in ("parallel", "try", "if")
]

BUDGET = int(os.environ.get("PROSE_FUZZ_EXAMPLES", "60"))
FUZZ = settings(
    max_examples=BUDGET,
    deadline=None,
    database=None,  # no .hypothesis folder: the corpus is the seed, not past failures
    derandomize=BUDGET <= 100,  # CI: the same inputs every run
    suppress_health_check=list(HealthCheck),
)
# The front end is ~20 times cheaper per input than a whole `prose` command: it gets more.
FRONT_END_FACTOR = 10
FUZZ_FRONT_END = settings(FUZZ, max_examples=BUDGET * FRONT_END_FACTOR)

# Pieces a mutation inserts: grammar words, hostile characters, and the shapes the audit of
# issue 17 used (huge numbers, deep nesting, escapes, bad UTF-8, NUL).
FRAGMENTS: list[bytes] = [
    s.encode() if isinstance(s, str) else s
    for s in (
        "session", "agent", "let", "const", "output", "input", "use", "block", "parallel",
        "for", "in", "repeat", "loop", "until", "while", "try", "catch", "finally", "throw",
        "choice", "option", "if", "elif", "else", "map", "pmap", "persist:", "context:",
        "retry:", "model:", "prompt:", '"', '"""', "**", "***", ":", "=", ",", "(", ")", "[",
        "]", "{", "}", "|", "->", "#", "\n", "\n  ", "\n    ", "\r\n", "\t", " ", "\x00",
        "\x1b[2J", "\x1b]0;t\x07", "\u202e", "\ufeff", "é", "🦉", "9" * 5000, "-1e999",
        "[" * 3000, "{" * 3000, '{"a":' * 2000, "null", "true", "1e400", "NaN", "..", "~",
        "/dev/zero", "http://", "@x/y", "\n    - ", "skills:", "name: ", "except", "return", "break", "string", "C:\\Users", b"\xff\xfe", b"\xc3", b"\xed\xa0\x80",
    )
]  # fmt: skip


@st.composite
def mutated(draw: st.DrawFn, corpus: list[bytes]) -> bytes:
    """A seed from `corpus`, changed by one to six mutations (or, rarely, random bytes)."""
    if draw(st.integers(0, 19)) == 0:
        return draw(st.binary(max_size=400))
    data = bytearray(draw(st.sampled_from(corpus)))
    for _ in range(draw(st.integers(1, 6))):
        size = len(data)
        at = draw(st.integers(0, size))
        end = min(size, at + draw(st.integers(0, 80)))
        op = draw(st.integers(0, 7))
        if op == 0:  # delete a range
            del data[at:end]
        elif op == 1:  # duplicate a range
            data[at:at] = data[at:end]
        elif op in (2, 3):  # insert a fragment
            data[at:at] = draw(st.sampled_from(FRAGMENTS))
        elif op == 4:  # replace a byte
            if size:
                data[min(at, size - 1)] = draw(st.integers(0, 255))
        elif op == 5:  # truncate
            del data[at:]
        elif op == 6:  # swap two lines
            lines = bytes(data).split(b"\n")
            if len(lines) > 1:
                i = draw(st.integers(0, len(lines) - 1))
                j = draw(st.integers(0, len(lines) - 1))
                lines[i], lines[j] = lines[j], lines[i]
                data = bytearray(b"\n".join(lines))
        else:  # re-indent a line
            lines = bytes(data).split(b"\n")
            i = draw(st.integers(0, max(0, len(lines) - 1)))
            lines[i] = b" " * draw(st.integers(0, 9)) + lines[i].lstrip()
            data = bytearray(b"\n".join(lines))
    return bytes(data)


class Outcome:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err


def prose(*args: str) -> Outcome:
    """`prose ARGS` in this process through its entry point; fails the test on an exception
    escaping `main`, an "internal error", a traceback, or an undocumented exit status."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    result = Outcome(code, out.getvalue(), err.getvalue())
    shown = result.out + result.err
    assert "Traceback (most recent call last)" not in shown, (args, shown[-2000:])
    assert "internal error" not in result.err, (args, result.err[-2000:])
    assert code in (0, 1, 2, 3), (args, code, shown[-2000:])  # 3: stopped by a budget
    return result


class Counter:
    """Inputs run per test; appended to `PROSE_FUZZ_REPORT` when that is set."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def tick(self, name: str) -> None:
        self.counts[name] = self.counts.get(name, 0) + 1

    def report(self) -> None:
        target = os.environ.get("PROSE_FUZZ_REPORT")
        if not target:
            return
        with open(target, "a", encoding="utf-8") as out:
            out.writelines(f"{name}\t{count}\n" for name, count in self.counts.items())


@contextlib.contextmanager
def in_folder(folder: Path) -> Iterator[None]:
    before = Path.cwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000))  # the default: what users get

"""A JSON array too big to parse whole (over 16 MiB) is read element by element: the same
problems at the same lines as the whole-document reader, in bounded memory."""

from __future__ import annotations

import io
import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

import vlp.documents
from vlp.errors import Problem
from vlp.ndjson import scan

CORPUS = Path(__file__).parents[1] / "fuzz" / "corpus" / "thread.json"
THREAD = json.loads(CORPUS.read_text(encoding="utf-8"))


def report(data: bytes) -> list[Problem]:
    problems: list[Problem] = []
    scan(io.BytesIO(data), problems.append, thread=vlp.ThreadChecker())
    return problems


def streamed(data: bytes, monkeypatch: pytest.MonkeyPatch) -> list[Problem]:
    """The report with the whole-document limit below the input's size."""
    with monkeypatch.context() as patch:
        patch.setattr(vlp.documents, "_DOCUMENT_BYTES", 1)
        return report(data)


ARRAYS = [
    json.dumps(THREAD, indent=2),  # pretty-printed: elements over several lines
    json.dumps(THREAD),  # one line
    json.dumps([*THREAD, {}, [], 5, {"id": "x"}], indent=1),  # elements with problems
    '[\n  {"id": "M1", "id": "M2"},\n  {"a": 1, "b": {"c": 2, "c": 3}}\n]',  # repeated keys
    "[]",
    "  [ ]  ",
]


@pytest.mark.parametrize("text", ARRAYS)
def test_streaming_reports_what_the_whole_document_reader_reports(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = text.encode()
    assert streamed(data, monkeypatch) == report(data)


@pytest.mark.parametrize(
    ("text", "line", "why"),
    [
        ('[\n{"a": 1}\n{"b": 2}]', 3, "expected ',' or ']' after element [0]"),
        ('[\n{"a": 1},\n{"b": ', 3, "invalid JSON"),
        ('[{"a": 1}', 1, "the input ends inside the array"),
        ('[{"a": 1}]\n{"b": 2}', 2, "data after the array's closing ']'"),
        ('[{"a": 1}, {"b": NaN}]', 1, "invalid JSON"),
        ("[" * 5000, 1, "nested too deeply"),
        ('{\n"a": 1}', 1, "not an array"),
    ],
)
def test_what_cannot_be_read_on_is_one_problem(
    text: str, line: int, why: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    problems = [p for p in streamed(text.encode(), monkeypatch) if p.code == "VLP001"]
    assert len(problems) == 1 and problems[0].line == line and why in problems[0].message


def test_an_element_longer_than_a_line_may_be_is_vlp003(monkeypatch: pytest.MonkeyPatch) -> None:
    data = b'[{"a": "' + b"x" * (3 << 20) + b'"}]'
    problems: list[Problem] = []
    with monkeypatch.context() as patch:
        patch.setattr(vlp.documents, "_DOCUMENT_BYTES", 1)
        scan(io.BytesIO(data), problems.append, max_line_bytes=1 << 20)
    assert [p.code for p in problems] == ["VLP003"]


MiB = 1 << 20
# Elements of ~1 MiB: few of them, so the run is quick; a 400 MiB input read whole would
# need more than the address space the process is given.
GENERATOR = (
    "import sys\n"
    "out = sys.stdout.buffer\n"
    "pad = b'x' * (1 << 20)\n"
    "out.write(b'[')\n"
    "for i in range(400):\n"
    '    out.write(b\'%s{"id": "M%d", "pad": "%s"}\' % (b\',\' if i else b\'\', i, pad))\n'
    "out.write(b']')\n"
)


def test_a_huge_array_on_stdin_is_validated_in_bounded_memory() -> None:
    ceiling = 600 * MiB  # address space, not resident memory: the interpreter alone maps ~250

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (ceiling, ceiling))

    source = subprocess.Popen([sys.executable, "-c", GENERATOR], stdout=subprocess.PIPE)
    done = subprocess.run(
        [sys.executable, "-m", "vlp.cli", "validate", "--max-line-bytes", str(2 * MiB), "-"],
        stdin=source.stdout,
        capture_output=True,
        preexec_fn=cap,
        timeout=300,
        check=False,
    )
    source.wait(60)
    assert done.returncode == 1, done.stderr[-2000:]  # the elements lack required fields
    assert b"Traceback" not in done.stderr and b"MemoryError" not in done.stderr
    assert b"INVALID: 400 message(s), 0 valid" in done.stdout

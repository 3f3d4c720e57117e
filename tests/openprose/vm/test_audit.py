"""The VLP audit trail: every run writes `audit.ndjson`, valid VLP 1.1, one message per
request, answer, verdict, error and retry, linked with `refers_to`."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from openprose.parser import parse_text
from openprose.vm.audit import AUDIT_FILE, ROWS, translate
from openprose.vm.journal import read_journal
from openprose.vm.loader import load_imports
from vlp import Thread, effective, read_records
from vlp.cli import main as vlp_main

SRC = Path(__file__).resolve().parents[3] / "src" / "openprose"
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
UNIVERSAL = '{"verdict": true, "option": 1, "reason": "scripted"}'
NEEDS_REGISTRY = {"program-composition.prose"}


def trail(run_dir: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in (run_dir / AUDIT_FILE).read_bytes().splitlines()]


def vlp_validate(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    code = vlp_main(["validate", str(path)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert " 0 problem(s)" in out, out
    return out


def assert_sound(messages: list[dict[str, Any]]) -> None:
    """One session per run, seq 1..N with no gap, ids unique, every reference earlier."""
    assert [m["seq"] for m in messages] == list(range(1, len(messages) + 1))
    assert len({m["id"] for m in messages}) == len(messages)
    assert len({m["session_id"] for m in messages}) == 1
    assert Thread(messages).problems() == []


@pytest.mark.parametrize(
    "name", sorted(p.name for p in EXAMPLES.glob("*.prose") if p.name not in NEEDS_REGISTRY)
)
def test_every_example_trail_passes_vlp_validate(
    vm: Any, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = EXAMPLES / name
    source = path.read_text()
    program = parse_text(source, str(path)).program
    inputs = {
        s.name.id: f"value of {s.name.id}" for s in program.body if type(s).__name__ == "Input"
    }
    imports = load_imports(program, base_dir=EXAMPLES, project_dir=vm.project)
    result = vm.run(source, vm.spy(default=UNIVERSAL), inputs=inputs, imports=imports, path=name)
    vlp_validate(result.run_dir / AUDIT_FILE, capsys)
    messages = trail(result.run_dir)
    assert_sound(messages)
    answers = vm.events(result, "session_finished")
    assert sum(m["type"] in ("response", "correction") for m in messages) == len(answers)
    assert sum(m["type"] == "query" for m in messages) == len(answers)
    # The trail is the journal's translation, message for message.
    events = read_journal(result.run_dir / "journal.jsonl")
    assert list(translate(events, result.run_id, name)) == messages

"""Run folders for the `prose ui` tests, made by real runs on the scripted provider."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import openprose
from openprose.record.runstore import RUNS_DIR

# Parallel branches, pmap items, a condition — and text that must never become HTML.
PROGRAM = """\
agent writer:
  prompt: "You write notes"

let topic = session: writer
  prompt: "Pick a topic <script>alert('x')</script>"

parallel:
  a = session "Angle A on {topic}"
  b = session "Angle B on {topic}"

let items = ["x", "y", "z"]
let drafts = items | pmap:
  session "Draft about {item}"

if **the drafts look good**:
  session "Summarise {drafts}"
"""

RULES = {
    "latency_ms": 30,
    "default": "Answer <img src=x onerror=\"document.title='pwned'\"> & more",
    "rules": [{"match": "Is this condition", "answer": '{"verdict": true, "reason": "they do"}'}],
}

WAITING_PROGRAM = """\
agent writer:
  prompt: "You write notes"
  permissions:
    write: prompt

session: writer
  prompt: "Write the note"
"""

WAITING_RULES = {
    "rules": [
        {
            "match": "Write the note",
            "turns": [
                {
                    "tool_calls": [
                        {"name": "write_file", "arguments": {"path": "a.md", "content": "A"}}
                    ]
                },
                {"text": "wrote it"},
            ],
        }
    ]
}


@dataclass(frozen=True)
class Project:
    root: Path
    finished: str  # a succeeded run with parallel branches, pmap items and a decision
    waiting: str  # a run waiting for one approval (write a.md)

    @property
    def runs(self) -> Path:
        return self.root / RUNS_DIR

    def copy_run(self, run_id: str, new_id: str) -> Path:
        """The same run under another id (to compare two ways of answering it)."""
        return Path(shutil.copytree(self.runs / run_id, self.runs / new_id))


def make_project(root: Path) -> Project:
    root.mkdir(parents=True, exist_ok=True)
    (root / "main.prose").write_text(PROGRAM)
    (root / "rules.json").write_text(json.dumps(RULES))
    (root / "wait.prose").write_text(WAITING_PROGRAM)
    (root / "wait-rules.json").write_text(json.dumps(WAITING_RULES))
    finished = openprose.run(
        root / "main.prose", provider=f"scripted:{root / 'rules.json'}", project_dir=root
    )
    assert finished.status == "succeeded", finished.error
    waiting = openprose.run(
        root / "wait.prose", provider=f"scripted:{root / 'wait-rules.json'}", project_dir=root
    )
    assert waiting.status == "waiting", waiting.error
    return Project(root, finished.run_id, waiting.run_id)


def journal_lines(run_dir: Path) -> list[dict[str, object]]:
    """The journal's events without their times (which differ between two answers)."""
    events = [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines()]
    return [{k: v for k, v in e.items() if k != "t"} for e in events]


def same_but_who(ui: list[dict[str, object]], cli: list[dict[str, object]]) -> bool:
    """Two journals equal but for who gave the answers (`by`: ui, cli) and so the seals
    (which bind `by` and the run); every answer is sealed."""

    def anyone(events: list[dict[str, object]]) -> list[dict[str, object]]:
        return [{k: v for k, v in e.items() if k not in ("by", "seal")} for e in events]

    answers = [e for e in (*ui, *cli) if e["ev"] == "approval_decided"]
    if not all(len(str(e.get("seal", ""))) == 64 for e in answers):
        return False

    return anyone(ui) == anyone(cli)


def start_prose(cwd: Path, *args: str) -> subprocess.Popen[str]:
    """`prose ARGS...` in its own process (its output piped, as text)."""
    return subprocess.Popen(
        [sys.executable, "-m", "openprose.cli", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

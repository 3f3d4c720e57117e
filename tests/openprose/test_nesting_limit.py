"""Nesting at the E115 limit (1,000 levels) works in every stage; one level more is E115.

Each statement that holds a block, nested 1,000 deep: `prose check`, `compile`, `fmt` and
`run` finish without a traceback (the language server: tests/openprose/lsp/test_wire.py).
At 1,001 levels every stage says E115 (docs/decisions.md, tb29).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from openprose.depth import MAX_NESTING

# Each statement's header, and what closes a level after its body (try needs a catch).
HEADS = {
    "parallel": "parallel:",
    "try": "try:",
    "repeat": "repeat 1:",
    "if": "if **the check passed**:",
    "loop": "loop until **the work is done** (max: 1):",
    "do": "do:",
    "for": "for item in items:",
    "choice": "choice **the best way**:",
}
RULES = (
    "rules:\n"
    '  - match: "^Choice:"\n'
    '    answer: \'{"option": "A", "reason": "the only one"}\'\n'
    'default: "yes"\n'
)
BUDGET = ("--max-sessions", "5000")  # `if` asks the model once a level


def nested(kind: str, depth: int) -> str:
    lines = ['let items = ["a"]'] if kind == "for" else []
    indent = 0
    for _ in range(depth):
        if kind == "choice":
            lines.append("  " * indent + HEADS[kind])
            lines.append("  " * (indent + 1) + 'option "A":')
            indent += 2
        else:
            lines.append("  " * indent + HEADS[kind])
            indent += 1
    lines.append("  " * indent + 'session "Work"')
    if kind == "try":
        for level in reversed(range(depth)):
            lines.append("  " * level + "catch:")
            lines.append("  " * (level + 1) + 'session "Recover"')
    return "\n".join(lines) + "\n"


def levels(kind: str, depth: int) -> int:
    """The depth argument that nests ``depth`` blocks (an option is a block of its own)."""
    return depth // 2 if kind == "choice" else depth


def prose(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "openprose.cli", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={"PATH": "/usr/bin:/bin", "NO_COLOR": "1", "PYTHONPATH": ":".join(sys.path)},
    )


@pytest.mark.parametrize("kind", list(HEADS))
def test_the_limit_works_in_every_command(kind: str, tmp_path: Path) -> None:
    program = tmp_path / "deep.prose"
    program.write_text(nested(kind, levels(kind, MAX_NESTING)))
    (tmp_path / "rules.yaml").write_text(RULES)
    for args, allowed in (
        (("check", "deep.prose"), (0, 1)),
        (("compile", "deep.prose"), (0,)),
        (("fmt", "--check", "deep.prose"), (0, 1)),
        (
            (
                "run",
                "deep.prose",
                "--provider",
                "scripted:rules.yaml",
                "-q",
                "--max-sessions",
                "5000",
            ),
            (0,),
        ),
    ):
        done = prose(tmp_path, *args)
        assert done.returncode in allowed, (args, done.returncode, done.stderr[-2000:])
        assert "Traceback" not in done.stderr and "internal error" not in done.stderr, args
        assert "E115" not in done.stdout + done.stderr, args


@pytest.mark.parametrize("kind", list(HEADS))
def test_one_level_more_is_e115_everywhere(kind: str, tmp_path: Path) -> None:
    program = tmp_path / "deep.prose"
    program.write_text(nested(kind, levels(kind, MAX_NESTING) + 1))
    (tmp_path / "rules.yaml").write_text(RULES)
    for args in (
        ("check", "deep.prose"),
        ("compile", "deep.prose"),
        ("run", "deep.prose", "--provider", "scripted:rules.yaml", "-q"),
    ):
        done = prose(tmp_path, *args)
        assert done.returncode in (1, 2), (args, done.returncode, done.stderr[-2000:])
        assert "Traceback" not in done.stderr and "internal error" not in done.stderr, args
        assert "E115" in done.stdout + done.stderr, args

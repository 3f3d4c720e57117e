"""The run record stands below the rest: no module of it imports (at any depth, inside a
function included) from the VM, the providers, the CLI, the session layer or the views."""

from __future__ import annotations

import ast
from pathlib import Path

RECORD = Path(__file__).resolve().parents[3] / "src" / "openprose" / "record"
ABOVE = ("vm", "providers", "cli", "session", "ui", "batches", "api", "lsp")


def imported(tree: ast.AST) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_the_record_imports_nothing_from_above_it() -> None:
    modules = sorted(RECORD.rglob("*.py"))
    assert len(modules) >= 12
    for path in modules:
        names = imported(ast.parse(path.read_text(encoding="utf-8")))
        above = {n for n in names if n.split(".")[:2] in (["openprose", a] for a in ABOVE)}
        assert above == set(), f"{path.name} imports {sorted(above)}"

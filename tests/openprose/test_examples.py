"""examples/: each program is valid, already formatted, and together they cover the language."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from openprose import check_file, check_source
from openprose import nodes as n
from openprose.compiler import canonicalize, compile_program
from openprose.diagnostics import Severity
from openprose.formatter import format_source
from openprose.parser import parse_text
from openprose.source import SourceFile

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.prose"))


def test_there_are_enough_examples() -> None:
    assert 10 <= len(EXAMPLES) <= 20


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_checks_clean(path: Path) -> None:
    # Notes (checks deferred to run time) are fine; errors and warnings are not.
    found = [d for d in check_file(path) if d.severity is not Severity.INFO]
    assert found == []


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_is_in_canonical_layout_and_compiles(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    result = parse_text(text, str(path))
    assert format_source(result) == text
    compiled = compile_program(result.program)
    assert parse_text(compiled).program == canonicalize(result.program)
    # Hoisting and expansion keep a valid program valid.
    after = [
        d for d in check_source(SourceFile.from_text(compiled)) if d.severity is not Severity.INFO
    ]
    assert after == []


def test_hello_is_one_session() -> None:
    (program,) = [p for p in EXAMPLES if p.name == "hello.prose"]
    body = parse_text(program.read_text(encoding="utf-8")).program.body
    assert len(body) == 1 and isinstance(body[0], n.Session)


def _walk(node: Any) -> Any:
    yield node
    if dataclasses.is_dataclass(node):
        for field in dataclasses.fields(node):
            yield from _walk(getattr(node, field.name))
    elif isinstance(node, tuple):
        for item in node:
            yield from _walk(item)


def test_examples_cover_every_construct() -> None:
    seen: set[str] = set()
    for path in EXAMPLES:
        program = parse_text(path.read_text(encoding="utf-8")).program
        if program.comments:
            seen.add("comment")
        for node in _walk(program):
            seen.add(type(node).__name__)
            match node:
                case n.Session(kind="resume"):
                    seen.add("resume")
                case n.Session(name=n.Name()):
                    seen.add("named session")
                case n.StringLit(triple=True):
                    seen.add("multi-line string")
                case n.StringLit() if node.interpolations:
                    seen.add("interpolation")
                case n.Discretion(triple=True):
                    seen.add("multi-line discretion")
                case n.ForEach(parallel=True):
                    seen.add("parallel for")
                case n.Loop(kind=kind):
                    seen.add(f"loop {kind}")
                case n.PipeOp(op=op):
                    seen.add(f"| {op}")
                case n.Binding(kind=kind):
                    seen.add(kind)
                case n.Property(value=n.PermissionsBlock()):
                    seen.add("permissions")
                case n.Property(name=n.Name(id=name)):
                    seen.add(f"{name}:")
    statement_kinds = {t.__name__ for t in n.Stmt.__args__ if t is not n.Invalid}  # type: ignore[attr-defined]
    features = {
        "comment", "resume", "named session", "multi-line string", "interpolation",
        "multi-line discretion", "parallel for", "loop loop", "loop until", "loop while",
        "| map", "| filter", "| reduce", "| pmap", "let", "const", "permissions", "model:",
        "prompt:", "persist:", "skills:", "context:", "retry:", "backoff:", "ObjectContext",
        "Destructure", "Attribute", "Modifier", "CatchClause", "ChoiceOption", "CondBranch",
    }  # fmt: skip
    assert statement_kinds | features <= seen, sorted((statement_kinds | features) - seen)

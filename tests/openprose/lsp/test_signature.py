"""Signature help for a block call and an imported program's call, read from the line typed."""

from __future__ import annotations

from pathlib import Path

import pytest

from openprose.lsp.documents import Documents
from openprose.lsp.signature import signature_help

HEAD = """\
use "./research.prose" as research
block review(text, tone):
  session "Review {text} in a {tone} tone"
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "research.prose").write_text(
        'input topic: "what"\ninput depth: "how deep"\noutput summary = session "s"\n',
        encoding="utf-8",
    )
    return tmp_path


def _help(project: Path, line: str) -> tuple[str, str | None] | None:
    """The signature's label and its active parameter's text, the cursor at ``|``."""
    text = HEAD + line.replace("|", "") + "\n"
    cursor = len(HEAD) + line.index("|")
    store = Documents()
    analysis = store.update((project / "main.prose").as_uri(), text, 1)
    found = signature_help(store, analysis, cursor)
    if found is None:
        return None
    signature = found.signatures[0]
    active = found.active_parameter
    if active is None:
        return signature.label, None
    start, end = signature.parameters[active].label  # type: ignore[misc]
    return signature.label, signature.label[start:end]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("do review(|", ("do review(text, tone)", "text")),
        ('do review("a", |', ("do review(text, tone)", "tone")),
        ('do review("a, b", |)', ("do review(text, tone)", "tone")),  # a comma in a string
        ("do review(f(1, 2), |", ("do review(text, tone)", "tone")),  # a closed inner call
        ('do review("a", "b", |', ("do review(text, tone)", None)),  # one too many
        ("let r = research(|", ("research(topic: …, depth: …)", "topic: …")),
        ("let r = research(depth: |", ("research(topic: …, depth: …)", "depth: …")),
        ('let r = research(topic: "x", |', ("research(topic: …, depth: …)", "depth: …")),
    ],
)
def test_signature_of_the_call_being_typed(
    project: Path, line: str, expected: tuple[str, str | None]
) -> None:
    assert _help(project, line) == expected


@pytest.mark.parametrize(
    "line", ['do review("a")|', "do missing(|", "let r = unknown(|", 'session "do review(|"']
)
def test_no_signature_outside_a_known_call(project: Path, line: str) -> None:
    assert _help(project, line) is None

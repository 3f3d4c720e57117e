"""Inside strings: completion after an interpolation's brace (in `\"\"\"` prompts too), nothing
in an escaped `\\{…}`, no variable before its declaration, the fields of a program's result, and
go-to-definition on `{result.field}`."""

from __future__ import annotations

from pathlib import Path

import pytest

from openprose.lsp import completion, navigation
from openprose.lsp.documents import Documents
from openprose.lsp.strings import string_at

LIBRARY = """\
input topic: "what to research"
output summary = session "Summarise {topic}"
output sources = session "List sources"
"""
HEAD = """\
use "./research.prose" as research
input audience: "who reads it"
let result = research(topic: "tides")
let notes = session "Notes"
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "research.prose").write_text(LIBRARY, encoding="utf-8")
    return tmp_path


def _labels(project: Path, text: str) -> list[str]:
    """Complete where ``|`` is in ``text``, a file of ``project``."""
    cursor = text.index("|")
    text = text.replace("|", "")
    store = Documents()
    analysis = store.update((project / "main.prose").as_uri(), text, 1)
    return [item.label for item in completion.complete(analysis, cursor, store)]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('session """\nAbout {|\n"""\n', {"result", "notes", "audience"}),
        ('session:\n  prompt: """\n    Write for {aud|}\n  """\n', {"result", "notes", "audience"}),
        ('session "About {|', {"result", "notes", "audience"}),  # unterminated while typing
        ('session "About \\{|}"\n', set()),  # escaped: literal text
        ('session "About \\\\{|}"\n', {"result", "notes", "audience"}),  # an escaped backslash
        ('session "About {notes} and |"\n', set()),  # plain text after a closed one
        ('session "About {result.|}"\n', {"summary", "sources"}),
        ('session """\n  From {result.su|\n"""\n', {"summary", "sources"}),
        ('session "About {notes.|}"\n', set()),  # no known shape
        ('session "x"\n  context: result.|\n', {"summary", "sources"}),
        ('let later = session "about {|}"\n', {"result", "notes", "audience"}),
    ],
)
def test_completion_inside_strings(project: Path, body: str, expected: set[str]) -> None:
    assert set(_labels(project, HEAD + body)) == expected


def test_no_variable_before_its_declaration(project: Path) -> None:
    text = HEAD + 'session "About {|}"\nlet later = session "x"\nlet more = session "{x}"\n'
    labels = _labels(project, text)
    assert "notes" in labels
    assert "later" not in labels
    assert "more" not in labels


def test_a_binding_is_not_offered_in_its_own_statement(project: Path) -> None:
    assert "draft" not in _labels(project, HEAD + 'let draft = session "Use {|}"\n')
    assert "draft" in _labels(project, HEAD + 'let draft = session "a"\nsession "{|}"\n')


def test_a_block_sees_names_declared_anywhere(project: Path) -> None:
    text = 'block review(text):\n  session "{|}"\nlet later = session "x"\n'
    labels = _labels(project, text)
    assert {"text", "later"} <= set(labels)


def test_a_string_spot_knows_plain_text_from_an_interpolation(project: Path) -> None:
    store = Documents()
    text = 'session "a {b} \\{c d {e.f"\n'
    analysis = store.update("untitled:spot", text, 1)
    spots = {at: string_at(analysis, at) for at in range(len(text))}
    assert spots[0] is None and spots[7] is None  # the keyword, the space
    assert spots[8] is None  # on the opening quote
    assert spots[9] is not None and spots[9].path is None and spots[9].start == 8
    assert spots[text.index("b")].path == ("",)  # right after `{`
    assert spots[text.index("c")].path is None  # after `\{`
    assert spots[text.index(".f")].path == ("e",)
    assert spots[text.index("f")].path == ("e", "")


def test_definition_of_a_field_in_a_string_is_the_output(project: Path) -> None:
    store = Documents()
    text = HEAD + 'session """\n  About {result.summary}\n"""\n'
    analysis = store.update((project / "main.prose").as_uri(), text, 1)
    found = navigation.definition(store, analysis, text.index("summary") + 2)
    assert len(found) == 1
    assert found[0].uri == (project / "research.prose").resolve().as_uri()
    assert (found[0].range.start.line, found[0].range.start.character) == (1, 7)
    assert found[0].range.end.character == 7 + len("summary")
    # The root name still leads to the binding.
    root = navigation.definition(store, analysis, text.index("{result") + 2)
    assert [(r.uri, r.range.start.line) for r in root] == [(analysis.uri, 2)]

"""The language server and typed results: hover on a typed name shows its shape, `returns`
is offered and explained as a session property, and shapes survive every feature."""

from __future__ import annotations

from openprose.lsp import completion, hover, outline
from openprose.lsp.documents import Documents
from openprose.lsp.language import PROPERTY_DOCS

TEXT = """\
let review = session "Review"
  returns:
    title: string
    files: list of string
output score: {value: integer} = session "Score {review.title}"
session "Use {score.value}"
"""


def _hover_text(offset: int) -> str:
    store = Documents()
    analysis = store.update("untitled:typed", TEXT, 1)
    found = hover.hover(store, analysis, offset)
    assert found is not None
    contents = found.contents
    return str(getattr(contents, "value", contents))


def test_hover_on_a_typed_name_shows_its_shape() -> None:
    shown = _hover_text(TEXT.index("review.title") + 1)
    assert "let review = session" in shown
    assert "shape: `{title: string, files: list of string}`" in shown
    output = _hover_text(TEXT.index("score.value") + 1)
    assert "shape: `{value: integer}`" in output


def test_returns_is_offered_and_explained() -> None:
    store = Documents()
    text = 'session "x"\n  re'
    analysis = store.update("untitled:complete", text, 1)
    labels = [item.label for item in completion.complete(analysis, len(text))]
    assert "returns" in labels
    shown = _hover_text(TEXT.index("returns") + 1)
    assert PROPERTY_DOCS["returns"] in shown
    analysis = store.update("untitled:typed", TEXT, 1)
    assert outline.document_symbols(analysis)

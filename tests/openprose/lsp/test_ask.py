"""`ask "question"` in the editor: coloured as a keyword (a variable named `ask` stays a
variable), offered where a statement or a value starts, its names navigable."""

from __future__ import annotations

from openprose.lsp import completion, highlight, hover
from openprose.lsp.documents import Documents

TEXT = 'let ask = "x"\nlet plan = ask "Which plan for {ask}?"\n  options: ["a", "b"]\n'


def _kinds_at(text: str) -> dict[int, str]:
    analysis = Documents().update("untitled:ask", text, 1)
    return {start: kind for start, _, kind, _ in highlight._pieces(analysis)}


def test_ask_before_a_question_is_a_keyword_and_a_variable_named_ask_is_not() -> None:
    kinds = _kinds_at(TEXT)
    assert kinds[TEXT.index("ask")] == "variable"  # `let ask = "x"`
    assert kinds[TEXT.index('ask "Which')] == "keyword"
    assert kinds[TEXT.index("options")] == "property"


def test_ask_is_offered_as_a_statement_and_as_a_value() -> None:
    store = Documents()
    for text in ("", "let x = "):
        analysis = store.update("untitled:ask", text, 1)
        labels = {item.label for item in completion.complete(analysis, len(text))}
        assert "ask" in labels, text


def test_hover_on_an_ask_property_says_what_it_does() -> None:
    store = Documents()
    analysis = store.update("untitled:ask", TEXT, 1)
    shown = hover.hover(store, analysis, TEXT.index("options") + 1)
    assert shown is not None and "**options** (ask property)" in str(shown.contents)

"""Completion of a typed result's fields: after `name.` (in code and inside a string's
`{name.`), where `name` is bound to a session that `returns:` a shape or to an output that
declares one — the names E181 checks; nested fields after `name.field.`."""

from __future__ import annotations

from lsprotocol import types as lsp

from openprose.lsp import completion
from openprose.lsp.documents import Documents

HEAD = """\
let review = session "Review"
  returns:
    title: string
    severity: "low" | "high"
    author:
      name: string
      email: optional string
    files: list of string
output score: {value: integer} = session "Score"
let loose = session "Untyped"
"""


def _complete(text: str) -> list[lsp.CompletionItem]:
    """Completion where ``@`` is in ``text`` (appended to the typed head)."""
    text = HEAD + text
    cursor = text.index("@")
    text = text.replace("@", "")
    store = Documents()
    analysis = store.update("untitled:typed.prose", text, 1)
    return completion.complete(analysis, cursor, store)


def _labels(text: str) -> list[str]:
    return [item.label for item in _complete(text)]


def test_fields_of_a_session_returning_a_shape() -> None:
    assert _labels("let t = review.@") == ["title", "severity", "author", "files"]
    assert _labels("let t = review.se@") == ["title", "severity", "author", "files"]


def test_fields_inside_a_string_interpolation() -> None:
    assert _labels('session "About {review.@"') == ["title", "severity", "author", "files"]
    assert _labels('session """\nAbout {review.@\n"""') == [
        "title",
        "severity",
        "author",
        "files",
    ]


def test_nested_fields_and_their_types() -> None:
    items = _complete("let t = review.author.@")
    assert [item.label for item in items] == ["name", "email"]
    assert items[0].detail == "string field of review.author"
    assert _labels('session "{review.author.@"') == ["name", "email"]
    severity = next(i for i in _complete("let t = review.@") if i.label == "severity")
    assert severity.detail == '"low" | "high" field of review'


def test_an_output_declaring_a_shape() -> None:
    assert _labels("let v = score.@") == ["value"]


def test_nothing_where_no_shape_is_known() -> None:
    assert _labels("let v = loose.@") == []  # no `returns:`
    assert _labels("let v = review.title.@") == []  # a string has no fields
    assert _labels("let v = review.files.@") == []  # nor a list
    assert _labels("let v = review.nope.@") == []  # not a field


def test_a_name_bound_twice_to_different_shapes_is_not_typed() -> None:
    assert _labels('review = session "Again"\nlet v = review.@') == []

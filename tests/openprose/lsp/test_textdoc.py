"""The document's text after each change is pygls's, character for character, and its line
table is the front end's."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st
from lsprotocol import types as lsp
from pygls.workspace import TextDocument
from pygls.workspace.position_codec import PositionCodec

from openprose.lsp.textdoc import LineTableDocument, ProseWorkspace
from openprose.source import SourceFile

# Plain characters, a character outside the BMP (2 UTF-16 units, 4 UTF-8), and line breaks:
# "\n", and others pygls also splits lines at (the slow path).
_TEXT = st.text(st.sampled_from("ab é😀\n\n\n\r\u2028"), max_size=40)
_PLAIN_TEXT = st.text(st.sampled_from("ab é😀\n\n\n"), max_size=40)
_POSITION = st.builds(lsp.Position, st.integers(0, 8), st.integers(0, 12))
_RANGE = st.builds(lsp.Range, _POSITION, _POSITION)
_CHANGE = st.one_of(
    st.builds(lsp.TextDocumentContentChangePartial, range=_RANGE, text=_PLAIN_TEXT),
    st.builds(lsp.TextDocumentContentChangePartial, range=_RANGE, text=_TEXT),
    st.builds(lsp.TextDocumentContentChangeWholeDocument, text=_TEXT),
)
_ENCODING = st.sampled_from(["utf-16", "utf-8", "utf-32"])


def _copy(change: lsp.TextDocumentContentChangeEvent) -> lsp.TextDocumentContentChangeEvent:
    """pygls's codec may clamp a position in place: each document gets its own change."""
    if isinstance(change, lsp.TextDocumentContentChangePartial):
        start, end = change.range.start, change.range.end
        return lsp.TextDocumentContentChangePartial(
            range=lsp.Range(
                lsp.Position(start.line, start.character), lsp.Position(end.line, end.character)
            ),
            text=change.text,
        )
    return lsp.TextDocumentContentChangeWholeDocument(text=change.text)


def _documents(text: str, encoding: str) -> tuple[TextDocument, LineTableDocument]:
    codec = PositionCodec(encoding)
    return (
        TextDocument("untitled:a", text, 1, position_codec=codec),
        LineTableDocument("untitled:a", text, 1, position_codec=codec),
    )


def _change(
    start: tuple[int, int], end: tuple[int, int], text: str
) -> lsp.TextDocumentContentChangePartial:
    return lsp.TextDocumentContentChangePartial(
        range=lsp.Range(lsp.Position(*start), lsp.Position(*end)), text=text
    )


@settings(max_examples=400, deadline=None)
@given(_PLAIN_TEXT | _TEXT, st.lists(st.tuples(_CHANGE, st.booleans()), max_size=8), _ENCODING)
@example("ab\ncd", [(_change((0, 2), (0, 1), "X"), True)], "utf-16")  # the end before the start
@example("", [(_change((3, 2), (0, 1), "X\n"), True)], "utf-16")  # an empty document
@example("é😀\n", [(_change((4, 0), (5, 1), "y"), True)], "utf-8")  # lines past the end
# Found: past the last line, the codec gives the line's length in units (2) as a column (1).
@example("😀", [(_change((1, 0), (1, 0), "\n"), True)], "utf-16")
def test_changes_give_pygls_text_and_the_front_ends_line_table(
    text: str, changes: list[tuple[lsp.TextDocumentContentChangeEvent, bool]], encoding: str
) -> None:
    """After each change; the line table read after some (an analysis starting) and left
    with its pending moves after the others (keystrokes in a burst)."""
    theirs, ours = _documents(text, encoding)
    for change, analysed in changes:
        theirs.apply_change(_copy(change))
        ours.apply_change(_copy(change))
        assert ours.source == theirs.source
        if analysed:
            assert ours.line_starts == SourceFile.from_text(ours.source).line_starts
    assert ours.line_starts == SourceFile.from_text(ours.source).line_starts


def test_a_keystroke_in_a_long_program_takes_the_splice() -> None:
    """The fast path is taken (pygls's line split is never called) and gives pygls's text."""
    text = "".join(f'let x{i} = session "Line {i} é"\n' for i in range(2000))
    theirs, ours = _documents(text, "utf-16")
    ours.line_starts  # noqa: B018  # the table, as an analysis asks for it

    def refuse(*_: object) -> None:
        raise AssertionError("pygls's whole-text rewrite was used")

    ours._apply_incremental_change = refuse  # type: ignore[method-assign]
    for line in (0, 1000, 1999):
        at = lsp.Position(line, 25)
        change = lsp.TextDocumentContentChangePartial(range=lsp.Range(at, at), text="y\n")
        theirs.apply_change(_copy(change))
        ours.apply_change(_copy(change))
    assert ours.source == theirs.source
    assert ours.line_starts == SourceFile.from_text(ours.source).line_starts


def test_the_workspace_makes_line_table_documents() -> None:
    workspace = ProseWorkspace(None)
    workspace.put_text_document(
        lsp.TextDocumentItem(uri="untitled:b", language_id="prose", version=1, text="x\n")
    )
    assert isinstance(workspace.get_text_document("untitled:b"), LineTableDocument)

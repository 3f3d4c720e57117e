"""Completion, formatting, the outline and semantic tokens over stdio."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp

from openprose.formatter import format_source
from openprose.lsp.highlight import TOKEN_TYPES
from openprose.parser import parse_text

from .conftest import Editor, position

pytestmark = pytest.mark.asyncio(loop_scope="module")

PROGRAM = """\
use "@anthropic/web-search" as search
input topic: "The subject"

agent researcher:
  model: sonnet
  skills: ["search"]

block review(text):
  session "Review {text}"

let notes = session: researcher
  prompt: "Study {topic}"
"""


async def _labels(editor: Editor, uri: str, text: str) -> list[str]:
    """Open ``text`` (the cursor is where ``|`` is) and complete there."""
    cursor = text.index("|")
    text = text.replace("|", "")
    if uri in editor.versions:
        editor.replace(uri, text)
    else:
        editor.open(uri, text)
    line = text.count("\n", 0, cursor)
    column = cursor - (text.rfind("\n", 0, cursor) + 1)
    found = await editor.client.text_document_completion_async(
        lsp.CompletionParams(lsp.TextDocumentIdentifier(uri), lsp.Position(line, column))
    )
    assert isinstance(found, lsp.CompletionList)
    return [item.label for item in found.items]


@pytest.mark.parametrize(
    ("typed", "expected", "absent"),
    [
        (
            "|",
            {"agent", "session", "let", "parallel", "notes", "topic", "search"},
            {"model", "elif", "else", "catch", "finally", "option"},
        ),
        ('if **ok**:\n  session "a"\n|', {"elif", "else", "session"}, {"catch"}),
        ('try:\n  session "a"\n|', {"catch", "finally", "let"}, {"elif"}),
        ('try:\n  session "a"\ncatch:\n  session "b"\n|', {"finally"}, {"catch"}),
        ('choice **best**:\n  option "A":\n    session "a"\n  |', {"option"}, {"let", "notes"}),
        ("agent a:\n  |", {"model", "prompt", "persist", "skills", "permissions"}, {"let"}),
        ('session "x"\n  |', {"model", "prompt", "context", "retry", "backoff"}, {"persist"}),
        (
            "agent a:\n  permissions:\n    |",
            {"read", "write", "execute", "bash", "network", "deny", "mcp"},
            set(),
        ),
        ("agent a:\n  model: |", {"sonnet", "opus", "haiku"}, {"notes"}),
        ("agent a:\n  persist: |", {"true", "project", "user"}, set()),
        ('session "x"\n  backoff: |', {"none", "linear", "exponential"}, set()),
        ("agent a:\n  permissions:\n    bash: |", {"allow", "deny", "prompt"}, set()),
        ("session: |", {"researcher"}, {"review", "notes"}),
        ("let x = resume: r|", {"researcher"}, set()),
        ("do |", {"review"}, {"researcher"}),
        ('parallel (|):\n  session "a"', {'"all"', '"first"', '"any"', "on-fail", "count"}, set()),
        (
            'parallel ("any", on-fail: |):\n  session "a"',
            {'"fail-fast"', '"continue"', '"ignore"'},
            set(),
        ),
        ('loop until **done** (|):\n  session "a"', {"max"}, {'"all"'}),
        ('session "about {|}"', {"notes", "topic"}, {"researcher"}),
        ('session "plain |"', set(), {"notes", "session"}),
        ('session "x"\n  context: [|]', {"notes", "topic"}, {"researcher"}),
        ("let y = |", {"session", "do", "parallel", "notes", "search"}, {"agent"}),
    ],
)
async def test_completion_offers_what_fits_the_cursor(
    editor: Editor, typed: str, expected: set[str], absent: set[str]
) -> None:
    labels = set(await _labels(editor, "untitled:completion", PROGRAM + typed))
    assert expected <= labels
    assert not absent & labels


async def test_completion_in_a_block_offers_its_parameter(editor: Editor) -> None:
    text = PROGRAM.replace('session "Review {text}"', 'session "Review {|}"')
    assert "text" in await _labels(editor, "untitled:completion-param", text)
    outside = await _labels(editor, "untitled:completion-param", PROGRAM + 'session "{|}"')
    assert "text" not in outside


def _apply(text: str, edits: list[lsp.TextEdit]) -> str:
    lines = text.split("\n")
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)

    def offset(p: lsp.Position) -> int:
        return len(text) if p.line >= len(starts) else starts[p.line] + p.character

    for edit in sorted(edits, key=lambda e: offset(e.range.start), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]
    return text


async def _format(editor: Editor, uri: str) -> list[lsp.TextEdit] | None:
    return await editor.client.text_document_formatting_async(
        lsp.DocumentFormattingParams(
            lsp.TextDocumentIdentifier(uri), lsp.FormattingOptions(tab_size=2, insert_spaces=True)
        )
    )


@pytest.mark.parametrize("trailing_newline", [True, False])
async def test_formatting_is_prose_fmt(editor: Editor, trailing_newline: bool) -> None:
    messy = (
        "# header\n\n\n\nagent   writer :\n    model :   opus   # best\n"
        '    prompt: "p"\nlet   x=session   "a"\n\n\n\nsession:writer\n'
        "  context:[ x ]"
    ) + ("\n" if trailing_newline else "")
    uri = f"untitled:fmt-{trailing_newline}"
    editor.open(uri, messy)
    edits = await _format(editor, uri)
    assert edits
    formatted = _apply(messy, edits)
    assert formatted == format_source(parse_text(messy))
    assert formatted != messy
    # Lines that were already canonical are not rewritten.
    assert all(edit.range.start.line > 0 for edit in edits)
    editor.replace(uri, formatted)
    again = await _format(editor, uri)
    assert again is not None and len(again) == 0  # formatted already: no edits


async def test_formatting_leaves_a_broken_document_alone(editor: Editor) -> None:
    uri = "untitled:fmt-broken"
    editor.open(uri, "agent   a:\n  model: opus\nlet = \n")
    assert await _format(editor, uri) is None


async def test_document_symbols_outline_the_program(editor: Editor) -> None:
    uri = "untitled:symbols"
    editor.open(uri, PROGRAM)
    found = await editor.client.text_document_document_symbol_async(
        lsp.DocumentSymbolParams(lsp.TextDocumentIdentifier(uri))
    )
    assert found is not None
    outline = [(s.name, s.kind) for s in found if isinstance(s, lsp.DocumentSymbol)]
    assert outline == [
        ("search", lsp.SymbolKind.Module),
        ("topic", lsp.SymbolKind.Field),
        ("researcher", lsp.SymbolKind.Class),
        ("review", lsp.SymbolKind.Function),
        ("notes", lsp.SymbolKind.Variable),
    ]
    agent = found[2]
    assert isinstance(agent, lsp.DocumentSymbol)
    assert [c.name for c in agent.children or []] == ["model", "skills"]
    assert agent.selection_range.start == position(PROGRAM, "researcher:")
    assert agent.range.end.line == 5


def _decode(data: list[int], text: str) -> list[tuple[int, int, str, str]]:
    """(line, UTF-16 column, token text, type) for each encoded token."""
    lines = text.split("\n")
    found = []
    line = column = 0
    for i in range(0, len(data), 5):
        delta_line, delta_start, length, kind, _ = data[i : i + 5]
        line += delta_line
        column = column + delta_start if delta_line == 0 else delta_start
        units = lines[line].encode("utf-16-le")
        shown = units[column * 2 : (column + length) * 2].decode("utf-16-le")
        found.append((line, column, shown, TOKEN_TYPES[kind]))
    return found


async def test_semantic_tokens_colour_every_construct(editor: Editor) -> None:
    text = (
        PROGRAM
        + 'let 😀x = 1\n# a comment\nlet wide = session "😀 {notes}"\n'
        + 'if **the notes are good**:\n  do review(notes) -> session "b"\n'
        + 'let long = session """\nline one {topic}\nline two\n"""\n'
    )
    uri = "untitled:tokens"
    editor.open(uri, text)
    result = await editor.client.text_document_semantic_tokens_full_async(
        lsp.SemanticTokensParams(lsp.TextDocumentIdentifier(uri))
    )
    assert result is not None
    tokens = _decode(result.data, text)
    kinds = {(shown, kind) for _, _, shown, kind in tokens}
    assert {
        ("use", "keyword"),
        ("search", "namespace"),
        ("agent", "keyword"),
        ("researcher", "class"),
        ("model", "property"),
        ("sonnet", "enumMember"),
        ("review", "function"),
        ("text", "parameter"),
        ("notes", "variable"),
        ("topic", "variable"),
        ("# a comment", "comment"),
        ("**the notes are good**", "macro"),
        ("->", "operator"),
        ('"😀 ', "string"),
        ("line two", "string"),
    } <= kinds
    # Tokens after a character outside the BMP are placed in UTF-16 units.
    line = text.split("\n").index('let wide = session "😀 {notes}"')
    assert (line, 24, "notes", "variable") in tokens  # the emoji counts twice
    # Every token lies on one line and tokens do not overlap.
    ends: dict[int, int] = {}
    for line, column, shown, _ in tokens:
        assert "\n" not in shown and shown
        assert column >= ends.get(line, 0)
        ends[line] = column + len(shown.encode("utf-16-le")) // 2

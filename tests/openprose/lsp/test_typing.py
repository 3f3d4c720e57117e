"""Every prefix of every example program, typed one character at a time into the real server:
each prefix is analysed (a request per keystroke forces it) and no request fails."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from openprose import check_source
from openprose.source import SourceFile

from .conftest import EXAMPLES, Editor

pytestmark = pytest.mark.asyncio(loop_scope="module")

PROGRAMS = sorted(EXAMPLES.glob("*.prose"))


def _end(text: str) -> lsp.Position:
    line = text.count("\n")
    last = text[text.rfind("\n") + 1 :]
    return lsp.Position(line, len(last.encode("utf-16-le")) // 2)


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.name)
async def test_typing_an_example_character_by_character(editor: Editor, path: Path) -> None:
    program = path.read_text(encoding="utf-8")
    uri = f"untitled:typing-{path.stem}"
    document = lsp.TextDocumentIdentifier(uri)
    client = editor.client
    editor.open(uri, "")
    typed = ""
    pending: list[asyncio.Future[object]] = []
    for char in program:
        at = _end(typed)
        editor.change(
            uri, [lsp.TextDocumentContentChangePartial(range=lsp.Range(at, at), text=char)]
        )
        typed += char
        cursor = _end(typed)
        behind = lsp.Position(cursor.line, max(0, cursor.character - 1))
        pending += [
            client.text_document_semantic_tokens_full_async(lsp.SemanticTokensParams(document)),
            client.text_document_completion_async(lsp.CompletionParams(document, cursor)),
            client.text_document_hover_async(lsp.HoverParams(document, behind)),
        ]
    pending += [
        client.text_document_document_symbol_async(lsp.DocumentSymbolParams(document)),
        client.text_document_formatting_async(
            lsp.DocumentFormattingParams(document, lsp.FormattingOptions(2, True))
        ),
    ]
    results = await asyncio.wait_for(asyncio.gather(*pending), 600)  # an error would raise
    assert len(results) == 3 * len(program) + 2
    assert results[-1] is not None and len(results[-1]) == 0  # examples are formatted
    # Once typing stops, the published diagnostics are those of the whole program.
    found = await editor.diagnostics(uri)
    expected = check_source(SourceFile.from_text(program, f"<{uri}>"))
    assert [(d.code, d.range.start.line + 1) for d in found] == [(d.code, d.line) for d in expected]
    editor.close(uri)

"""Folding ranges over stdio: blocks, multi-line sessions and strings, comment runs."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp

from .conftest import Editor

pytestmark = pytest.mark.asyncio(loop_scope="module")

PROGRAM = """\
# A program
# with a header

agent writer:
  model: opus
  prompt: \"\"\"
Write well
\"\"\"

if **the sky is clear**:
  session "Go out"
    context: []
else:
  session "Stay in"
session "One line"
"""


async def test_folding_ranges_cover_what_spans_lines(editor: Editor) -> None:
    uri = "untitled:folding"
    editor.open(uri, PROGRAM)
    found = await editor.client.text_document_folding_range_async(
        lsp.FoldingRangeParams(lsp.TextDocumentIdentifier(uri))
    )
    assert found is not None
    folds = {(r.start_line, r.end_line, r.kind) for r in found}
    assert folds == {
        (0, 1, lsp.FoldingRangeKind.Comment),  # the header comment
        (3, 7, None),  # agent writer: down to the closing \"\"\"
        (5, 7, None),  # the multi-line prompt
        (9, 13, None),  # if ... else, the whole statement
        (10, 11, None),  # the session with a property
        (12, 13, None),  # else:
    }
    editor.close(uri)

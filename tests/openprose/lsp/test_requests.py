"""Pull diagnostics, semantic tokens by range and by delta, range formatting, signature help
and inlay hints over stdio: what the server advertises, it answers."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types as lsp

from .conftest import Editor

pytestmark = pytest.mark.asyncio(loop_scope="module")

PROGRAM = """\
block review(text, tone):
  session "Review {text} in a {tone} tone"

let draft = session "Draft"
let typo = session "About {drafts}"
do review(draft, "calm")
"""


async def _open(editor: Editor, uri: str, text: str) -> lsp.TextDocumentIdentifier:
    editor.open(uri, text)
    await editor.diagnostics(uri)
    return lsp.TextDocumentIdentifier(uri)


async def test_pull_diagnostics_match_the_published_ones(editor: Editor) -> None:
    uri = "untitled:pull"
    document = await _open(editor, uri, PROGRAM)
    published = await editor.diagnostics(uri)
    report = await editor.client.text_document_diagnostic_async(
        lsp.DocumentDiagnosticParams(document)
    )
    assert isinstance(report, lsp.RelatedFullDocumentDiagnosticReport)
    assert [(d.code, d.range) for d in report.items] == [(d.code, d.range) for d in published]
    assert any(d.code == "E007" or "drafts" in d.message for d in report.items)
    again = await editor.client.text_document_diagnostic_async(
        lsp.DocumentDiagnosticParams(document, previous_result_id=report.result_id)
    )
    assert isinstance(again, lsp.RelatedUnchangedDocumentDiagnosticReport)
    editor.replace(uri, PROGRAM.replace("{drafts}", "{draft}"))
    fixed = await editor.client.text_document_diagnostic_async(
        lsp.DocumentDiagnosticParams(document, previous_result_id=report.result_id)
    )
    assert isinstance(fixed, lsp.RelatedFullDocumentDiagnosticReport)
    assert not any("drafts" in d.message for d in fixed.items)


def _apply(data: list[int], edits: list[lsp.SemanticTokensEdit]) -> list[int]:
    for edit in sorted(edits, key=lambda e: e.start, reverse=True):
        data[edit.start : edit.start + edit.delete_count] = list(edit.data or [])
    return data


async def test_token_deltas_rebuild_the_full_tokens(editor: Editor) -> None:
    uri = "untitled:delta"
    document = await _open(editor, uri, PROGRAM)
    client = editor.client
    full = await client.text_document_semantic_tokens_full_async(lsp.SemanticTokensParams(document))
    assert full is not None and full.result_id
    held, result_id = list(full.data), full.result_id
    for text in (
        PROGRAM.replace('"Draft"', '"Draft it"'),
        PROGRAM.replace('"Draft"', '"Draft {typo} it"'),
        "let x = 1\n" + PROGRAM,
    ):
        editor.replace(uri, text)
        delta = await client.text_document_semantic_tokens_full_delta_async(
            lsp.SemanticTokensDeltaParams(document, previous_result_id=result_id)
        )
        assert isinstance(delta, lsp.SemanticTokensDelta)
        assert sum(len(e.data or []) for e in delta.edits) < len(held)  # not all of them
        held = _apply(held, list(delta.edits))
        expected = await client.text_document_semantic_tokens_full_async(
            lsp.SemanticTokensParams(document)
        )
        assert expected is not None and held == list(expected.data)
        result_id = expected.result_id or ""
    stale = await client.text_document_semantic_tokens_full_delta_async(
        lsp.SemanticTokensDeltaParams(document, previous_result_id="unknown")
    )
    assert isinstance(stale, lsp.SemanticTokens)  # not what the editor holds: all of them


async def test_range_tokens_are_the_full_tokens_of_those_lines(editor: Editor) -> None:
    uri = "untitled:range-tokens"
    document = await _open(editor, uri, PROGRAM)
    client = editor.client
    full = await client.text_document_semantic_tokens_full_async(lsp.SemanticTokensParams(document))
    part = await client.text_document_semantic_tokens_range_async(
        lsp.SemanticTokensRangeParams(document, lsp.Range(lsp.Position(3, 0), lsp.Position(5, 0)))
    )
    assert full is not None and part is not None
    assert _lines_of(list(part.data)) == {3, 4}
    assert _absolute(list(part.data)) == [t for t in _absolute(list(full.data)) if t[0] in (3, 4)]


def _absolute(data: list[int]) -> list[tuple[int, ...]]:
    found, line, start = [], 0, 0
    for i in range(0, len(data), 5):
        delta_line, delta_start, *rest = data[i : i + 5]
        line += delta_line
        start = start + delta_start if delta_line == 0 else delta_start
        found.append((line, start, *rest))
    return found


def _lines_of(data: list[int]) -> set[int]:
    return {t[0] for t in _absolute(data)}


async def test_range_formatting_touches_only_the_range(editor: Editor) -> None:
    uri = "untitled:range-format"
    text = 'let a   =   session "a"\nlet b   =   session "b"\nlet c   =   session "c"\n'
    document = await _open(editor, uri, text)
    edits = await editor.client.text_document_range_formatting_async(
        lsp.DocumentRangeFormattingParams(
            document,
            lsp.Range(lsp.Position(1, 0), lsp.Position(1, 5)),
            lsp.FormattingOptions(tab_size=2, insert_spaces=True),
        )
    )
    assert edits is not None and edits
    lines = text.split("\n")
    for edit in edits:
        assert edit.range.start.line == 1 and edit.range.end == lsp.Position(2, 0)
        lines[1] = edit.new_text.rstrip("\n")
    assert lines[0] == 'let a   =   session "a"'
    assert lines[1] == 'let b = session "b"'
    assert lines[2] == 'let c   =   session "c"'


async def test_signature_help_and_inlay_hints_answer(editor: Editor, workspace: Path) -> None:
    (workspace / "prose.toml").write_text('provider = "openai"\n', encoding="utf-8")
    uri = "untitled:signature"
    text = "agent a:\n  model: haiku\n" + PROGRAM + 'do review("x", \n'
    document = await _open(editor, uri, text)
    last = text.count("\n") - 1
    found = await editor.client.text_document_signature_help_async(
        lsp.SignatureHelpParams(document, lsp.Position(last, len('do review("x", ')))
    )
    assert found is not None
    assert found.signatures[0].label == "do review(text, tone)"
    assert found.active_parameter == 1
    hints = await editor.client.text_document_inlay_hint_async(
        lsp.InlayHintParams(document, lsp.Range(lsp.Position(0, 0), lsp.Position(last + 1, 0)))
    )
    assert hints is not None
    assert [(h.position, h.label) for h in hints] == [
        (lsp.Position(1, len("  model: haiku")), "→ gpt-4.1-nano (openai)")
    ]

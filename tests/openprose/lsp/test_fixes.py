"""Quick fixes over stdio: the front end's fix on a diagnostic becomes a code action whose
edit, applied, gives the text `prose check --fix` would write."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp

from .conftest import Editor

pytestmark = pytest.mark.asyncio(loop_scope="module")


def _apply(text: str, edits: list[lsp.TextEdit]) -> str:
    lines = text.split("\n")
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character))[::-1]:
        start = starts[edit.range.start.line] + edit.range.start.character
        end = starts[edit.range.end.line] + edit.range.end.character
        text = text[:start] + edit.new_text + text[end:]
    return text


async def _actions(editor: Editor, uri: str, text: str) -> tuple[list[lsp.Diagnostic], list]:
    editor.open(uri, text)
    found = await editor.diagnostics(uri)
    whole = lsp.Range(lsp.Position(0, 0), lsp.Position(text.count("\n") + 1, 0))
    actions = await editor.client.text_document_code_action_async(
        lsp.CodeActionParams(
            text_document=lsp.TextDocumentIdentifier(uri),
            range=whole,
            context=lsp.CodeActionContext(diagnostics=found),
        )
    )
    return found, list(actions or [])


@pytest.mark.parametrize(
    ("text", "code", "title", "fixed", "preferred"),
    [
        (
            'sesion "x"\n',
            "E004",
            "replace `sesion` with `session`",
            'session "x"\n',
            False,  # a guess: offered, not preferred
        ),
        (
            'let x = session """hi\n"""\n',
            "E106",
            'start the text on the line after """',
            'let x = session """\nhi\n"""\n',
            True,
        ),
        (
            'session "a {missing}"\n',
            "E141",
            "escape the brace: \\{missing} is literal text",
            'session "a \\{missing}"\n',
            True,
        ),
    ],
)
async def test_a_diagnostic_with_a_fix_offers_it(
    editor: Editor, text: str, code: str, title: str, fixed: str, preferred: bool
) -> None:
    found, actions = await _actions(editor, f"untitled:fix-{code}", text)
    assert [d.code for d in found] == [code]
    (action,) = actions
    assert isinstance(action, lsp.CodeAction)
    assert (action.title, action.kind, action.is_preferred) == (
        title,
        lsp.CodeActionKind.QuickFix,
        preferred,
    )
    assert action.diagnostics is not None and action.diagnostics[0].code == code
    assert action.edit is not None and action.edit.changes is not None
    assert _apply(text, list(action.edit.changes[f"untitled:fix-{code}"])) == fixed


async def test_diagnostics_without_a_fix_offer_nothing(editor: Editor) -> None:
    found, actions = await _actions(editor, "untitled:nofix", "session: nobody\n")
    assert [d.code for d in found] == ["E007"]
    assert actions == []


async def test_data_a_client_made_up_is_ignored(editor: Editor) -> None:
    uri = "untitled:forged"
    editor.open(uri, 'session "x"\n')
    await editor.diagnostics(uri)
    forged = lsp.Diagnostic(
        range=lsp.Range(lsp.Position(0, 0), lsp.Position(0, 1)),
        message="m",
        data={"fix": {"title": "t", "safe": True, "edits": [{"range": [0, -1], "newText": 3}]}},
    )
    actions = await editor.client.text_document_code_action_async(
        lsp.CodeActionParams(
            text_document=lsp.TextDocumentIdentifier(uri),
            range=forged.range,
            context=lsp.CodeActionContext(diagnostics=[forged]),
        )
    )
    assert not actions

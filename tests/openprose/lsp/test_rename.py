"""Rename and prepareRename over stdio: every occurrence, strings included; what cannot be
renamed is refused with a reason."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from .conftest import Editor, position

pytestmark = pytest.mark.asyncio(loop_scope="module")

PROGRAM = """\
agent writer:
  model: opus

let draft = session: writer
  prompt: "Write about \\{draft} and {draft}"
for item in ["a", "b"]:
  session "Look at {item} with {draft}"
    context: draft
output summary = session "Sum up"
  context: [draft]
"""


def _apply(text: str, edits: list[lsp.TextEdit]) -> str:
    lines = text.split("\n")
    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character))[::-1]:
        start, end = edit.range.start, edit.range.end
        assert start.line == end.line
        line = lines[start.line]
        lines[start.line] = line[: start.character] + edit.new_text + line[end.character :]
    return "\n".join(lines)


async def _rename(editor: Editor, uri: str, at: lsp.Position, name: str) -> lsp.WorkspaceEdit:
    found = await editor.client.text_document_rename_async(
        lsp.RenameParams(lsp.TextDocumentIdentifier(uri), at, name)
    )
    assert found is not None
    return found


async def test_rename_a_variable_everywhere_it_is_read(editor: Editor) -> None:
    uri = "untitled:rename-variable"
    editor.open(uri, PROGRAM)
    edit = await _rename(editor, uri, position(PROGRAM, "draft", occurrence=3), "outline")
    assert edit.changes is not None and list(edit.changes) == [uri]
    renamed = _apply(PROGRAM, edit.changes[uri])
    assert renamed == PROGRAM.replace("{draft}", "{outline}").replace(
        "\\{outline}", "\\{draft}"
    ).replace("let draft", "let outline").replace("context: draft", "context: outline").replace(
        "[draft]", "[outline]"
    )
    editor.close(uri)


async def test_rename_an_agent_from_its_use(editor: Editor) -> None:
    uri = "untitled:rename-agent"
    editor.open(uri, PROGRAM)
    edit = await _rename(editor, uri, position(PROGRAM, "writer", occurrence=1), "author")
    assert edit.changes is not None
    assert _apply(PROGRAM, edit.changes[uri]) == PROGRAM.replace("writer", "author")
    editor.close(uri)


async def test_prepare_rename_gives_the_name_or_nothing(editor: Editor) -> None:
    uri = "untitled:prepare-rename"
    editor.open(uri, PROGRAM)
    document = lsp.TextDocumentIdentifier(uri)
    at = position(PROGRAM, "item", delta=2)
    found = await editor.client.text_document_prepare_rename_async(
        lsp.PrepareRenameParams(document, at)
    )
    assert found == lsp.Range(position(PROGRAM, "item"), position(PROGRAM, "item", delta=4))
    for spot in (position(PROGRAM, "session"), position(PROGRAM, "opus"), position(PROGRAM, "Sum")):
        nothing = await editor.client.text_document_prepare_rename_async(
            lsp.PrepareRenameParams(document, spot)
        )
        assert nothing is None
    editor.close(uri)


@pytest.mark.parametrize(
    ("name", "why"),
    [("session", "is a keyword"), ("two words", "is not a name"), ("-x", "not a name")],
)
async def test_rename_refuses_what_is_no_name(editor: Editor, name: str, why: str) -> None:
    uri = f"untitled:rename-refused-{len(name)}"
    editor.open(uri, PROGRAM)
    with pytest.raises(JsonRpcException, match=why):
        await _rename(editor, uri, position(PROGRAM, "draft"), name)
    editor.close(uri)

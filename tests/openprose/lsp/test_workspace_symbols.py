"""Workspace symbols over stdio: names of open documents and of the workspace's files."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types as lsp

from .conftest import Editor

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_workspace_symbols_search_open_documents_and_files(
    editor: Editor, workspace: Path
) -> None:
    on_disk = workspace / "helpers.prose"
    on_disk.write_text('agent reviewer:\n  model: opus\nlet notes = session "Take notes"\n')
    uri = "untitled:symbols"
    editor.open(uri, 'agent writer:\n  model: opus\ninput topic: "What"\n')
    await editor.diagnostics(uri)

    async def names(query: str) -> set[tuple[str, str, lsp.SymbolKind]]:
        found = await editor.client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query=query))
        assert found is not None
        return {(s.name, s.location.uri, s.kind) for s in found}  # type: ignore[union-attr]

    assert await names("wrt") == {("writer", uri, lsp.SymbolKind.Class)}
    assert ("reviewer", on_disk.as_uri(), lsp.SymbolKind.Class) in await names("REV")
    everything = await names("")
    assert {
        ("topic", uri, lsp.SymbolKind.Field),
        ("notes", on_disk.as_uri(), lsp.SymbolKind.Variable),
    } <= everything
    assert await names("zzz") == set()
    editor.close(uri)

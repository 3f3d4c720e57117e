"""Drives the real `prose lsp` over stdio with pytest-lsp's client: one server per module."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

pytest.importorskip("pygls", reason="the [lsp] extra (pygls) is not installed")

from lsprotocol import types as lsp
from pygls.protocol import default_converter
from pytest_lsp import LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

SERVER = [sys.executable, "-m", "openprose.cli", "lsp"]
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
WAIT_S = 30.0


class Editor:
    """A client that edits documents and waits for the diagnostics of a given version."""

    def __init__(self, client: LanguageClient) -> None:
        self.client = client
        self.published: dict[str, list[lsp.PublishDiagnosticsParams]] = {}
        self.arrived = asyncio.Event()
        self.versions: dict[str, int] = {}

    def record(self, params: lsp.PublishDiagnosticsParams) -> None:
        self.published.setdefault(params.uri, []).append(params)
        self.arrived.set()

    async def diagnostics(self, uri: str, version: int | None = None) -> list[lsp.Diagnostic]:
        """The diagnostics published for ``uri`` at ``version`` (default: the latest sent)."""
        wanted = self.versions.get(uri) if version is None else version

        async def wait() -> list[lsp.Diagnostic]:
            while True:
                for params in reversed(self.published.get(uri, [])):
                    if params.version == wanted:
                        return list(params.diagnostics)
                self.arrived.clear()
                await self.arrived.wait()

        return await asyncio.wait_for(wait(), WAIT_S)

    def open(self, uri: str, text: str) -> None:
        self.versions[uri] = 1
        self.client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                lsp.TextDocumentItem(uri=uri, language_id="prose", version=1, text=text)
            )
        )

    def replace(self, uri: str, text: str) -> None:
        """Send the whole new text as one change."""
        self.change(uri, [lsp.TextDocumentContentChangeWholeDocument(text=text)])

    def change(self, uri: str, changes: list[Any]) -> None:
        self.versions[uri] += 1
        self.client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                lsp.VersionedTextDocumentIdentifier(version=self.versions[uri], uri=uri), changes
            )
        )

    def close(self, uri: str) -> None:
        self.client.text_document_did_close(
            lsp.DidCloseTextDocumentParams(lsp.TextDocumentIdentifier(uri))
        )


async def start_editor(root: Path | None = None) -> tuple[Editor, LanguageClient]:
    client = LanguageClient(converter_factory=default_converter)
    editor = Editor(client)
    features = dict(DEFAULT_CLIENT_FEATURES)

    def record(params: lsp.PublishDiagnosticsParams) -> None:  # pygls passes params only
        editor.record(params)

    features[lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = record
    register_lsp_features(client, features)
    await client.start_io(*SERVER)
    await client.initialize_session(
        lsp.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            root_uri=root.as_uri() if root is not None else None,
        )
    )
    return editor, client


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("workspace")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def editor(workspace: Path) -> AsyncIterator[Editor]:
    editor, client = await start_editor(workspace)
    yield editor
    await client.shutdown_session()


def position(text: str, needle: str, delta: int = 0, occurrence: int = 0) -> lsp.Position:
    """The LSP position of the ``occurrence``-th ``needle`` in ``text``, plus ``delta``
    characters (ASCII text: characters are UTF-16 units)."""
    at = -1
    for _ in range(occurrence + 1):
        at = text.index(needle, at + 1)
    at += delta
    line = text.count("\n", 0, at)
    return lsp.Position(line, at - (text.rfind("\n", 0, at) + 1))

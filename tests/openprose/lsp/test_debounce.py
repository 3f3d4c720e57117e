"""The server's debounce, in process: an edit after a pause is analysed at once, the edits of
a burst after it wait for quiet, and a stale analysis is never published."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from lsprotocol import types as lsp

from openprose.lsp import server as lsp_server
from openprose.lsp.background import Job
from openprose.lsp.documents import Analysis, path_of
from openprose.lsp.server import ProseServer, create_server
from openprose.lsp.textdoc import ProseWorkspace

pytestmark = pytest.mark.asyncio

URI = "untitled:debounce.prose"
TEXT = "".join(f'let note{i} = session "step {i}"\n' for i in range(3000))


def _server() -> tuple[ProseServer, list[int | None]]:
    server = create_server()
    server.protocol._workspace = ProseWorkspace(None)
    published: list[int | None] = []
    server.send_diagnostics = lambda uri, analysis: published.append(analysis.version)  # type: ignore[method-assign]
    server.workspace.put_text_document(lsp.TextDocumentItem(URI, "prose", 1, TEXT))
    return server, published


def _type(server: ProseServer, version: int, char: str) -> None:
    """A keystroke at the start of the document, as a didChange handler applies it."""
    at = lsp.Position(0, 0)
    server.workspace.update_text_document(
        lsp.VersionedTextDocumentIdentifier(version=version, uri=URI),
        lsp.TextDocumentContentChangePartial(range=lsp.Range(at, at), text=char),
    )
    server.schedule(URI)


async def _settled(server: ProseServer) -> None:
    """Until no analysis is pending nor running."""
    for _ in range(600):
        if not server.pending and not server.jobs:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("analyses still running after 30 s")


async def test_an_edit_after_a_pause_is_analysed_at_once() -> None:
    server, published = _server()
    server.schedule(URI)  # the open: nothing before it, so a pause
    assert URI in server.jobs and URI not in server.pending  # started, no timer
    await _settled(server)
    assert published == [1]


async def test_a_burst_starts_two_analyses_and_publishes_its_last_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lsp_server, "PAUSE_S", 0.15)
    # The leading analysis (version 2) is held until the test ends, so that it is still
    # running when the next keystroke comes however fast the machine analyses (an analysis
    # reusing the previous version's takes a few ms); waiting in short steps leaves the
    # bytecode boundaries where `Job.cancel` raises inside the worker thread.
    release = threading.Event()
    analysis = lsp_server.Analysis

    def held(uri: str, path: Any, text: str, number: int, *args: Any, **kwargs: Any) -> Analysis:
        deadline = time.monotonic() + 30
        while number == 2 and not release.wait(0.005) and time.monotonic() < deadline:
            pass
        return analysis(uri, path, text, number, *args, **kwargs)

    monkeypatch.setattr(lsp_server, "Analysis", held)
    server, published = _server()
    server.schedule(URI)
    await _settled(server)
    await asyncio.sleep(0.2)  # a pause
    first = server.stats["started"]
    for version in range(2, 12):  # ten keystrokes 20 ms apart
        _type(server, version, "#")
        if version == 2:
            leading = server.jobs[URI]  # after the pause: started at once
        else:
            assert URI not in server.jobs and URI in server.pending  # waiting for quiet
        await asyncio.sleep(0.02)
    cancelled = leading.future.result(timeout=30) is None  # by the next keystroke
    release.set()
    assert cancelled
    await _settled(server)
    assert server.stats["started"] - first == 2
    assert published == [1, 11]


async def test_a_stale_analysis_is_never_published(monkeypatch: pytest.MonkeyPatch) -> None:
    server, published = _server()
    # An analysis of version 1 that ran to its end (too late to be cancelled)...
    old = Job(lambda: Analysis(URI, path_of(URI), TEXT, 1, server.store), 1)
    assert old.future.result(timeout=30) is not None
    # ...while version 2 arrived and was analysed and published first.
    monkeypatch.setattr(lsp_server, "PAUSE_S", 0.0)
    _type(server, 2, "#")
    await _settled(server)
    assert published == [2]
    server.finished(URI, old)  # the old one is handed back last
    assert published == [2]
    assert server.store.open[URI].version == 2

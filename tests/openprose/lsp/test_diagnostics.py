"""Diagnostics over stdio: what `prose check` reports, on open, on change, debounced, at scale."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from openprose import check_source
from openprose.scanner import MAX_DIAGNOSTICS
from openprose.source import SourceFile

from .conftest import Editor

pytestmark = pytest.mark.asyncio(loop_scope="module")

BROKEN = """\
agent writer:
  model: gpt5
  prompt: "Write"

session: writter
let x = session "a"
let x = session "b"
loop:
  session "again {missing}"
session "😀 wide" -> session: nobody
"""


def _triples(found: list[lsp.Diagnostic]) -> list[tuple[object, ...]]:
    return [
        (
            d.code,
            d.severity,
            d.message,
            d.range.start.line,
            d.range.start.character,
            d.range.end.line,
            d.range.end.character,
        )
        for d in found
    ]


async def test_open_publishes_what_prose_check_reports(editor: Editor, workspace: Path) -> None:
    file = workspace / "broken.prose"
    file.write_text(BROKEN, encoding="utf-8")
    editor.open(file.as_uri(), BROKEN)
    published = await editor.diagnostics(file.as_uri())

    cli = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "openprose.cli", "check", "--format", "json", str(file)],
        capture_output=True,
        text=True,
        check=False,
    )
    expected = json.loads(cli.stdout)
    assert len(expected) >= 5  # E008, E007 x2, E019, E141, W145...
    severity = {
        "error": lsp.DiagnosticSeverity.Error,
        "warning": lsp.DiagnosticSeverity.Warning,
        "info": lsp.DiagnosticSeverity.Information,
    }
    # The last line holds a character outside the BMP: UTF-16 columns move by one after it.
    wide = BROKEN.splitlines()[-1]
    shift = len('session "😀')

    def utf16(line: int, column: int) -> int:
        return column - 1 + (1 if line == 10 and column - 1 >= shift else 0)

    assert _triples(published) == [
        (
            d["code"],
            severity[d["severity"]],
            d["message"],
            d["line"] - 1,
            utf16(d["line"], d["column"]),
            d["end_line"] - 1,
            utf16(d["end_line"], d["end_column"]),
        )
        for d in expected
    ]
    assert {d.source for d in published} == {"prose"}
    assert any(d["line"] == 10 and d["column"] > shift for d in expected), wide
    assert {d.severity for d in published} >= {
        lsp.DiagnosticSeverity.Error,
        lsp.DiagnosticSeverity.Warning,
    }


async def test_change_republishes_and_close_clears(editor: Editor) -> None:
    uri = "untitled:changing"
    editor.open(uri, "session: ghost\n")
    assert [d.code for d in await editor.diagnostics(uri)] == ["E007"]
    editor.replace(uri, "agent ghost:\n  model: opus\n\nsession: ghost\n")
    assert await editor.diagnostics(uri) == []
    # An incremental edit: rename the definition, the session's reference breaks.
    editor.change(
        uri,
        [
            lsp.TextDocumentContentChangePartial(
                range=lsp.Range(lsp.Position(0, 6), lsp.Position(0, 11)), text="spirit"
            )
        ],
    )
    found = await editor.diagnostics(uri)
    assert [(d.code, d.range.start.line) for d in found] == [("E007", 3)]
    editor.close(uri)
    cleared = await _cleared(editor, uri)
    assert cleared == []


async def _cleared(editor: Editor, uri: str) -> list[lsp.Diagnostic]:
    async def wait() -> list[lsp.Diagnostic]:
        while True:
            last = editor.published[uri][-1]
            if last.version is None and not last.diagnostics:
                return []
            editor.arrived.clear()
            await editor.arrived.wait()

    return await asyncio.wait_for(wait(), 30)


async def _stats(editor: Editor) -> dict[str, int]:
    found = await editor.client.protocol.send_request_async("prose/analysisStats", None)
    return {key: getattr(found, key) for key in ("started", "completed", "cancelled")}


async def test_a_burst_of_changes_is_analysed_once_at_its_end(editor: Editor) -> None:
    uri = "untitled:burst"
    filler = "".join(f'let note{i} = session "step {i}"\n' for i in range(2000))
    editor.open(uri, filler)
    await editor.diagnostics(uri)
    before = await _stats(editor)
    text = filler
    for char in "session: someone\n" * 2:  # 34 keystrokes, sent without a pause
        text += char
        editor.replace(uri, text)
    found = await editor.diagnostics(uri)
    after = await _stats(editor)
    assert [d.code for d in found] == ["E007", "E007"]
    # The first keystroke's analysis (started at once: the document was quiet) is cancelled by
    # the second; the one after the pause is the only other one.
    assert after["started"] - before["started"] <= 2
    assert after["completed"] - before["completed"] <= 2
    assert after["started"] - before["started"] == (
        after["completed"] - before["completed"] + after["cancelled"] - before["cancelled"]
    )
    versions = [p.version for p in editor.published[uri]]
    assert len(versions) <= 3  # the open's, then at most one per analysis of the burst
    assert versions[-1] == editor.versions[uri]


async def test_a_file_with_a_thousand_diagnostics(editor: Editor) -> None:
    uri = "untitled:thousand"
    text = "".join(f"session: nobody{i}\n" for i in range(1500))
    editor.open(uri, text)
    found = await editor.diagnostics(uri)
    expected = check_source(SourceFile.from_text(text, f"<{uri}>"))
    assert len(found) == MAX_DIAGNOSTICS + 1 == len(expected)
    assert [d.code for d in found] == ["E007"] * MAX_DIAGNOSTICS + ["E117"]
    assert found[999].range.start == lsp.Position(999, 9)
    assert found[999].message == "Agent 'nobody999' not defined"


async def test_editing_an_imported_program_rechecks_its_open_importers(
    editor: Editor, workspace: Path
) -> None:
    library = workspace / "summarise.prose"
    library.write_text('input text: "What to summarise"\noutput summary = session "Sum up"\n')
    main = workspace / "uses-summarise.prose"
    main_text = 'use "./summarise.prose" as summarise\n\nlet s = summarise(text: "long")\n'
    main.write_text(main_text)
    editor.open(library.as_uri(), library.read_text())
    editor.open(main.as_uri(), main_text)
    assert await editor.diagnostics(main.as_uri()) == []
    # An unsaved edit to the library: a new required input. The open importer is re-checked
    # against the buffer, not the file on disk.
    editor.replace(library.as_uri(), 'input text: "t"\ninput style: "s"\noutput summary = 1\n')
    await editor.diagnostics(library.as_uri())

    async def rechecked() -> list[lsp.Diagnostic]:
        while True:
            found = list(editor.published[main.as_uri()][-1].diagnostics)
            if found:
                return found
            editor.arrived.clear()
            await editor.arrived.wait()

    found = await asyncio.wait_for(rechecked(), 30)
    assert [(d.code, d.message) for d in found] == [
        ("E026", "Required input 'style' not provided to program 'summarise'")
    ]


async def test_the_trace_follows_an_edit_through_the_server(editor: Editor) -> None:
    """`prose/analysisStats`'s trace holds each step of a published version, in order, on
    the monotonic clock, with a thread CPU time that never goes back within the worker."""
    uri = "untitled:traced"
    editor.open(uri, "session: ghost\n")
    await editor.diagnostics(uri)
    await asyncio.sleep(0.6)  # a pause (server.PAUSE_S): the next change is analysed at once
    sent = time.perf_counter()
    editor.replace(uri, "session: spirit\n")
    await editor.diagnostics(uri)
    done = time.perf_counter()
    found = await editor.client.protocol.send_request_async("prose/analysisStats", None)
    version = editor.versions[uri]
    steps = [
        (e, at, cpu) for e, doc, number, at, cpu in found.trace if (doc, number) == (uri, version)
    ]
    order = ["received", "queued", "analysing", "parsed", "checked", "handed-back"]
    order += ["converted", "written"]
    assert [event for event, _, _ in steps] == order
    times = [at for _, at, _ in steps]
    assert sent <= times[0] and times == sorted(times)
    assert times[-2] <= done  # built before it arrived ("written" is marked once write returns)
    worker = [cpu for event, _, cpu in steps if event in ("analysing", "parsed", "checked")]
    assert worker == sorted(worker)

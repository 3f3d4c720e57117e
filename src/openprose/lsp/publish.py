"""Published diagnostics written as ready-made JSON, without pygls's cattrs round.

pygls sends a notification built from lsprotocol objects: each diagnostic is created (attrs
validators) and unstructured again by cattrs — 17-21 ms of CPU for the 10,000-line bench
program's 529 diagnostics, most of the time of re-parsing its edit (now ~2 ms). Here each diagnostic's JSON is
built from dicts and lists, kept while the diagnostic stays the same and in the same place,
and the message is joined from those pieces. ``convert.diagnostic`` + ``fixes.attach`` stay
the definition (pull diagnostics use them); a test keeps the two equal.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from typing import Any

from lsprotocol import types as lsp
from pygls.protocol import JsonRPCProtocol

from openprose.diagnostics import Diagnostic, Severity
from openprose.lsp.convert import SOURCE
from openprose.lsp.documents import Analysis
from openprose.lsp.positions import Lines
from openprose.source import Span

logger = logging.getLogger("openprose.lsp")

_SEVERITY = {
    Severity.ERROR: int(lsp.DiagnosticSeverity.Error),
    Severity.WARNING: int(lsp.DiagnosticSeverity.Warning),
    Severity.INFO: int(lsp.DiagnosticSeverity.Information),
}


def _range(lines: Lines, span: Span) -> dict[str, dict[str, int]]:
    start_line, start_units = lines.start(span)
    end_line, end_units = lines.end(span)
    return {
        "start": {"line": start_line, "character": start_units},
        "end": {"line": end_line, "character": end_units},
    }


def diagnostic_value(lines: Lines, found: Diagnostic) -> dict[str, Any]:
    """The LSP diagnostic of ``found`` as JSON values: what cattrs makes of
    ``fixes.attach(analysis, convert.diagnostic(lines, found), found)``."""
    value: dict[str, Any] = {
        "range": _range(lines, found.span),
        "severity": _SEVERITY[found.severity],
        "code": found.code,
        "source": SOURCE,
        "message": found.message,
    }
    fix = found.fix
    if fix is not None:
        edits = []
        for edit in fix.edits:
            start_line, start_units = lines.start(edit.span)
            end_line, end_units = lines.end(edit.span)
            edits.append(
                {"range": [start_line, start_units, end_line, end_units], "newText": edit.text}
            )
        value["data"] = {"fix": {"title": fix.title, "safe": fix.safe, "edits": edits}}
    return value


def _place(lines: Lines, ascii_only: bool, span: Span) -> tuple[int, int, int, int]:
    """A span's range in client units (0-based), as `Lines` gives it; for an ASCII text,
    units are characters and it is read off the span."""
    if ascii_only:
        return span.line - 1, span.column - 1, span.end_line - 1, span.end_column - 1
    return (*lines.start(span), *lines.end(span))


class DiagnosticsWriter:
    """Writes ``textDocument/publishDiagnostics`` messages, reusing the JSON text of each
    diagnostic that the document's previous publish had in the same place (an edit leaves
    nearly all of them as they were): the message is joined from ready-made pieces."""

    def __init__(self) -> None:
        # Per document: JSON text of the last publish's diagnostics, by what they are made
        # of (code, severity, message, range in client units, the fix and its edits' ranges).
        self._pieces: dict[str, dict[tuple[object, ...], str]] = {}

    def message(self, uri: str, analysis: Analysis) -> bytes:
        """The framed notification (headers and body) for ``analysis`` (its version too)."""
        before = self._pieces.get(uri, {})
        now: dict[tuple[object, ...], str] = {}
        lines = analysis.lines
        ascii_only = analysis.source.text.isascii()  # then client units are characters
        texts = []
        for found in analysis.diagnostics:
            key: tuple[object, ...] = (
                found.code,
                found.severity,
                found.message,
                *_place(lines, ascii_only, found.span),
            )
            fix = found.fix
            if fix is not None:
                key += (
                    fix.title,
                    fix.safe,
                    *((*_place(lines, ascii_only, e.span), e.text) for e in fix.edits),
                )
            text = before.get(key) or now.get(key)
            if text is None:
                text = json.dumps(diagnostic_value(lines, found))
            now[key] = text
            texts.append(text)
        self._pieces[uri] = now
        version = "" if analysis.version is None else f',"version":{analysis.version}'
        body = (
            f'{{"jsonrpc":"2.0","method":"{lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS}",'
            f'"params":{{"uri":{json.dumps(uri)},"diagnostics":[{",".join(texts)}]{version}}}}}'
        ).encode()  # json.dumps escapes everything outside ASCII: the text is ASCII
        return b"Content-Length: %d\r\n\r\n" % len(body) + body

    def forget(self, uri: str) -> None:
        self._pieces.pop(uri, None)


def send(protocol: JsonRPCProtocol, framed: bytes) -> None:
    """Write a framed message on pygls's transport (as pygls's own sending does); a closed
    pipe is one log line, the server goes on until the client's exit."""
    writer = protocol.writer
    if writer is None:
        logger.error("cannot send to the client (no transport)")
        return
    try:
        pending = writer.write(framed)
    except (BrokenPipeError, ConnectionResetError) as error:
        logger.error("cannot send to the client (%s)", error)
        return
    if inspect.isawaitable(pending):  # an asynchronous transport (not stdio's)
        asyncio.ensure_future(pending)

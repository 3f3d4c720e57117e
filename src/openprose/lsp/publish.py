"""Published diagnostics built as plain JSON values and sent without pygls's cattrs round.

pygls sends a notification built from lsprotocol objects: each diagnostic is created (attrs
validators) and unstructured again by cattrs — ~25 ms of CPU for the 10,000-line bench
program's 544 diagnostics, as much as re-parsing its edit. The same JSON is built here from
dicts and lists, which ``json.dumps`` writes in C. ``convert.diagnostic`` + ``fixes.attach``
stay the definition (pull diagnostics use them); a test keeps the two equal.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types as lsp
from pygls.protocol import JsonRPCProtocol

from openprose.diagnostics import Diagnostic, Severity
from openprose.lsp.convert import SOURCE
from openprose.lsp.documents import Analysis
from openprose.lsp.positions import Lines
from openprose.source import Span

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


def diagnostics_notification(uri: str, analysis: Analysis) -> dict[str, Any]:
    """``textDocument/publishDiagnostics`` for ``analysis`` (its version included)."""
    lines = analysis.lines
    params: dict[str, Any] = {
        "uri": uri,
        "diagnostics": [diagnostic_value(lines, d) for d in analysis.diagnostics],
    }
    if analysis.version is not None:
        params["version"] = analysis.version
    return {"jsonrpc": "2.0", "method": lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, "params": params}


def send(protocol: JsonRPCProtocol, message: dict[str, Any]) -> None:
    """Send a message made of JSON values through pygls's own sending (framing, the writer, a
    closed pipe logged): its json.dumps needs no converter for them."""
    protocol._send_data(message)

"""Front-end values as LSP values: spans as ranges, diagnostics as LSP diagnostics."""

from __future__ import annotations

from lsprotocol import types as lsp

from openprose.diagnostics import Diagnostic, Severity
from openprose.lsp.positions import Lines
from openprose.source import Span

SOURCE = "prose"

_SEVERITY = {
    Severity.ERROR: lsp.DiagnosticSeverity.Error,
    Severity.WARNING: lsp.DiagnosticSeverity.Warning,
    Severity.INFO: lsp.DiagnosticSeverity.Information,
}


def range_of(lines: Lines, span: Span) -> lsp.Range:
    start_line, start_units = lines.start(span)
    end_line, end_units = lines.end(span)
    return lsp.Range(lsp.Position(start_line, start_units), lsp.Position(end_line, end_units))


def diagnostic(lines: Lines, found: Diagnostic) -> lsp.Diagnostic:
    """Code, message and range exactly as ``prose check`` reports them."""
    return lsp.Diagnostic(
        range=range_of(lines, found.span),
        message=found.message,
        severity=_SEVERITY[found.severity],
        code=found.code,
        source=SOURCE,
    )

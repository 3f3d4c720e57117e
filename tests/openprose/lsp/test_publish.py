"""Published diagnostics built as JSON values are exactly what pygls's converter made of the
lsprotocol objects (`convert.diagnostic` + `fixes.attach`), in every position encoding."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pygls", reason="the [lsp] extra (pygls) is not installed")

from pygls.protocol import default_converter

from openprose.lsp import fixes
from openprose.lsp.convert import diagnostic
from openprose.lsp.documents import Analysis, Documents
from openprose.lsp.publish import diagnostic_value, diagnostics_notification

CONFORMANCE = Path(__file__).resolve().parents[1] / "conformance"
# Programs with diagnostics, fixes (safe and unsafe) among them.
PROGRAMS = sorted(
    [*(CONFORMANCE / "fixable").glob("*.prose"), *(CONFORMANCE / "unsafe_fixable").glob("*.prose")]
)
# Characters outside ASCII and outside the Basic Multilingual Plane before the problems, so
# client units differ from characters in UTF-8 and UTF-16.
WIDE = 'let café = session "é 😀 {café}"\nlet 😀x = 1\nsesion "typo 😀"\n'
CONVERTER = default_converter()


def _analysis(text: str, encoding: str) -> Analysis:
    store = Documents()
    store.encoding = encoding
    return store.update("untitled:published.prose", text, 3)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8", "utf-32"])
@pytest.mark.parametrize("text", [WIDE, *(p.read_text(encoding="utf-8") for p in PROGRAMS)])
def test_values_are_what_the_converter_made(text: str, encoding: str) -> None:
    analysis = _analysis(text, encoding)
    assert analysis.diagnostics  # each program has something to publish
    for found in analysis.diagnostics:
        published = fixes.attach(analysis, diagnostic(analysis.lines, found), found)
        assert diagnostic_value(analysis.lines, found) == CONVERTER.unstructure(published)


def test_the_fixable_programs_carry_fixes() -> None:
    """The comparison above covers the ``data`` of fixes, not only plain diagnostics."""
    with_fix = [
        d
        for p in PROGRAMS
        for d in _analysis(p.read_text(encoding="utf-8"), "utf-16").diagnostics
        if d.fix is not None
    ]
    assert any(d.fix.safe for d in with_fix if d.fix)
    assert any(not d.fix.safe for d in with_fix if d.fix)


def test_the_notification_names_uri_and_version() -> None:
    analysis = _analysis(WIDE, "utf-16")
    message = diagnostics_notification("untitled:published.prose", analysis)
    assert message["method"] == "textDocument/publishDiagnostics"
    assert message["jsonrpc"] == "2.0"
    params = message["params"]
    assert params["uri"] == "untitled:published.prose"
    assert params["version"] == 3
    assert len(params["diagnostics"]) == len(analysis.diagnostics)

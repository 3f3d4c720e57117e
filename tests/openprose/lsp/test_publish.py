"""Published diagnostics written as ready-made JSON are exactly what pygls's converter made
of the lsprotocol objects (`convert.diagnostic` + `fixes.attach`), in every position
encoding, and pieces kept from the previous publish never outlive their place."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pygls", reason="the [lsp] extra (pygls) is not installed")

from pygls.protocol import default_converter

from openprose.diagnostics import Edit, Fix
from openprose.lsp import fixes
from openprose.lsp.convert import diagnostic
from openprose.lsp.documents import Analysis, Documents
from openprose.lsp.publish import DiagnosticsWriter, diagnostic_value

CONFORMANCE = Path(__file__).resolve().parents[1] / "conformance"
# Programs with diagnostics, fixes (safe and unsafe) among them.
PROGRAMS = sorted(
    [*(CONFORMANCE / "fixable").glob("*.prose"), *(CONFORMANCE / "unsafe_fixable").glob("*.prose")]
)
# Characters outside ASCII and outside the Basic Multilingual Plane before the problems, so
# client units differ from characters in UTF-8 and UTF-16.
WIDE = 'let café = session "é 😀 {café}"\nlet 😀x = 1\nsesion "typo 😀"\n'
PLAIN = 'let cafe = session "e {cafe}"\nlet x = 1\nsesion "typo"\n'
CONVERTER = default_converter()
URI = "untitled:published.prose"


def _analysis(text: str, encoding: str, version: int | None = 3) -> Analysis:
    store = Documents()
    store.encoding = encoding
    return store.update(URI, text, version)


def _expected(analysis: Analysis) -> list[Any]:
    return [
        CONVERTER.unstructure(fixes.attach(analysis, diagnostic(analysis.lines, d), d))
        for d in analysis.diagnostics
    ]


def _sent(writer: DiagnosticsWriter, analysis: Analysis) -> dict[str, Any]:
    framed = writer.message(URI, analysis)
    header, body = framed.split(b"\r\n\r\n", 1)
    assert header == b"Content-Length: %d" % len(body)
    message: dict[str, Any] = json.loads(body)
    return message


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8", "utf-32"])
@pytest.mark.parametrize("text", [WIDE, *(p.read_text(encoding="utf-8") for p in PROGRAMS)])
def test_values_are_what_the_converter_made(text: str, encoding: str) -> None:
    analysis = _analysis(text, encoding)
    assert analysis.diagnostics  # each program has something to publish
    assert [diagnostic_value(analysis.lines, d) for d in analysis.diagnostics] == _expected(
        analysis
    )
    message = _sent(DiagnosticsWriter(), analysis)
    assert message == {
        "jsonrpc": "2.0",
        "method": "textDocument/publishDiagnostics",
        "params": {"uri": URI, "version": 3, "diagnostics": _expected(analysis)},
    }


def test_the_fixable_programs_carry_fixes() -> None:
    """The comparison above covers the ``data`` of fixes, not only plain diagnostics."""
    with_fix = [
        d.fix
        for p in PROGRAMS
        for d in _analysis(p.read_text(encoding="utf-8"), "utf-16").diagnostics
        if d.fix is not None
    ]
    assert any(fix.safe for fix in with_fix)
    assert any(not fix.safe for fix in with_fix)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8"])
def test_pieces_follow_the_text_from_version_to_version(encoding: str) -> None:
    """One writer publishes versions that move diagnostics, switch between ASCII and not,
    and repeat: each message is the converter's for its own version."""
    writer = DiagnosticsWriter()
    versions = [
        PLAIN,
        PLAIN + "\n",  # the same diagnostics in the same places: pieces reused
        PLAIN.replace("cafe", "cafx"),  # a message changes, its place does not
        WIDE,
        "\n" + WIDE,
        PLAIN,
        "let y = 2\n" + PLAIN,
        PLAIN + PLAIN,
        PLAIN,
    ]
    for number, text in enumerate(versions, start=1):
        analysis = _analysis(text, encoding, number)
        params = _sent(writer, analysis)["params"]
        assert params["version"] == number
        assert params["diagnostics"] == _expected(analysis), text


def test_a_document_without_version_sends_none() -> None:
    params = _sent(DiagnosticsWriter(), _analysis(PLAIN, "utf-16", None))["params"]
    assert "version" not in params


@pytest.mark.parametrize("text", [PLAIN, WIDE])
def test_a_fix_that_changes_alone_is_written_anew(text: str) -> None:
    """The same diagnostic in the same place whose fix changes (its title, its safety, where
    its edit goes, what it writes): each publish carries its own fix."""
    analysis = _analysis(text, "utf-16")
    found = analysis.diagnostics[0]
    span, other = found.span, analysis.diagnostics[-1].span
    fixes_in_turn = [
        Fix("a", (Edit(span, "x"),)),
        Fix("a", (Edit(span, "x"),), safe=False),
        Fix("b", (Edit(span, "x"),), safe=False),
        Fix("b", (Edit(other, "x"),), safe=False),
        Fix("b", (Edit(other, "y"),), safe=False),
        Fix("b", (Edit(other, "y"), Edit(span, "z")), safe=False),
        None,
    ]
    writer = DiagnosticsWriter()
    for fix in fixes_in_turn:
        analysis.diagnostics = [dataclasses.replace(found, fix=fix)]
        assert _sent(writer, analysis)["params"]["diagnostics"] == _expected(analysis), fix

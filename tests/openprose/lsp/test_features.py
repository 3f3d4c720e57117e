"""The feature modules in-process, on any text: nothing raises, every range is in the text.

(The stdio tests drive the same functions through the server; here hypothesis feeds them
arbitrary programs — broken, non-ASCII, CRLF — faster than a pipe could.)
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openprose.lsp import completion, highlight, hover, navigation, outline
from openprose.lsp.documents import Documents
from openprose.lsp.formatting import format_document, format_range
from openprose.lsp.inlay import inlay_hints
from openprose.lsp.signature import signature_help

FRAGMENTS = [
    "agent a:\n", "  model: opus\n", "  persist: true\n", "  permissions:\n", "    bash: deny\n",
    'session "hi {x}"\n', "session: a\n", "let x = ", "const y = ", "do b(x)\n", "block b(p):\n",
    "  ", "    ", "parallel (", '"any", count: 2', "):\n", "for i in [x, y]:\n", "loop until **done**",
    " (max: 3)", ":\n", "| map:\n", "try:\n", "catch as e:\n", 'use "./lib.prose" as lib\n',
    "lib(topic: x)\n", "x.field", "input t: \"d\"\n", "output o = x\n", "{", "}", '"', '"""\n',
    "# note\n", "\r\n", "\t", "😀", "é", "->", "=", "\n", "\\{", "\\", "{r.", "do b(", ", ",
]  # fmt: skip

programs = st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join) | st.text(max_size=200)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs, st.data())
def test_every_feature_survives_any_text(text: str, data: st.DataObject) -> None:
    store = Documents()
    analysis = store.update("untitled:fuzz", text, 1)
    offset = data.draw(st.integers(0, len(text)))
    lines = analysis.lines
    line_count = text.count("\n") + 1
    for found in analysis.diagnostics:
        start_line, _ = lines.start(found.span)
        assert 0 <= start_line < line_count
    completion.complete(analysis, offset, store)
    signature_help(store, analysis, offset)
    for hint in inlay_hints(store, analysis, (0, len(text)), lambda alias: f"{alias}-model"):
        assert 0 <= hint.position.line < line_count
    hover.hover(store, analysis, offset)
    navigation.definition(store, analysis, offset)
    navigation.references(store, analysis, offset, True)
    outline.document_symbols(analysis)
    tokens = highlight.semantic_tokens(analysis).data
    assert len(tokens) % 5 == 0
    part = highlight.semantic_tokens(analysis, (offset, len(text))).data
    assert len(part) % 5 == 0 and len(part) <= len(tokens)
    (edit,) = highlight.token_edits([], tokens) or [None]
    assert edit is None or list(edit.data or []) == list(tokens)
    edits = format_document(analysis)
    assert edits is None or all(e.range.start.line < line_count + 1 for e in edits)
    some = format_range(analysis, range(offset % line_count, line_count))
    assert (some is None) is (edits is None)
    # Positions round-trip: a client position of every offset comes back to that offset
    # (an offset inside a line ending maps to the end of the line's text).
    for at in range(0, len(text) + 1, max(1, len(text) // 20)):
        line, units = lines.position_of(at)
        back = lines.offset(line, units)
        assert back == at or text[back:at].strip("\r\n") == ""


def test_the_cli_explains_a_missing_extra() -> None:
    code = (
        "import sys; sys.modules['pygls'] = None; sys.modules['lsprotocol'] = None\n"
        "from openprose.cli import main; sys.exit(main(['lsp']))"
    )
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True)
    assert done.returncode == 2
    assert "pip install 'openprose[lsp]'" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("command", ["check", "fmt", "run"])
def test_other_commands_do_not_pay_for_pygls(command: str) -> None:
    code = (
        "import importlib, sys; from openprose.cli import COMMANDS\n"
        f"importlib.import_module(COMMANDS[{command!r}][0])\n"
        "import openprose, openprose.parser, openprose.checker\n"
        "assert 'pygls' not in sys.modules and 'lsprotocol' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_bad_json_from_a_client_is_one_log_line_not_a_traceback() -> None:
    body = b"{bad}"
    done = subprocess.run(
        [sys.executable, "-m", "openprose.cli", "lsp"],
        input=b"Content-Length: %d\r\n\r\n%s" % (len(body), body),
        capture_output=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0  # end of input: the client went away
    assert b"Traceback" not in done.stderr
    assert b"prose lsp: error: Unable to handle message (JSONDecodeError" in done.stderr
    assert b'"method": "window/showMessage"' in done.stdout  # the client is told too

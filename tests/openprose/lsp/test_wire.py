"""`prose lsp` against a hand-written client: bad framing, a storm of changes, a clean exit
and programs nested to the E115 limit (tests/openprose/lsp/wire.py)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pygls", reason="the [lsp] extra (pygls) is not installed")

from openprose.depth import MAX_NESTING
from tests.openprose.lsp.wire import Wire
from tests.openprose.test_nesting_limit import HEADS, levels, nested


def open_document(wire: Wire, uri: str, text: str, version: int = 1) -> None:
    wire.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "prose", "version": version, "text": text}},
    )


def published(wire: Wire, uri: str, version: int, timeout: float = 60.0) -> list[dict[str, Any]]:
    message = wire.wait_for(
        lambda m: (
            m.get("method") == "textDocument/publishDiagnostics"
            and m["params"]["uri"] == uri
            and m["params"].get("version") == version
        ),
        timeout,
    )
    diagnostics: list[dict[str, Any]] = message["params"]["diagnostics"]
    return diagnostics


def shut_down(wire: Wire) -> tuple[int, str]:
    wire.response(wire.request("shutdown", None))
    wire.notify("exit", None)
    return wire.finish()


@pytest.mark.parametrize(
    "header",
    [b"Content-Length: abc\r\n\r\n", b"Content-Length: -5\r\n\r\n", b"garbage\r\n\r\n", b"\r\n"],
)
def test_bad_framing_ends_the_server_with_one_line(header: bytes) -> None:
    wire = Wire()
    wire.initialize()
    wire.send_raw(header + b"{}")
    code = wire.process.wait(30)  # never a wedge: it ends without waiting for more input
    _, err = wire.finish()
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "prose lsp: error: stopping: bad message framing"
    )
    assert "Traceback" not in err


def test_a_clean_shutdown_and_exit_is_status_0() -> None:
    wire = Wire()
    wire.initialize()
    code, err = shut_down(wire)
    assert code == 0, err
    assert err == ""  # no `ValueError: I/O operation on closed file`


def test_exit_without_shutdown_is_status_1() -> None:
    wire = Wire()
    wire.initialize()
    wire.notify("exit", None)
    code, err = wire.finish()
    assert code == 1 and "Traceback" not in err


def test_a_storm_of_changes_checks_only_what_is_current(tmp_path: Path) -> None:
    uri = (tmp_path / "big.prose").as_uri()
    lines = [f'let v{i} = session "Step {i}"' for i in range(2000)]
    wire = Wire()
    wire.initialize()
    open_document(wire, uri, "\n".join(lines) + "\n")
    published(wire, uri, 1)
    changes = 2000
    started = time.monotonic()
    for version in range(2, changes + 2):
        # each change retypes the prompt of one line: a new version of a 2,000-line program
        line = version % 2000
        wire.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [
                    {
                        "range": {
                            "start": {"line": line, "character": 0},
                            "end": {"line": line, "character": len(lines[line])},
                        },
                        "text": f'let v{line} = session "Edit {version}"',
                    }
                ],
            },
        )
    published(wire, uri, changes + 1)  # the version the storm ends with is checked
    wire.response(wire.request("shutdown", None), timeout=60)
    answered = time.monotonic() - started
    wire.notify("exit", None)
    code, err = wire.finish()
    assert code == 0, err
    assert answered < 30, f"shutdown answered {answered:.1f} s after the storm began"
    checked = [
        m["params"]["version"]
        for m in wire.received
        if m.get("method") == "textDocument/publishDiagnostics"
    ]
    assert len(checked) < changes // 10, f"{len(checked)} versions checked of {changes}"


def test_nesting_at_the_limit_is_served_and_one_more_is_e115(tmp_path: Path) -> None:
    wire = Wire()
    wire.initialize()
    for kind in HEADS:
        for extra in (0, 1):
            uri = (tmp_path / f"{kind}-{extra}.prose").as_uri()
            open_document(wire, uri, nested(kind, levels(kind, MAX_NESTING) + extra))
            codes = [d.get("code") for d in published(wire, uri, 1)]
            assert ("E115" in codes) is bool(extra), (kind, extra, codes[:5])
            document = {"textDocument": {"uri": uri}}
            for method in ("textDocument/documentSymbol", "textDocument/semanticTokens/full"):
                answer = wire.response(wire.request(method, document))
                assert "error" not in answer, (kind, method, answer["error"])
            hover = {**document, "position": {"line": 3, "character": 4}}
            answer = wire.response(wire.request("textDocument/hover", hover))
            assert "error" not in answer, (kind, answer["error"])
    code, err = shut_down(wire)
    assert code == 0 and "Traceback" not in err and "Recursion" not in err, err


def test_exit_while_the_client_keeps_stdin_open_is_clean() -> None:
    """The reader thread is blocked reading stdin when `exit` arrives: the process still ends
    with status 0 (reading ``sys.stdin.buffer`` there made the interpreter's shutdown abort,
    status -6, whenever the client had not closed its end yet)."""
    wire = Wire()
    wire.initialize()
    wire.response(wire.request("shutdown", None))
    wire.notify("exit", None)
    code = wire.process.wait(60)  # stdin still open
    _, err = wire.finish()
    assert code == 0, err
    assert "Fatal Python error" not in err

"""Diagnostics as `prose check` prints them — ``path:line:col: CODE message`` and the caret
excerpt — for every command that reports a program's problems (check, fmt, compile, and
opening a run, from the CLI or the API)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from openprose.diagnostics import Diagnostic
    from openprose.source import SourceFile

__all__ = ["STDIN_NAME", "print_diagnostics", "write"]

STDIN_NAME = "<stdin>"  # the name a program read from standard input is shown under


def print_diagnostics(
    diagnostics: list[Diagnostic], source: SourceFile | None, stream: TextIO
) -> None:
    """``path:line:col: CODE message`` and the caret excerpt. A file that is not UTF-8 has no
    source text; its excerpt is quoted from a lossy decoding instead. On a terminal (or
    with ``FORCE_COLOR``, never with ``NO_COLOR``) the location and the code are coloured."""
    from cliconventions import color_enabled

    color = color_enabled(stream) if diagnostics else False
    for d in diagnostics:
        shown = source if source is not None else _lossy(d.path)
        head = f"{d.path}:{d.line}:{d.column}: {d.code} {d.message}"
        text = head if shown is None else d.render_cli(shown)
        if color:
            text = _colored_head(d, head) + text[len(head) :]
        write(stream, text + "\n")


_SEVERITY_STYLE = {"error": "red", "warning": "yellow", "info": "blue"}


def _colored_head(d: Diagnostic, head: str) -> str:
    from cliconventions import paint

    where = f"{d.path}:{d.line}:{d.column}:"
    rest = head[len(where) + len(d.code) + 2 :]
    code = paint(d.code, _SEVERITY_STYLE.get(str(d.severity), "bold"), True)
    return f"{paint(where, 'bold', True)} {code} {rest}"


def _lossy(path: str) -> SourceFile | None:
    from openprose.source import SourceFile

    if (
        path == STDIN_NAME or not Path(path).is_file()
    ):  # a FIFO was read once already; opening it again would block
        return None
    from openprose.parser import PROGRAM_LIMIT

    try:
        with open(path, "rb") as handle:
            data = handle.read(PROGRAM_LIMIT + 1)
    except OSError:
        return None
    if len(data) > PROGRAM_LIMIT:
        return None  # refused unread (E118): no excerpt to show
    # columns are counted after the BOM, as read_source does
    data = data.removeprefix(b"\xef\xbb\xbf")
    return SourceFile.from_text(data.decode("utf-8", errors="replace"), path)


def write(stream: TextIO, text: str) -> None:
    """Write even when the stream's encoding cannot represent some character."""
    try:
        stream.write(text)
    except UnicodeEncodeError:
        encoding = stream.encoding or "ascii"
        stream.write(text.encode(encoding, "backslashreplace").decode(encoding))

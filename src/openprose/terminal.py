"""Text from models, input files and run folders, made safe to print on a terminal.

Such text may carry terminal escape sequences (colour, cursor moves, window titles, OSC 8
links, even "clear screen"): on a terminal they would act instead of showing. Printed to a
terminal, every control character except newline and tab is shown as a visible escape
(`\\x1b`), the way `ls` shows odd file names; piped or redirected, text passes unchanged so
that files and other programs get the real bytes.
"""

from __future__ import annotations

import re
import sys
from typing import TextIO

__all__ = ["neutralise", "printable"]

# C0 controls but \t and \n, DEL, and the C1 controls (U+0080-U+009F: 8-bit CSI and OSC).
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def neutralise(text: str) -> str:
    """`text` with every control character but newline and tab written as an escape."""
    return _CONTROLS.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def printable(text: object, stream: TextIO | None = None) -> str:
    """`str(text)`, neutralised when `stream` (default stdout) is a terminal."""
    shown = str(text)
    target = sys.stdout if stream is None else stream
    isatty = getattr(target, "isatty", None)
    if isatty is not None and isatty():
        return neutralise(shown)
    return shown

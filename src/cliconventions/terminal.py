"""Text from models, transcripts, input files and servers, made safe to show on a terminal:
the one function all four command lines print such text with.

Such text may carry characters a terminal acts on instead of showing: escape sequences
(colour, cursor moves, window titles, OSC 8 links, "clear screen"), a carriage return that
sends the cursor back over what was written, and Unicode format characters that are not
drawn but change what is seen — bidi overrides and isolates (U+202A-202E, U+2066-2069) that
reorder a line, zero-width characters (U+200B-200F, U+2060-2064, U+FEFF) and tag characters
(U+E0000-E007F) that hide text. Each is shown as a visible escape (``\\x1b``, ``\\u202e``),
the way ``ls`` shows odd file names.

`neutralise` always escapes (an approval prompt, state.md: what is approved must be what
runs); `one_line` also escapes newline and tab (an action shown on one line); `printable`
escapes only when the stream is a terminal, so that files and pipes get the real bytes.
"""

from __future__ import annotations

import functools
import re
import sys

TYPE_CHECKING = False  # `typing` costs start-up time (see cliconventions)
if TYPE_CHECKING:
    from typing import TextIO

__all__ = ["neutralise", "one_line", "printable"]

# Unicode's format characters (Cf) and the line and paragraph separators (Zl, Zp), as of
# Unicode 14 (Python 3.11); a test compares them with `unicodedata` so a newer Unicode's
# additions are noticed.
_FORMAT = (
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f"
    "\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U00013438\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
    "\U000e0020-\U000e007f"
)


@functools.cache
def _escaped(keep_layout: bool) -> re.Pattern[str]:
    """C0 controls (but tab and newline when `keep_layout`), DEL, the C1 controls (8-bit CSI
    and OSC), the format characters above. Compiled when first needed (~1.5 ms): most
    text has none of them and never gets here."""
    c0 = "\\x00-\\x08\\x0b-\\x1f" if keep_layout else "\\x00-\\x1f"
    return re.compile(f"[{c0}\\x7f-\\x9f{_FORMAT}]")


def _escape(match: re.Match[str]) -> str:
    return match.group().encode("unicode_escape").decode("ascii")


def neutralise(text: str) -> str:
    """`text` with every character a terminal would act on, or not draw, written as an
    escape; newline and tab keep laying the text out."""
    if text.isprintable():  # no control or format character at all: the usual case
        return text
    return _escaped(True).sub(_escape, text)


def one_line(text: str) -> str:
    """`neutralise(text)` with newline and tab escaped as well: an action (a shell
    command, a path, a URL) shown on one line, as it will run."""
    if text.isprintable():
        return text
    return _escaped(False).sub(_escape, text)


def printable(text: object, stream: TextIO | None = None) -> str:
    """`str(text)`, neutralised when `stream` (default stdout) is a terminal."""
    shown = str(text)
    target = sys.stdout if stream is None else stream
    isatty = getattr(target, "isatty", None)
    if isatty is not None and isatty():
        return neutralise(shown)
    return shown

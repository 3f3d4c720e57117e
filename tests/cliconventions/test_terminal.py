"""The one terminal-output function of the four command lines: every character a terminal
acts on or does not draw is shown as an escape; text without one passes unchanged."""

from __future__ import annotations

import io
import sys
import unicodedata

from hypothesis import example, given, settings
from hypothesis import strategies as st

from cliconventions.terminal import neutralise, one_line, printable

HIDDEN = {
    "\x1b[2J": "\\x1b[2J",  # clear screen
    "\x1b]0;pwned\x07": "\\x1b]0;pwned\\x07",  # window title
    "\r": "\\r",  # back over what was written
    "\x00": "\\x00",
    "\x9b31m": "\\x9b31m",  # 8-bit CSI
    "\u202e": "\\u202e",  # right-to-left override
    "\u2066": "\\u2066",  # left-to-right isolate
    "\u2069": "\\u2069",  # pop directional isolate
    "\u200b": "\\u200b",  # zero-width space
    "\u2060": "\\u2060",  # word joiner
    "\ufeff": "\\ufeff",
    "\u2028": "\\u2028",  # line separator
    "\U000e0041": "\\U000e0041",  # tag character (hidden ASCII)
}


def _reference(text: str, *, keep_layout: bool) -> str:
    """One character at a time, from Unicode's own categories."""
    shown = []
    for char in text:
        layout = keep_layout and char in "\n\t"
        hidden = unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp")
        escaped = char.encode("unicode_escape").decode("ascii")
        shown.append(escaped if hidden and not layout else char)
    return "".join(shown)


def test_every_hidden_or_acting_character_is_escaped() -> None:
    for raw, shown in HIDDEN.items():
        assert neutralise(f"a{raw}b") == f"a{shown}b"
        assert one_line(f"a{raw}b") == f"a{shown}b"
    assert neutralise("line\n\tnext é 日本 👍") == "line\n\tnext é 日本 👍"
    assert one_line("rm -rf ~\n\techo") == "rm -rf ~\\n\\techo"


def test_the_escaped_set_is_unicodes_control_and_format_characters() -> None:
    """Compared with this Python's Unicode: a newer one's format characters are noticed."""
    missed = [
        hex(code)
        for code in range(0x110000)
        if unicodedata.category(chr(code)) in ("Cc", "Cf", "Zl", "Zp")
        and chr(code) not in "\n\t"
        and neutralise(chr(code)) == chr(code)
    ]
    assert missed == []


@settings(max_examples=300)
@given(st.text())
@example("\u202eabc\r\x1b[2Kls")
@example("\n\t\u00ad")
def test_neutralise_and_one_line_match_unicodes_categories(text: str) -> None:
    assert neutralise(text) == _reference(text, keep_layout=True)
    assert one_line(text) == _reference(text, keep_layout=False)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_printable_escapes_for_a_terminal_only() -> None:
    text = "answer\x1b[2J\u202e"
    assert printable(text, _Terminal()) == "answer\\x1b[2J\\u202e"
    assert printable(text, io.StringIO()) == text  # piped: the real bytes
    assert printable(3, sys.stderr if not sys.stderr.isatty() else io.StringIO()) == "3"

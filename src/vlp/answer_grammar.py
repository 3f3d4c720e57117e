"""The GBNF grammar the embedded model answers a VLP question in.

llama.cpp's JSON-Schema converter lets any character but `"` and `\\` into a string, raw
newlines and other control characters included, so a constrained answer could still be
invalid JSON (issue 34: VLP001 on a raw newline). This grammar is written out instead:
strings admit printable characters and the escapes `\\"` `\\\\` `\\/` `\\n` `\\t` only.
The fields come in a fixed order, the model fills every one (provenance has at least one
item: there is no empty default to fall back on), confidence is a number of at most two
decimals within 0..1, and the safety level is one of those the runtime's rule allows.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["answer_grammar"]

CONTENT_CHARS = 600
ITEM_CHARS = 60
MAX_ITEMS = 4

_RULES = f"""\
ws ::= [ ]?
char ::= [^"\\\\\\x00-\\x1F\\x7F] | "\\\\" ["\\\\/nt]
content ::= "\\"" [^"\\\\\\x00-\\x20\\x7F] char{{0,{CONTENT_CHARS - 1}}} "\\""
item ::= "\\"" [^"\\\\\\x00-\\x20\\x7F] char{{0,{ITEM_CHARS - 1}}} "\\""
items ::= item ("," ws item){{0,{MAX_ITEMS - 1}}}
confidence ::= "0." [0-9] [0-9]? | "1.0"
"""


def answer_grammar(levels: Sequence[str] = ("safe", "review", "block")) -> str:
    """The grammar of the model's part of a VLP message, its safety level among `levels`."""
    if not levels:
        raise ValueError("at least one safety level")
    level = " | ".join(f'"\\"{name}\\""' for name in levels)
    return (
        'root ::= "{" ws "\\"content\\":" ws content "," ws "\\"confidence\\":" ws confidence'
        ' "," ws "\\"provenance\\":" ws "[" items "]" "," ws "\\"keywords\\":" ws "[" items "]"'
        ' "," ws "\\"safety\\":" ws "{" ws "\\"level\\":" ws level ws "}" ws "}"\n'
        f"level ::= {level}\n{_RULES}"
    )

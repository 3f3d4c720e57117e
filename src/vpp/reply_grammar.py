"""The GBNF grammar the embedded model writes a VPP reply in.

The runtime knows the whole frame of the next reply from the conversation's state: the tag
line, the footer (tag and index, cycle, locus, the declared assumptions) and, when three
cycles are closed, the escape choices. Only the body is the model's. So the grammar fixes
the frame word for word and leaves the body free within what the protocol allows: one to
`BODY_LINES` lines of text that neither repeat the wrapper tag nor start a footer nor write
a command (no `<`, `[` or `]`), each at most `LINE_CHARS` characters, which also bounds
the tokens a reply costs. Hosted providers ignore the grammar; they get the exact frame in
the prompt (`session._this_reply`).
"""

from __future__ import annotations

from vpp.state import Expectation
from vpp.validate import format_reply

__all__ = ["BODY_LINES", "LINE_CHARS", "reply_grammar", "reply_token_budget"]

BODY_LINES = 2
LINE_CHARS = 80
_MARK = "\x00body\x00"  # stands for the body while the frame is rendered; never in a frame
_TOKENS_PER_FRAME = 60  # ~45 for the frame of a 1.5 reply


def reply_grammar(expectation: Expectation) -> str:
    """A grammar admitting exactly the compliant replies to `expectation` with some body."""
    frame = format_reply(expectation, _MARK)
    if _MARK not in frame:  # an invalid command: the protocol fixes the body too
        return f"root ::= {_literal(frame)}\n"
    before, after = frame.split(_MARK)
    return (
        f"root ::= {_literal(before)} body {_literal(after)}\n"
        f'body ::= line ("\\n" line){{0,{BODY_LINES - 1}}}\n'
        f"line ::= [^\\x00-\\x20<>\\[\\]\\x7F] [^\\x00-\\x1F<>\\[\\]\\x7F]{{0,{LINE_CHARS - 1}}}\n"
    )


def reply_token_budget() -> int:
    """Tokens enough for the longest reply the grammar admits (a token is at least one
    character), so `max_tokens` never cuts a reply before its footer."""
    return BODY_LINES * LINE_CHARS + _TOKENS_PER_FRAME


def _literal(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'

"""What the protocol says about a reply's body, beyond its frame, checked by the session.

The validator reads a reply as the reference runtime does (tag line, footer, nested
wrappers, the fixed bodies). A session also needs the body to be the model's own answer: a
runtime that wraps anything in a correct frame would otherwise count "reply 2: !<g>..." or
its own placeholder as compliant (issue 34). These findings are the model's to fix, so the
session asks again, naming them.
"""

from __future__ import annotations

import re

from vpp.reply import read_reply
from vpp.state import Expectation
from vpp.validate import STRUCTURAL_BODY, Violation
from vpp.versions import ESCAPE_HINTS, USER_TAGS

__all__ = ["BODY_RULES", "PLACEHOLDERS", "body_violations"]

#: Texts a runtime puts where an answer belongs: never a model's answer.
PLACEHOLDERS = ("(your answer)", STRUCTURAL_BODY)
#: The codes `body_violations` reports.
BODY_RULES = frozenset({"placeholder-body", "body-echoes-command", "body-echoes-user"})

_COMMAND = re.compile(rf"!<(?:{'|'.join(sorted(USER_TAGS, key=len, reverse=True))})>")
_SPACE = re.compile(r"\s+")


def body_violations(user: str, reply: str, expectation: Expectation) -> tuple[Violation, ...]:
    """The body's faults: a placeholder, a protocol command written into it (other than the
    escape choices the protocol adds), or the user's own words handed back."""
    read = read_reply(reply, expectation.version)
    body = read.body
    line = read.body_start
    if expectation.recovery_body is not None or not body.strip():
        return ()  # a fixed body, or an empty one (the validator's `empty-body`)
    found: list[Violation] = []
    if any(placeholder in body for placeholder in PLACEHOLDERS):
        found.append(
            Violation(
                "placeholder-body", "The body is the frame's placeholder, not an answer.", line
            )
        )
    answer = body.replace(ESCAPE_HINTS[expectation.version], "") if expectation.escape_due else body
    if _COMMAND.search(answer):
        found.append(
            Violation(
                "body-echoes-command",
                "The body writes a protocol command (`!<tag>`); answer the message instead.",
                line,
            )
        )
    asked = _words(user.split("\n", 1)[1] if "\n" in user else "")
    if asked and _words(answer) == asked:
        found.append(
            Violation("body-echoes-user", "The body repeats the user's message; answer it.", line)
        )
    return tuple(found)


def _words(text: str) -> str:
    return _SPACE.sub(" ", text).strip().strip(".!?").lower()

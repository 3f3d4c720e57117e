"""Viable Prompt Protocol (VPP) 1.4 and 1.5: command grammar, mirror rule,
footers, cycle/locus state, exchange and transcript validation with repair.

    >>> import vpp
    >>> vpp.parse_command("!<o> --correct --<q>").reply_tag
    'q'
"""

from __future__ import annotations

from cliconventions.lazy import lazy_names

TYPE_CHECKING = False  # `typing` costs start-up time that `vpp --version` should not pay
if TYPE_CHECKING:
    from vpp.audit import TranscriptResult, TurnResult, validate_transcript
    from vpp.conversation import Conversation
    from vpp.footer import Deviation, Footer, build_footer, parse_footer
    from vpp.grammar import Command, Problem, parse_command, recovery_body
    from vpp.reply import Reply, read_reply
    from vpp.snippets import header_snippet
    from vpp.state import ConversationState, Expectation, StateError, expect, initial_state
    from vpp.transcript import Transcript, TranscriptError, read_transcript, write_transcript
    from vpp.validate import ExchangeResult, Violation, format_reply, validate_exchange
    from vpp.versions import ASSISTANT_TAGS, DEFAULT_VERSION, USER_TAGS, VERSIONS, Version

# Every name is loaded from its module on first use: `vpp --version` and `vpp --help` need
# none of them.
_MODULES = {
    "audit": ("TranscriptResult", "TurnResult", "validate_transcript"),
    "conversation": ("Conversation",),
    "footer": ("Deviation", "Footer", "build_footer", "parse_footer"),
    "grammar": ("Command", "Problem", "parse_command", "recovery_body"),
    "reply": ("Reply", "read_reply"),
    "snippets": ("header_snippet",),
    "state": ("ConversationState", "Expectation", "StateError", "expect", "initial_state"),
    "transcript": ("Transcript", "TranscriptError", "read_transcript", "write_transcript"),
    "validate": ("ExchangeResult", "Violation", "format_reply", "validate_exchange"),
    "versions": ("ASSISTANT_TAGS", "DEFAULT_VERSION", "USER_TAGS", "VERSIONS", "Version"),
}
__getattr__, __dir__ = lazy_names(__name__, _MODULES)


__all__ = [
    "ASSISTANT_TAGS",
    "DEFAULT_VERSION",
    "USER_TAGS",
    "VERSIONS",
    "Command",
    "Conversation",
    "ConversationState",
    "Deviation",
    "ExchangeResult",
    "Expectation",
    "Footer",
    "Problem",
    "Reply",
    "StateError",
    "Transcript",
    "TranscriptError",
    "TranscriptResult",
    "TurnResult",
    "Version",
    "Violation",
    "build_footer",
    "expect",
    "format_reply",
    "header_snippet",
    "initial_state",
    "parse_command",
    "parse_footer",
    "read_reply",
    "read_transcript",
    "recovery_body",
    "validate_exchange",
    "validate_transcript",
    "write_transcript",
]

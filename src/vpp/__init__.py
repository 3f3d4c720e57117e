"""Viable Prompt Protocol (VPP) 1.4 and 1.5: command grammar, mirror rule,
footers, cycle/locus state, exchange and transcript validation with repair.

    >>> import vpp
    >>> vpp.parse_command("!<o> --correct --<q>").reply_tag
    'q'
"""

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

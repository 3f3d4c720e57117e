"""VLP 1.1 (Vigilith Language Protocol): accountable messages for AI agents.

Make messages with :func:`make_message`, check them with :func:`validate_vlp`, stream
NDJSON with :func:`read_records` / :class:`NdjsonWriter`, follow corrections with
:func:`effective` and decide whether automation may act with :func:`gate`.
"""

from __future__ import annotations

from cliconventions.lazy import lazy_names

TYPE_CHECKING = False  # `typing` costs start-up time that `vlp --version` should not pay
if TYPE_CHECKING:
    from vlp.errors import CODES, CorrectionCycleError, Problem, VLPError
    from vlp.gate import Cause, GateResult, Verdict, gate
    from vlp.message import make_message, new_message_id, utc_timestamp
    from vlp.model import Message, ProvenanceRef, Safety, SafetyIssue
    from vlp.ndjson import (
        DEFAULT_MAX_LINE_BYTES,
        NdjsonWriter,
        Record,
        append_message,
        read_messages,
        read_records,
        scan,
    )
    from vlp.schema import MESSAGE_TYPES, PROTOCOL, load_schema, schema_path
    from vlp.session import Session, SessionClosedError, SessionRegistry
    from vlp.thread import Effective, Thread, ThreadChecker, check_thread, effective
    from vlp.validate import is_valid, message_problems, validate_vlp

# Every name is loaded from its module on first use: a command imports only what it
# runs (`vlp validate` needs neither pydantic, ~0.1 s, nor sessions, gating or rendering).
_MODULES = {
    "errors": ("CODES", "CorrectionCycleError", "Problem", "VLPError"),
    "gate": ("Cause", "GateResult", "Verdict", "gate"),
    "message": ("make_message", "new_message_id", "utc_timestamp"),
    "model": ("Message", "ProvenanceRef", "Safety", "SafetyIssue"),
    "ndjson": (
        "DEFAULT_MAX_LINE_BYTES",
        "NdjsonWriter",
        "Record",
        "append_message",
        "read_messages",
        "read_records",
        "scan",
    ),
    "schema": ("MESSAGE_TYPES", "PROTOCOL", "load_schema", "schema_path"),
    "session": ("Session", "SessionClosedError", "SessionRegistry"),
    "thread": ("Effective", "Thread", "ThreadChecker", "check_thread", "effective"),
    "validate": ("is_valid", "message_problems", "validate_vlp"),
}
__getattr__, __dir__ = lazy_names(__name__, _MODULES, "gate")


__all__ = [
    "CODES",
    "DEFAULT_MAX_LINE_BYTES",
    "MESSAGE_TYPES",
    "PROTOCOL",
    "Cause",
    "CorrectionCycleError",
    "Effective",
    "GateResult",
    "Message",
    "NdjsonWriter",
    "Problem",
    "ProvenanceRef",
    "Record",
    "Safety",
    "SafetyIssue",
    "Session",
    "SessionClosedError",
    "SessionRegistry",
    "Thread",
    "ThreadChecker",
    "VLPError",
    "Verdict",
    "append_message",
    "check_thread",
    "effective",
    "gate",
    "is_valid",
    "load_schema",
    "make_message",
    "message_problems",
    "new_message_id",
    "read_messages",
    "read_records",
    "scan",
    "schema_path",
    "utc_timestamp",
    "validate_vlp",
]

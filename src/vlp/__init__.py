"""VLP 1.1 (Vigilith Language Protocol): accountable messages for AI agents.

Make messages with :func:`make_message`, check them with :func:`validate_vlp`, stream
NDJSON with :func:`read_records` / :class:`NdjsonWriter`, follow corrections with
:func:`effective` and decide whether automation may act with :func:`gate`.
"""

from typing import TYPE_CHECKING, Any

from vlp.errors import CODES, CorrectionCycleError, Problem, VLPError
from vlp.gate import Cause, GateResult, Verdict, gate
from vlp.message import make_message, new_message_id, utc_timestamp
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

if TYPE_CHECKING:
    from vlp.model import Message, ProvenanceRef, Safety, SafetyIssue

# The typed (pydantic) view is loaded on first use: validating never needs it, and
# importing pydantic would cost every `vlp` command ~0.1 s.
_MODEL_NAMES = frozenset({"Message", "ProvenanceRef", "Safety", "SafetyIssue"})


def __getattr__(name: str) -> Any:
    if name in _MODEL_NAMES:
        from vlp import model

        return getattr(model, name)
    raise AttributeError(f"module 'vlp' has no attribute {name!r}")


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

"""The audit trail's messages: VLP timestamps of journal times, the builders of a
session's query and answer lines, and how a run's values are shown (`shown_value`)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from operator import itemgetter
from typing import Any

import orjson

from vlp import PROTOCOL, VLPError, message_problems
from vlp.validate import is_surely_valid

VM = "prose-vm"  # sender/receiver name of the VM itself
EVALUATOR = "evaluator"
# A model states no confidence of its own; its answers are recorded at this neutral value
# and say so in their payload (docs/decisions.md, Issue 13).
UNSTATED = 0.5
AUDIT_FILE = "audit.ndjson"

Message = dict[str, Any]
_EMPTY: Mapping[str, Any] = {}
_LINE = orjson.OPT_APPEND_NEWLINE


_SECONDS: dict[float, bytes] = {}  # whole second -> its RFC 3339 text (a run's events share few)
# The text's end by millisecond (a float: float arithmetic finds it); a time rounded up to
# the next second (1000) keeps 999.
_MILLISECONDS = {float(ms): b"%03dZ" % ms for ms in range(1000)} | {1000.0: b"999Z"}


def _stamp(t: float) -> bytes:
    """The VLP timestamp (UTC, milliseconds) of a journal time, as the line holds it: the
    time rounded to the microsecond (as `datetime` does), then cut to the millisecond.
    Float arithmetic only (`int` and `round` cost more than the rest): floor(x + 0.5) //
    1000 is round(x) // 1000 for every x >= 0 — they differ only at x = 2k + 0.5, never
    across a multiple of 1000 — and each step is exact below 10^6."""
    whole = t // 1.0
    try:
        return _SECONDS[whole] + _MILLISECONDS[((t - whole) * 1_000_000 + 0.5) // 1000.0]
    except KeyError:
        if whole in _SECONDS:  # not a time (NaN)
            raise ValueError(f"not a journal time: {t!r}") from None
        if len(_SECONDS) > 4096:
            _SECONDS.clear()
        moment = datetime.fromtimestamp(whole, UTC).strftime("%Y-%m-%dT%H:%M:%S.")
        _SECONDS[whole] = moment.encode()
        return _stamp(t)


def _timestamp(t: float) -> str:
    """The VLP timestamp (UTC, milliseconds) of a journal time."""
    return _stamp(t).decode()


def _query(
    ident: str,
    timestamp: str,
    run_id: str,
    seq: int,
    content: str,
    receiver: str,
    topic: str,
    previous: str | list[str] | None,
    payload: dict[str, Any],
) -> Message:
    """A session's query: the one builder of its line (templates included)."""
    message = {
        "id": ident,
        "protocol": PROTOCOL,
        "type": "query",
        "timestamp": timestamp,
        "session_id": run_id,
        "seq": seq,
        "sender": VM,
        "content": content,
        "confidence": 1.0,
        "receiver": receiver,
        "topic": topic,
    }
    if previous is not None:
        message["refers_to"] = previous
    message["payload"] = payload
    return message


def _query_payload(step: str, kind: Any, alias: Any, attempt: int, system: Any) -> dict[str, Any]:
    payload = {"step": step, "kind": kind, "model": alias, "attempt": attempt}
    if system:
        payload["system"] = system
    return payload


def _answer(
    ident: str,
    kind: str,
    timestamp: str,
    run_id: str,
    seq: int,
    sender: str,
    content: str,
    model: Any,
    step: str,
    refers_to: str,
    payload: dict[str, Any],
) -> Message:
    """A session's answer (a response, or a correction of a judgment's first answer)."""
    return {
        "id": ident,
        "protocol": PROTOCOL,
        "type": kind,
        "timestamp": timestamp,
        "session_id": run_id,
        "seq": seq,
        "sender": sender,
        "content": content,
        "confidence": UNSTATED,
        "receiver": VM,
        "provenance": [f"model:{model}", f"step:{step}"],
        "refers_to": refers_to,
        "payload": payload,
    }


def _answer_payload(
    step: str, binding: Any, kind: Any, model: Any, usage: Any, finish_reason: Any, elapsed: Any
) -> dict[str, Any]:
    return {
        "step": step,
        "binding": binding,  # the name the answer became (null: bound to none)
        "kind": kind,
        "model": model,
        "usage": usage,
        "finish_reason": finish_reason,
        "elapsed": elapsed,
        "confidence": "unstated by the model",
    }


# A session's template (`Translator._template`): its own values are stand-ins while the
# builders make its two lines, which are then cut where each stand-in was. A stand-in is a
# private-use character and a letter. Quoted, the JSON string it became is cut out (a number,
# or a value encoded whole, goes there); unquoted, only its text (inside a string the line
# has). An answer's usage, finish reason and elapsed time follow each other in its payload:
# one cut, where the three go encoded as one object without its braces.
_HOLE = "\ue000"
_HOLE_BYTES = _HOLE.encode()
_CUTS = tuple(
    stand_in.replace(b"@", _HOLE_BYTES)
    for stand_in in (
        b"@a",  # query: id's seq
        b"@b",  # timestamp
        b'"@c"',  # seq
        b'"@d"',  # content (the prompt)
        b'"@e"',  # payload.step
        b"@g",  # answer: id's seq
        b"@h",  # timestamp
        b'"@i"',  # seq
        b'"@j"',  # content (the answer's text)
        b"@k",  # provenance's step:
        b"@l",  # refers_to's seq (the query)
        b'"@m"',  # payload.step
        b'"@q"',  # payload.binding (a name, or null)
        b'"usage":"@n","finish_reason":"@o","elapsed":"@p"',
    )
)
_UNMADE: Any = object()  # a key whose template was never tried
_TEMPLATES = 256  # at most this many a run; a run with more distinct statements builds the rest
_dumps = orjson.dumps
# A session's request and response as the VM records them (`calls.py`); one without one of
# these keys is built message by message.
_REQUEST = itemgetter("messages", "system", "model")
_RESPONSE = itemgetter("text", "usage", "finish_reason", "model")


# A value the trail shows as a digest: over this many bytes of JSON, or named like a secret.
LARGE_VALUE = 4096
_SECRET = re.compile(r"(?i)(secret|passw|token|api[_-]?key|credential|private[_-]?key)")


def shown_value(name: str, value: Any) -> Any:
    """A run's input or output as the trail shows it: the value itself, or its SHA-256
    digest (of the value's JSON, as orjson writes it) and size when it is large or its name
    says it is a secret (a digest lets a reviewer check it against the run folder)."""
    data = orjson.dumps(value)
    secret = bool(_SECRET.search(name))
    if not secret and len(data) <= LARGE_VALUE:
        return value
    digest: dict[str, Any] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    if secret:
        digest["secret"] = True
    return {"digest": digest}


def shown_values(values: Any) -> dict[str, Any] | None:
    """`shown_value` of each of a run's named values (None: the event has none)."""
    if not isinstance(values, dict):
        return None
    return {str(name): shown_value(str(name), value) for name, value in values.items()}


def _details(step: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    """An event's fields (`codec.fields_of`) as a payload, its step first (as its journal
    line has them)."""
    return {"step": step, **fields}


def _agent_name(agent: object, alias: object) -> str:
    if agent:
        return str(agent)
    return f"model:{alias}" if alias else "model"


def encode(message: Message) -> bytes:
    """One NDJSON line; a message the VLP validator refuses is a bug here, never written."""
    if not is_surely_valid(message):
        problems = message_problems(message)
        if problems:
            raise VLPError(problems)
    return orjson.dumps(message, option=_LINE)

"""VLP answers from models: ask a question, get back a valid VLP/1.1 message.

The model writes the assertion (content, confidence, provenance, keywords, safety); this
module owns the envelope it cannot know (id, protocol, timestamp, sender, type, refers_to,
session_id). The whole message is then checked by the package's own validator; a message
with problems goes back to the model once, with the problems named, and is checked again.

On the embedded `local` provider decoding is constrained to `answer_schema()` (built from
the package's JSON Schema), so the reply is always readable JSON of the right shape and the
truth-serum rule on high confidence is part of the grammar. Hosted providers follow the
instruction in the prompt.

The provider layer (openprose.providers) is imported only when a question is asked, so
`import vlp` stays free of it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from vlp.errors import Problem
from vlp.message import new_message_id, utc_timestamp
from vlp.schema import MESSAGE_TYPES, PROTOCOL, load_schema
from vlp.validate import json_problems, message_problems

if TYPE_CHECKING:
    from openprose.providers.base import Provider

__all__ = ["ANSWER_FIELDS", "Answer", "Attempt", "answer_schema", "ask", "ask_async"]

#: The fields the model writes; everything else in the message is the caller's.
ANSWER_FIELDS = ("content", "confidence", "provenance", "keywords", "safety")
#: Types a model can answer as. A session_context persists a session: not a model's answer.
ASKABLE_TYPES = tuple(t for t in MESSAGE_TYPES if t != "session_context")
DEFAULT_MAX_TOKENS = 600
MAX_REASKS = 1
# Bounds that keep a small model from running out of tokens inside a string or a list.
_CONTENT_CHARS = 700
_ITEM_CHARS = 80
_MAX_ITEMS = 5
_HIGH_CONFIDENCE = 0.9  # the truth serum's threshold (VLP204)
_CONFIDENCE_STEP = 0.05
_OBJECT = re.compile(r"\{.*\}", re.DOTALL)

SYSTEM = """\
You answer as one VLP/1.1 message: a single JSON object and nothing else, with fields
  "content": your answer, in plain sentences;
  "confidence": a number from 0 to 1, how sure you are;
  "provenance": the sources your answer rests on (strings), [] if none;
  "keywords": up to 5 short keywords;
  "safety": {"level": "safe"}, or "review" when a human should check it before anyone acts
            on it, or "block" when nobody should act on it.
Truth serum: a confidence of 0.9 or more needs at least one provenance item or safety level
"review". Do not claim more certainty than you have.
Example: {"content": "Paris is the capital of France.", "confidence": 0.8,
"provenance": [], "keywords": ["France", "capital"], "safety": {"level": "safe"}}"""


@dataclass(frozen=True, slots=True)
class Attempt:
    """One reply of the model and what was wrong with it (nothing, when it was accepted)."""

    text: str
    problems: tuple[Problem, ...] = ()


@dataclass(frozen=True, slots=True)
class Answer:
    """The accepted message (None when every attempt had problems) and every attempt made."""

    message: dict[str, Any] | None
    attempts: tuple[Attempt, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return self.message is not None

    @property
    def problems(self) -> tuple[Problem, ...]:
        """The last attempt's problems: why there is no message."""
        return self.attempts[-1].problems if self.attempts else ()


def answer_schema(message_type: str = "claim") -> dict[str, Any]:
    """The JSON Schema of the model's part of a message, from the package's own schema.

    The truth serum's rule on high confidence is written into it as two alternatives:
    confidence below 0.9, or provenance with at least one item. Confidence is a step of
    0.05 within the schema's range: grammar-constrained decoders enforce enums but not
    number ranges, and a model's certainty is no finer than that anyway."""
    props = load_schema()["properties"]
    provenance_item = {**props["provenance"]["items"]["oneOf"][0], "maxLength": _ITEM_CHARS}
    base: dict[str, Any] = {
        "content": {"type": "string", "minLength": 1, "maxLength": _CONTENT_CHARS},
        "keywords": {
            "type": "array",
            "items": {"type": "string", "minLength": 1, "maxLength": _ITEM_CHARS},
            "maxItems": _MAX_ITEMS,
        },
        "safety": {
            "type": "object",
            "properties": {"level": props["safety"]["properties"]["level"]},
            "required": ["level"],
        },
    }
    low, high = props["confidence"]["minimum"], props["confidence"]["maximum"]
    steps = [round(low + i * _CONFIDENCE_STEP, 2) for i in range(_steps(low, high) + 1)]
    modest = {
        **base,
        "confidence": {"enum": [step for step in steps if step < _HIGH_CONFIDENCE]},
        "provenance": {"type": "array", "items": provenance_item, "maxItems": _MAX_ITEMS},
    }
    sourced = {
        **base,
        "confidence": {"enum": steps},
        "provenance": {
            "type": "array",
            "items": provenance_item,
            "minItems": 1,
            "maxItems": _MAX_ITEMS,
        },
    }
    required = ["content", "confidence", "provenance", "keywords", "safety"]
    # Evidence always needs provenance (VLP202): only the sourced shape is open to it.
    shapes = [sourced] if message_type == "evidence" else [modest, sourced]
    return {
        "anyOf": [
            {"type": "object", "properties": _ordered(shape, required), "required": required}
            for shape in shapes
        ]
    }


def _steps(low: float, high: float) -> int:
    return round((high - low) / _CONFIDENCE_STEP)


def _ordered(props: dict[str, Any], order: list[str]) -> dict[str, Any]:
    # Constrained decoders emit properties in the schema's order: content before confidence.
    return {name: props[name] for name in order}


def ask(provider: Provider | str | None, question: str, **options: Any) -> Answer:
    """Ask `question`; see `ask_async` for the options. `provider` may be a Provider or a
    provider name (`local`, `openai`, ...; None: the configured one), opened and closed here."""
    import asyncio  # here: importing vlp (and `vlp validate`) should not pay for asyncio

    return asyncio.run(ask_async(provider, question, **options))


async def ask_async(
    provider: Provider | str | None,
    question: str,
    *,
    type: str = "claim",
    model: str | None = None,
    sender: str | None = None,
    refers_to: str | Sequence[str] | None = None,
    session_id: str | None = None,
    context: Sequence[dict[str, Any]] = (),
    max_reasks: int = MAX_REASKS,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    temperature: float | None = None,
) -> Answer:
    """The model's answer to `question` as a VLP message of `type`.

    `context` messages (e.g. the one a correction refers to) are shown to the model as JSON.
    A reply with problems is sent back once (`max_reasks`) with the problems named; the
    Answer records every attempt. Provider failures propagate as ProviderError."""
    if type not in ASKABLE_TYPES:
        raise ValueError(f"type must be one of {', '.join(ASKABLE_TYPES)}, got {type!r}")
    if isinstance(provider, str) or provider is None:
        from openprose.providers.selection import open_model

        choice = open_model(provider, model)
        try:
            return await _ask(
                choice.provider,
                choice.model,
                question,
                _Envelope(type, sender or choice.model, refers_to, session_id),
                context,
                max_reasks,
                max_tokens,
                temperature,
            )
        finally:
            await choice.provider.aclose()
    if model is None:
        raise ValueError("give model=: the model id this provider should answer with")
    envelope = _Envelope(type, sender or model, refers_to, session_id)
    return await _ask(
        provider, model, question, envelope, context, max_reasks, max_tokens, temperature
    )


@dataclass(frozen=True, slots=True)
class _Envelope:
    type: str
    sender: str
    refers_to: str | Sequence[str] | None
    session_id: str | None

    def wrap(self, answer: dict[str, Any]) -> dict[str, Any]:
        msg: dict[str, Any] = {
            "id": new_message_id(),
            "protocol": PROTOCOL,
            "type": self.type,
            "timestamp": utc_timestamp(),
            "sender": self.sender,
        }
        if self.session_id is not None:
            msg["session_id"] = self.session_id
        if self.refers_to is not None:
            msg["refers_to"] = (
                self.refers_to if isinstance(self.refers_to, str) else list(self.refers_to)
            )
        msg.update((key, answer[key]) for key in ANSWER_FIELDS if key in answer)
        return msg


async def _ask(
    provider: Provider,
    model: str,
    question: str,
    envelope: _Envelope,
    context: Sequence[dict[str, Any]],
    max_reasks: int,
    max_tokens: int,
    temperature: float | None,
) -> Answer:
    from openprose.providers.base import Message, ModelRequest

    messages = [Message("user", _question_text(question, envelope.type, context))]
    schema = answer_schema(envelope.type)
    attempts: list[Attempt] = []
    for _ in range(max_reasks + 1):
        request = ModelRequest(
            model=model,
            messages=tuple(messages),
            system=SYSTEM,
            max_tokens=max_tokens,
            temperature=temperature,
            response_schema=schema,
        )
        reply = (await provider.complete(request)).text
        message, problems = _read(reply, envelope)
        attempts.append(Attempt(reply, tuple(problems)))
        if message is not None and not problems:
            return Answer(message, tuple(attempts))
        messages += [Message("assistant", reply), Message("user", _reask_text(problems))]
    return Answer(None, tuple(attempts))


def _question_text(question: str, message_type: str, context: Sequence[dict[str, Any]]) -> str:
    shown = "".join(
        f"\n{json.dumps(msg, ensure_ascii=False)}" for msg in context if isinstance(msg, dict)
    )
    where = f"\n\nEarlier messages of the thread:{shown}" if shown else ""
    return f"Answer as a VLP {message_type} message.{where}\n\nQuestion: {question}"


def _reask_text(problems: Sequence[Problem]) -> str:
    listed = "\n".join(f"- {p.code} {p.message}" for p in problems)
    return (
        "That message is not valid VLP/1.1:\n"
        f"{listed}\n"
        "Reply again with only the corrected JSON object."
    )


def _read(reply: str, envelope: _Envelope) -> tuple[dict[str, Any] | None, list[Problem]]:
    """The message a reply makes, and its problems (validator's and JSON's)."""
    answer = _json_object(reply)
    if answer is None:
        return None, [Problem("VLP001", "the reply is not a JSON object")]
    message = envelope.wrap(answer)
    return message, message_problems(message) or json_problems(message)


def _json_object(text: str) -> dict[str, Any] | None:
    """The JSON object in a reply: the whole text, or the outermost {...} in it (models wrap
    JSON in code fences or a sentence)."""
    for candidate in (text.strip(), *(m.group(0) for m in [_OBJECT.search(text)] if m)):
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None

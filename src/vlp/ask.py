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

from vlp.answer_grammar import CONTENT_CHARS, ITEM_CHARS, MAX_ITEMS, answer_grammar
from vlp.ask_options import ASKABLE_TYPES, MAX_REASKS
from vlp.errors import Problem
from vlp.message import new_message_id, utc_timestamp
from vlp.safety_rule import LEVELS, SafetyFloor, at_least, safety_floor
from vlp.schema import PROTOCOL, load_schema
from vlp.validate import json_problems, message_problems

if TYPE_CHECKING:
    from openprose.providers.base import Provider

__all__ = ["ANSWER_FIELDS", "Answer", "Attempt", "answer_schema", "ask", "ask_async"]

#: The fields the model writes; everything else in the message is the caller's.
ANSWER_FIELDS = ("content", "confidence", "provenance", "keywords", "safety")
DEFAULT_MAX_TOKENS = 600
_OBJECT = re.compile(r"\{.*\}", re.DOTALL)

SYSTEM = """\
You answer as one VLP/1.1 message: a single JSON object and nothing else, with fields
  "content": your answer to the question, in plain sentences;
  "confidence": how likely your answer is right, a number from 0 to 1 that you judge for
                this question and this answer: low when unsure, high only when you know;
  "provenance": the sources your answer rests on, at least one: where you know it from;
  "keywords": up to 5 short keywords of the question;
  "safety": {"level": LEVEL}, LEVEL being "safe" when acting on your answer can harm
            nobody, "review" when a human should check it before anyone acts on it, or
            "block" when nobody should act on it.
Truth serum: do not claim more certainty than you have."""


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


def answer_schema(message_type: str = "claim", levels: Sequence[str] = LEVELS) -> dict[str, Any]:
    """The JSON Schema of the model's part of a message, from the package's own schema: what
    hosted providers are asked for, and what `answer_grammar` lets the embedded model write.

    Provenance has at least one item (the model must say where its answer comes from, which
    also meets the truth serum's rule on high confidence and evidence's VLP202); the safety
    level is one of `levels`, those the runtime's rule allows (`safety_rule`)."""
    if message_type not in ASKABLE_TYPES:
        raise ValueError(f"type must be one of {', '.join(ASKABLE_TYPES)}, got {message_type!r}")
    props = load_schema()["properties"]
    item = {"type": "string", "minLength": 1, "maxLength": ITEM_CHARS}
    listed = {"type": "array", "items": item, "minItems": 1, "maxItems": MAX_ITEMS}
    confidence = props["confidence"]
    shape: dict[str, Any] = {
        "content": {"type": "string", "minLength": 1, "maxLength": CONTENT_CHARS},
        "confidence": {
            "type": "number",
            "minimum": confidence["minimum"],
            "maximum": confidence["maximum"],
        },
        "provenance": listed,
        "keywords": listed,
        "safety": {
            "type": "object",
            "properties": {"level": {"enum": list(levels)}},
            "required": ["level"],
        },
    }
    required = list(ANSWER_FIELDS)
    return {"type": "object", "properties": shape, "required": required}


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

    floor = safety_floor(question)
    messages = [Message("user", _question_text(question, envelope.type, context, floor))]
    schema = answer_schema(envelope.type, floor.allowed)
    grammar = answer_grammar(floor.allowed)
    attempts: list[Attempt] = []
    for _ in range(max_reasks + 1):
        request = ModelRequest(
            model=model,
            messages=tuple(messages),
            system=SYSTEM,
            max_tokens=max_tokens,
            temperature=temperature,
            response_schema=schema,
            grammar=grammar,
        )
        reply = (await provider.complete(request)).text
        message, problems = _read(reply, envelope, question)
        attempts.append(Attempt(reply, tuple(problems)))
        if message is not None and not problems:
            return Answer(message, tuple(attempts))
        messages += [Message("assistant", reply), Message("user", _reask_text(problems))]
    return Answer(None, tuple(attempts))


def _question_text(
    question: str,
    message_type: str,
    context: Sequence[dict[str, Any]],
    floor: SafetyFloor | None = None,
) -> str:
    shown = "".join(
        f"\n{json.dumps(msg, ensure_ascii=False)}" for msg in context if isinstance(msg, dict)
    )
    where = f"\n\nEarlier messages of the thread:{shown}" if shown else ""
    caution = ""
    if floor is not None and floor.risks:
        caution = (
            f"\n\nThis question involves {', '.join(r.replace('-', ' ') for r in floor.risks)}:"
            f" the safety level must be {' or '.join(floor.allowed)}."
        )
    return f"Answer as a VLP {message_type} message.{where}{caution}\n\nQuestion: {question}"


def _reask_text(problems: Sequence[Problem]) -> str:
    listed = "\n".join(f"- {p.code} {p.message}" for p in problems)
    return (
        "That message is not valid VLP/1.1:\n"
        f"{listed}\n"
        "Reply again with only the corrected JSON object."
    )


def _read(
    reply: str, envelope: _Envelope, question: str = ""
) -> tuple[dict[str, Any] | None, list[Problem]]:
    """The message a reply makes, and its problems (validator's and JSON's)."""
    answer = _json_object(reply)
    if answer is None:
        return None, [Problem("VLP001", "the reply is not a JSON object")]
    message = envelope.wrap(answer)
    _hold_to_floor(message, question)
    return message, message_problems(message) or json_problems(message)


def _hold_to_floor(message: dict[str, Any], question: str) -> None:
    """Raise a safety level laxer than the rule's floor for the question and the answer
    (hosted models are only asked to keep to it), naming the risks as safety issues."""
    safety = message.get("safety")
    content = message.get("content")
    if not isinstance(safety, dict):
        return
    floor = safety_floor(question, content if isinstance(content, str) else "")
    if at_least(safety.get("level"), floor) or safety.get("level") not in LEVELS:
        return
    earlier = safety.get("issues")
    issues = [*(earlier if isinstance(earlier, list) else [])]
    issues += [
        {"code": f"rule:{risk}", "detail": "level set by the runtime's safety rule"}
        for risk in floor.risks
    ]
    message["safety"] = {**safety, "level": floor.level, "issues": issues}


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

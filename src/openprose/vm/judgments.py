"""AI judgments: `**conditions**`, `choice` and `filter` verdicts as structured model calls.

The evaluator must answer JSON — `{"verdict": true|false, "reason": "..."}` for a condition or
filter, `{"option": "Label", "reason": "..."}` for a choice. Parsing is forgiving (code fences,
prose around the object, yes/no words, option numbers); a reply that still cannot be read is
asked for once more, and a second failure is the caller's runtime error.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

SYSTEM = (
    "You are the evaluator of an OpenProse program run. You judge one question from the "
    "context you are given and reply with a single JSON object and nothing else."
)

# The answers' shapes, also sent as the request's `response_schema` so that a provider able
# to constrain decoding (the embedded local model) can only produce a readable answer. The
# reason is bounded so that a small model cannot run out of tokens inside the string.
_REASON: dict[str, Any] = {"type": "string", "maxLength": 160}
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"verdict": {"type": "boolean"}, "reason": _REASON},
    "required": ["verdict", "reason"],
}


def selection_schema(labels: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"option": {"enum": list(dict.fromkeys(labels))}, "reason": _REASON},
        "required": ["option", "reason"],
    }


_YES = {"true", "yes", "y", "1", "keep", "satisfied", "pass"}
_NO = {"false", "no", "n", "0", "drop", "unsatisfied", "fail"}
_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Verdict:
    value: bool
    reason: str


@dataclass(frozen=True, slots=True)
class Selection:
    index: int
    label: str
    reason: str


def condition_question(condition: str, context: str) -> str:
    return (
        f"Condition: {condition}\n\nIs this condition true given the context below? Reply "
        'with JSON: {"verdict": true or false, "reason": "one line"}\n\n'
        f"## Context\n{context or '(nothing yet)'}"
    )


def filter_question(answer: str, item: str) -> str:
    return (
        "Filter verdict: a session was asked whether to keep an item. Does its answer mean "
        'yes, keep it? Reply with JSON: {"verdict": true or false, "reason": "one line"}\n\n'
        f"## Item\n{item}\n\n## Answer\n{answer}"
    )


def choice_question(criteria: str, labels: list[str], context: str) -> str:
    options = "\n".join(f"{i + 1}. {label}" for i, label in enumerate(labels))
    return (
        f"Choice: {criteria}\n\nPick exactly one option, given the context below. Reply with "
        'JSON: {"option": "the exact label", "reason": "one line"}\n\n'
        f"## Options\n{options}\n\n## Context\n{context or '(nothing yet)'}"
    )


def reask(question: str) -> str:
    return (
        "Your reply could not be read. Answer again with only the JSON object asked for.\n\n"
        + question
    )


def parse_verdict(text: str) -> Verdict | None:
    data = _json_object(text)
    if data is not None:
        for key in ("verdict", "answer", "result", "value", "keep"):
            if key in data:
                value = _truth(data[key])
                if value is not None:
                    return Verdict(value, str(data.get("reason", "")).strip())
        return None
    value = _truth(text)
    return None if value is None else Verdict(value, "")


def parse_selection(text: str, labels: list[str]) -> Selection | None:
    data = _json_object(text)
    raw: object = text
    reason = ""
    if data is not None:
        raw = next((data[k] for k in ("option", "choice", "label", "answer") if k in data), None)
        reason = str(data.get("reason", "")).strip()
    if isinstance(raw, bool) or raw is None:
        return None
    if isinstance(raw, int | float):
        number = int(raw)
        return (
            Selection(number - 1, labels[number - 1], reason)
            if 1 <= number <= len(labels)
            else None
        )
    wanted = _norm(str(raw))
    for index, label in enumerate(labels):
        if _norm(label) == wanted:
            return Selection(index, label, reason)
    if wanted.isdigit() and 1 <= int(wanted) <= len(labels):
        return Selection(int(wanted) - 1, labels[int(wanted) - 1], reason)
    return None


def literal_verdict(answer: str) -> bool | None:
    """A filter answer that is plainly yes or no needs no evaluator call."""
    return _truth(answer)


def _json_object(text: str) -> dict[str, object] | None:
    match = _OBJECT.search(text)
    if match is None:
        return None
    try:
        data = json.loads(match.group(0))
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _truth(value: object) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = _norm(value)
        if word in _YES:
            return True
        if word in _NO:
            return False
    return None


def _norm(text: str) -> str:
    return re.sub(r"[\s\"'`.!*]+", " ", text).strip().lower()

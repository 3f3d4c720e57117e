"""Expectations against what a run did: each check gives None (it holds) or a failure message
that says what was expected and what was found."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

from openprose.testing.observe import Observed
from openprose.testing.spec import Expectation

__all__ = ["Judge", "Missing", "check_expectation", "subject_value"]

SHOWN_CHARS = 200  # of a value quoted in a failure message

# Asks the evaluator model whether `criterion` holds of `text`: (verdict, reason).
Judge = Callable[[str, str], Awaitable[tuple[bool, str]]]


class Missing(Exception):
    """The subject has no value in this run (an output the program did not produce)."""


def subject_value(seen: Observed, subject: str) -> Any:
    head, _, name = subject.partition(".")
    if head in ("output", "binding"):
        table: dict[str, Any] = seen.outputs if head == "output" else dict(seen.bindings)
        if name not in table:
            known = ", ".join(sorted(table)) or "none"
            raise Missing(f"the run has no {head} `{name}` (its {head}s: {known})")
        return table[name]
    if subject == "result" and seen.result is None:
        raise Missing("the run has no result (a program with outputs: use `output.NAME`)")
    return getattr(seen, subject)


async def check_expectation(
    expectation: Expectation, seen: Observed, judge: Judge | None
) -> list[str]:
    """The failure messages of one expectation (empty when it holds)."""
    try:
        value = subject_value(seen, expectation.of)
    except Missing as missing:
        return [f"{expectation.of}: {missing}"]
    failures = []
    for kind, expected in expectation.checks:
        if kind == "judged":
            problem = await _judged(value, expected, judge)
        else:
            problem = CHECKERS[kind](value, expected)
        if problem is not None:
            failures.append(f"{expectation.of}: {problem}")
    return failures


def shown(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = repr(text) if isinstance(value, str) else text
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _equals(value: Any, expected: Any) -> str | None:
    same = (
        value.strip() == expected.strip()
        if isinstance(value, str) and isinstance(expected, str)
        else value == expected
    )
    return None if same else f"expected {shown(expected)}, got {shown(value)}"


def _contains(value: Any, expected: str) -> str | None:
    if isinstance(value, list):
        if expected in value:
            return None
        return f"expected a list holding {shown(expected)}, got {shown(value)}"
    if expected in _as_text(value):
        return None
    return f"expected text containing {shown(expected)}, got {shown(value)}"


def _regex(value: Any, pattern: str) -> str | None:
    items = value if isinstance(value, list) else [value]
    if any(re.search(pattern, _as_text(item)) for item in items):
        return None
    return f"expected a match for /{pattern}/, got {shown(value)}"


def _parsed(value: Any) -> Any:
    """A text answer holding JSON (perhaps in a ```json fence) as its value."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*\n(.*)\n```", text, re.DOTALL)
    if fenced:
        text = fenced.group(1)
    try:
        return json.loads(text)
    except ValueError:
        return value


def _schema(value: Any, schema: dict[str, Any]) -> str | None:
    import jsonschema  # type: ignore[import-untyped,unused-ignore]  # only a schema check pays

    validator_class = jsonschema.validators.validator_for(schema)
    try:
        validator_class.check_schema(schema)
    except jsonschema.SchemaError as bad:
        return f"the schema itself is not valid: {bad.message}"
    errors = sorted(validator_class(schema).iter_errors(_parsed(value)), key=lambda e: e.path)
    if not errors:
        return None
    first = errors[0]
    where = (
        "".join(f"[{p!r}]" if isinstance(p, str) else f"[{p}]" for p in first.path) or "the value"
    )
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"does not match the schema: {where}: {first.message}{more}"


def _measure(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value
    if isinstance(value, list):
        return len(value)
    return None


def _at_least(value: Any, bound: float) -> str | None:
    measure = _measure(value)
    if measure is None:
        return f"at_least needs a number or a list, got {shown(value)}"
    return None if measure >= bound else f"expected at least {bound}, got {measure}"


def _at_most(value: Any, bound: float) -> str | None:
    measure = _measure(value)
    if measure is None:
        return f"at_most needs a number or a list, got {shown(value)}"
    return None if measure <= bound else f"expected at most {bound}, got {measure}"


async def _judged(value: Any, criterion: str, judge: Judge | None) -> str | None:
    if judge is None:
        return f"cannot judge **{criterion}**: no evaluator for this case"
    verdict, reason = await judge(_as_text(value), criterion)
    if verdict:
        return None
    because = f": {reason}" if reason else ""
    return f"the evaluator judged **{criterion}** false{because}; the value: {shown(value)}"


CHECKERS: dict[str, Callable[[Any, Any], str | None]] = {
    "equals": _equals,
    "contains": _contains,
    "regex": _regex,
    "schema": _schema,
    "at_least": _at_least,
    "at_most": _at_most,
}

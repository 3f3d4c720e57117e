"""Typed results at run time: the schema a session asks for, its answer checked against it.

A session with `returns:` (or the session an `output name: shape =` binds) sends its shape
as the request's `response_schema` with `structured` set: OpenAI and Anthropic use their
native structured output, the local model decodes inside the schema's grammar. The answer
is decoded and validated; an invalid one is asked again once, with what was wrong (a model
call journaled as `<step>~typed`, so a resumed run is served it); a second invalid answer
is a `SessionFailed` the program may catch. The value bound is the decoded JSON (dicts,
lists...), which `{review.severity}`, `context:`, outputs.json and `--json` read as such.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openprose import nodes as n
from openprose.shapes import (
    ShapeError,
    decode_answer,
    fill_optional,
    json_schema,
    problems,
)

RETRY_SUFFIX = "~typed"  # the step of the one re-ask of an invalid typed answer


@dataclass(frozen=True, slots=True)
class Typed:
    """A session's declared shape and the JSON Schema it stands for."""

    shape: n.Shape
    schema: dict[str, Any]

    def instruction(self) -> str:
        """What the task adds, so that any model knows the form (native modes enforce it)."""
        return (
            "Answer with JSON only (no prose around it), matching this JSON Schema:\n"
            + json.dumps(self.schema, ensure_ascii=False)
        )

    def read(self, text: str) -> tuple[Any, list[str]]:
        """The answer's value, and what is wrong with it (empty when it is valid)."""
        try:
            value = decode_answer(text)
        except ValueError as exc:
            return None, [f"the answer is not JSON ({exc})"]
        found = problems(value, self.schema)
        if found:
            return None, found
        return fill_optional(value, self.shape), []

    def reask(self, found: list[str]) -> str:
        listed = "\n".join(f"- {problem}" for problem in found)
        return (
            "Your answer does not match the required JSON Schema:\n"
            f"{listed}\n"
            "Answer again with JSON only, matching the schema."
        )


def typed_of(shape: n.Shape | None, program_path: str) -> Typed | None:
    """The shape with its schema (a schema file is read relative to the program)."""
    if shape is None:
        return None
    base = None if program_path.startswith("<") else Path(program_path).parent
    try:
        return Typed(shape, json_schema(shape, base))
    except ShapeError as problem:  # the checker reports it first (E180); a run may not
        raise ValueError(f"unusable shape: {problem}") from None


def check_output(value: Any, typed: Typed) -> tuple[Any, list[str]]:
    """An output's value against its declared shape: a value already typed is checked as it
    is; an answer in text is decoded first."""
    if isinstance(value, str):
        return typed.read(value)
    found = problems(value, typed.schema)
    return (None, found) if found else (value, [])

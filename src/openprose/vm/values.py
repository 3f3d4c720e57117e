"""Run-time values and how they are shown to a model.

Values are plain Python data: `str` (session answers, literals), `int`/`float`, `list`
(collections, loop and pipeline results) and `dict` (object context, named parallel results).
Wrappers carry more meaning: `ErrorValue` (the `err` of `catch as err`), `ProgramResult`
(what an invoked program returns: its outputs, by name) and `Absent` (a name with no answer:
a race loser, an ignored failure, a binding whose statement never ran).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

Value = Any


@dataclass(frozen=True, slots=True)
class ErrorValue:
    message: str
    kind: str = "error"
    where: str = ""

    def attribute(self, name: str) -> Value:
        if name in ("message", "kind", "where"):
            return getattr(self, name)
        if name == "location":
            return self.where
        raise KeyError(name)

    def __str__(self) -> str:
        where = f" at {self.where}" if self.where else ""
        return f"{self.kind} error{where}: {self.message}"


@dataclass(frozen=True, slots=True)
class Absent:
    """No answer, and why — shown to a model as its note (e.g. "(cancelled)")."""

    note: str

    def __str__(self) -> str:
        return self.note

    @classmethod
    def cancelled(cls) -> Absent:
        """A race loser: its branch was cancelled once the race was decided."""
        return cls("(cancelled)")

    @classmethod
    def failed(cls, message: str) -> Absent:
        """A failure the program chose to ignore (`on-fail: "ignore"`)."""
        return cls(f"(failed: {message})")

    @classmethod
    def unbound(cls, name: str) -> Absent:
        """A name bound only in a body that did not run."""
        return cls(f"({name} is unbound: the statement that binds it did not run)")


@dataclass(frozen=True, slots=True)
class ProgramResult:
    program: str
    outputs: dict[str, Value] = field(default_factory=dict)


def render(value: Value) -> str:
    """The text a model sees for a value."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, ErrorValue | Absent):
        return str(value)
    if isinstance(value, ProgramResult):
        return render(value.outputs)
    if isinstance(value, list | tuple):
        return "\n\n".join(f"[{i + 1}] {render(v)}" for i, v in enumerate(value))
    if isinstance(value, dict):
        return "\n\n".join(f"{k}:\n{render(v)}" for k, v in value.items())
    return str(value)


def render_chunks(value: Value) -> Iterator[str]:
    """`render(value)` in pieces whose concatenation is exactly its text: a binding file of a
    100,000-item list is written piece by piece, never built whole. Lazy: a container is read
    when the pieces are taken (the VM never changes a value once it is bound)."""
    if isinstance(value, ProgramResult):
        value = value.outputs
    if isinstance(value, list | tuple):
        for i, item in enumerate(value):
            head = f"\n\n[{i + 1}] " if i else "[1] "
            if isinstance(item, str):
                yield head + item  # the common case (a fan-out's answers): one piece an item
            else:
                yield head
                yield from render_chunks(item)
    elif isinstance(value, dict):
        for i, (key, item) in enumerate(value.items()):
            yield f"\n\n{key}:\n" if i else f"{key}:\n"
            yield from render_chunks(item)
    else:
        yield render(value)


def to_json(value: Value) -> Any:
    """A JSON-ready form (outputs.json, `--json`, the journal)."""
    # a tuple, not `str | int | ...`: isinstance with a union is ~6x slower (every value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, ErrorValue):
        return {"error": value.message, "kind": value.kind, "where": value.where}
    if isinstance(value, Absent):
        return value.note
    if isinstance(value, ProgramResult):
        return {k: to_json(v) for k, v in value.outputs.items()}
    if isinstance(value, list):
        if all(v is None or type(v) in _JSON_SCALARS for v in value):
            return value  # already JSON (a fan-out's answers): shared, not copied
        return [to_json(v) for v in value]
    if isinstance(value, tuple):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    return str(value)


# exact types: a list holding anything else (a str subclass too) is converted item by item
_JSON_SCALARS = frozenset((str, int, float, bool))


def as_collection(value: Value) -> list[Value]:
    """What `for` and pipelines iterate over. A JSON array in a string counts as a list, so a
    session answering `["a", "b"]` can feed a loop — also inside a Markdown code fence, as
    chat models often answer; any other text is one item."""
    if isinstance(value, list):
        return value  # read, never changed, by its callers: a copy would double a big list
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, dict):
        return list(value.values())
    if isinstance(value, ProgramResult):
        return list(value.outputs.values())
    if isinstance(value, str):
        text = _unfenced(value.strip())
        if text.startswith("["):
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = None
            if isinstance(parsed, list):
                return parsed
        return [value]
    return [value]


_FENCE = re.compile(r"```[\w+-]*[ \t]*\r?\n(.*?)\r?\n[ \t]*```", re.DOTALL)


def _unfenced(text: str) -> str:
    """The body of a text that is one Markdown code fence and nothing else."""
    if not text.startswith("```"):
        return text
    match = _FENCE.fullmatch(text)
    return match.group(1).strip() if match else text

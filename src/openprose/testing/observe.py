"""What a case's run did, read back from its run folder: the values expectations look at."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openprose.record.codec import EventDamaged, decode
from openprose.record.events import PermissionDecided, QuestionAsked, SessionStarted, ToolCalled
from openprose.record.journal import JOURNAL_FILE, read_journal

__all__ = ["Observed", "observe"]

USED = ("allowed", "approved")  # permission decisions that let the action happen
BINDING_SEPARATOR = "\n---\n\n"  # between a binding file's header and its value


@dataclass(slots=True)
class Observed:
    status: str
    error: str | None = None
    result: str | None = None
    outputs: dict[str, Any] = field(default_factory=dict)
    bindings: dict[str, str] = field(default_factory=dict)
    sessions: int = 0  # sessions run (not a tool loop's later turns, judgments, memory)
    judgments: int = 0  # questions asked of the evaluator (conditions, choices, filters)
    tool_calls: int = 0
    tokens: int = 0
    cost: float = 0.0
    permissions: list[str] = field(default_factory=list)  # `kind action` of each use allowed
    questions: list[str] = field(default_factory=list)  # the text of each `ask` asked, in order


def observe(run: Any) -> Observed:
    """The observed values of a finished run (a `RunResult`)."""
    usage = run.usage or {}
    seen = Observed(
        status=run.status,
        error=run.error,
        result=run.result,
        outputs=dict(run.outputs or {}),
        tokens=int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0)),
        cost=float(usage.get("cost_usd") or 0.0),
    )
    run_dir = Path(run.run_dir)
    permissions: set[str] = set()
    for record in read_journal(run_dir / JOURNAL_FILE):
        try:
            event = decode(record).event
        except EventDamaged:
            continue  # a line the run itself could not have used either
        match event:
            case SessionStarted(kind="session"):
                seen.sessions += 1
            case SessionStarted(kind="judgment"):
                seen.judgments += 1
            case ToolCalled():
                seen.tool_calls += 1
            case QuestionAsked(question=question):
                seen.questions.append(question)
            case PermissionDecided(decision=decision) if decision in USED:
                permissions.add(f"{event.kind} {event.action}")
    seen.permissions = sorted(permissions)
    bindings = run_dir / "bindings"
    if bindings.is_dir():
        for path in sorted(bindings.glob("*.md")):
            text = path.read_text(encoding="utf-8")
            _, _, value = text.partition(BINDING_SEPARATOR)
            seen.bindings[path.stem] = value.removesuffix("\n")
    return seen

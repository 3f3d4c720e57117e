"""Answers to a waiting run's approval requests (`prose approve` / `prose deny`, the web
view, the API), and which recorded answers a resume may trust.

A run whose agent needed a `prompt` permission and had nobody to ask stops as `waiting`
with an `approval_requested` event in its journal. An answer is appended as an
`approval_decided` event sealed with the user's approval key (`tools.approval_seal`): the
seal binds it to this run, the request id, the kind, the exact action and the answer.
`prose resume` serves only answers whose seal holds; any other answer line (appended by
an agent, copied from another run, altered) is ignored and reported.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openprose.record.approval_seal import (
    ANSWERS,
    KeyUnavailable,
    answer_problem,
    approval_key,
    grant_problem,
    seal_answer,
)
from openprose.record.codec import encode
from openprose.record.events import ApprovalDecided
from openprose.record.journal import JOURNAL_FILE, read_journal
from openprose.vm.runtime import ToolTurns
from openprose.vm.tools.approvals import RecordedAnswer

__all__ = [
    "ANSWERS",
    "ApprovalError",
    "Honoured",
    "Ignored",
    "decide_pending",
    "honoured_answers",
    "pending_requests",
    "run_id_of",
]


class ApprovalError(Exception):
    """Nothing to answer, or an answer that names no pending request."""


@dataclass(frozen=True, slots=True)
class Ignored:
    """A recorded answer or grant a resume does not use, and why."""

    id: str  # the request id ("" for a grant)
    what: str  # e.g. `answer run to <id> (bash curl …)`
    why: str

    def describe(self) -> str:
        return f"ignored the {self.what}: {self.why}"


@dataclass(slots=True)
class Honoured:
    """The answers and grants of a run whose seals hold, and those that were ignored."""

    answers: dict[str, RecordedAnswer] = field(default_factory=dict)
    grants: set[tuple[str, str]] = field(default_factory=set)
    ignored: list[Ignored] = field(default_factory=list)
    shown: dict[str, str] = field(default_factory=dict)  # request id -> tool kind action


def run_id_of(run_dir: Path) -> str:
    """The id answers are sealed with: the run folder's real name."""
    name = run_dir.name
    if name and name != ".." and not run_dir.is_symlink():
        # only the last part can change the name: one lstat, not realpath's one a part
        # (a batch asks this for every run)
        return name
    return Path(os.path.realpath(run_dir)).name


def honoured_answers(turns: ToolTurns, run_id: str) -> Honoured:
    """Check every recorded answer and "allow for this run" grant of `turns` against the
    user's key; only those whose seal holds for `run_id` are kept."""
    out = Honoured()
    if not turns.answers and not turns.run_grants:
        return out
    try:
        key: bytes | None = approval_key()
        key_problem = ""
    except KeyUnavailable as error:
        key, key_problem = None, str(error)
    for request_id, event in turns.answers.items():
        answer = str(event.get("answer"))
        kind, action = str(event.get("kind")), str(event.get("action"))
        digest, by = str(event.get("digest") or ""), str(event.get("by") or "")
        what = f"answer {answer} to {request_id} ({event.get('tool')} {kind} {action})"
        why = key_problem if key is None else answer_problem(event, run_id, key)
        if why:
            out.ignored.append(Ignored(request_id, what, why))
            continue
        out.answers[request_id] = RecordedAnswer(answer, kind, action, digest, by)  # type: ignore[arg-type]
        out.shown[request_id] = f"{event.get('tool')} {kind} {action}"
        if answer == "run":
            out.grants.add((kind, action))
    for event in turns.run_grants:
        kind, action = str(event.get("kind")), str(event.get("action"))
        why = key_problem if key is None else grant_problem(event, run_id, key)
        if not why:
            out.grants.add((kind, action))
            continue
        out.ignored.append(Ignored("", f"allowance for the run to {kind} {action}", why))
    return out


def _turns_of(run_dir: Path) -> ToolTurns:
    return ToolTurns.of(read_journal(run_dir / JOURNAL_FILE))


def pending_requests(run_dir: Path) -> list[dict[str, Any]]:
    """The approval requests of a run with no answer that holds yet, oldest first."""
    turns = _turns_of(run_dir)
    answered = honoured_answers(turns, run_id_of(run_dir)).answers
    return [r for i, r in turns.requests.items() if i not in answered]


def decide_pending(
    run_dir: Path,
    answer: str,
    ids: Sequence[str] = (),
    *,
    all_pending: bool = False,
    by: str = "cli",
) -> list[str]:
    """Record `answer` (once | run | deny) for the requests named by `ids`, or for every
    pending one with `all_pending`, or for the only one, as given through `by` (`cli`:
    `prose approve`/`deny`; `ui`: `prose ui`'s buttons; `api`: `openprose.approve`).
    Each answer is sealed for this run, its request and its exact action. Returns the ids
    answered."""
    if answer not in ANSWERS:
        raise ApprovalError(f"an answer is one of {', '.join(ANSWERS)}, not {answer!r}")
    pending = {str(p["id"]): p for p in pending_requests(run_dir)}
    if not pending:
        raise ApprovalError(f"run {run_dir.name} has no pending approval request")
    if all_pending:
        chosen = list(pending)
    elif ids:
        unknown = [i for i in ids if i not in pending]
        if unknown:
            raise ApprovalError(
                f"no pending request {', '.join(unknown)}; pending: {', '.join(pending)}"
            )
        chosen = list(dict.fromkeys(ids))
    elif len(pending) == 1:
        chosen = list(pending)
    else:
        listed = "\n".join(f"  {i}: {_describe(p)}" for i, p in pending.items())
        raise ApprovalError(
            f"run {run_dir.name} has {len(pending)} pending requests; name one or use --all:\n"
            f"{listed}"
        )
    try:
        key = approval_key()
    except KeyUnavailable as error:
        raise ApprovalError(str(error)) from None
    run_id = run_id_of(run_dir)
    t = round(time.time(), 6)
    lines = b"".join(
        encode(_answer_event(key, run_id, i, pending[i], answer, by), t) + b"\n" for i in chosen
    )
    fd = os.open(run_dir / JOURNAL_FILE, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, lines)
        os.fsync(fd)
    finally:
        os.close(fd)
    with (run_dir / "state.md").open("a", encoding="utf-8") as state:
        for i in chosen:
            state.write(f"{i}→ approval: {answer} ({_describe(pending[i])})\n")
    return chosen


def _answer_event(
    key: bytes, run_id: str, request_id: str, request: dict[str, Any], answer: str, by: str
) -> ApprovalDecided:
    kind, action = str(request.get("kind")), str(request.get("action"))
    tool, digest = str(request.get("tool")), str(request.get("digest") or "")
    return ApprovalDecided(
        step=str(request.get("step", "")),
        id=request_id,
        answer=answer,
        tool=tool,
        kind=kind,
        action=action,
        digest=digest,
        by=by,
        seal=seal_answer(key, run_id, request_id, tool, kind, action, digest, answer, by),
    )


def _describe(request: dict[str, Any]) -> str:
    return f"{request.get('tool')} {request.get('kind')} {request.get('action')}"

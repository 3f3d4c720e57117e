"""Answers to a waiting run's approval requests (`prose approve` / `prose deny`).

A run whose agent needed a `prompt` permission and had nobody to ask stops as `waiting`
with an `approval_requested` event in its journal. An answer is appended as an
`approval_decided` event; `prose resume` then serves it to the request it names.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from openprose.vm.journal import read_journal
from openprose.vm.runtime import ToolTurns

__all__ = ["ApprovalError", "decide_pending", "pending_requests"]

ANSWERS = ("once", "run", "deny")


class ApprovalError(Exception):
    """Nothing to answer, or an answer that names no pending request."""


def pending_requests(run_dir: Path) -> list[dict[str, Any]]:
    """The approval requests of a run that have no answer yet, oldest first."""
    turns = ToolTurns()
    for event in read_journal(run_dir / "journal.jsonl"):
        turns.add(event)
    return list(turns.pending.values())


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
    `prose approve`/`deny`; `ui`: `prose ui`'s buttons). Returns the ids answered."""
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
        chosen = list(ids)
    elif len(pending) == 1:
        chosen = list(pending)
    else:
        listed = "\n".join(f"  {i}: {_describe(p)}" for i, p in pending.items())
        raise ApprovalError(
            f"run {run_dir.name} has {len(pending)} pending requests; name one or use --all:\n"
            f"{listed}"
        )
    lines = b"".join(
        orjson.dumps(
            {
                "ev": "approval_decided",
                "step": pending[i].get("step", ""),
                "t": round(time.time(), 6),
                "id": i,
                "answer": answer,
                "kind": pending[i].get("kind"),
                "action": pending[i].get("action"),
                "by": by,
            }
        )
        + b"\n"
        for i in chosen
    )
    fd = os.open(run_dir / "journal.jsonl", os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, lines)
        os.fsync(fd)
    finally:
        os.close(fd)
    with (run_dir / "state.md").open("a", encoding="utf-8") as state:
        for i in chosen:
            state.write(f"{i}→ approval: {answer} ({_describe(pending[i])})\n")
    return chosen


def _describe(request: dict[str, Any]) -> str:
    return f"{request.get('tool')} {request.get('kind')} {request.get('action')}"

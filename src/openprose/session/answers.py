"""Answering a waiting run's permission requests and questions: `prose approve`/`deny`/
`answer`, `prose ui`'s buttons and form, and `openprose.approve`/`answer` all answer through
here."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["answer_question", "answer_requests"]


def answer_requests(
    run_dir: Path,
    answer: str,
    ids: Sequence[str] = (),
    *,
    all_pending: bool = False,
    by: str = "cli",
) -> list[dict[str, Any]]:
    """Answer a waiting run's pending requests (`decide_pending`) unless the run is still
    running; the requests answered. `prose approve`/`deny` and `prose ui`'s buttons both
    answer through here, as does `openprose.approve`; `by` says which (`cli`, `ui`,
    `api`: recorded with the answer). Raises `ApprovalError` (or `DamagedRun` for an
    unreadable run.json)."""
    from openprose.record.runstore import RunStore
    from openprose.session.runs import status_of
    from openprose.vm.approvals import ApprovalError, decide_pending, pending_requests

    if status_of(RunStore.open(run_dir).read_meta()) == "running":
        raise ApprovalError(f"run {run_dir.name} is still running")
    requests = {str(r["id"]): r for r in pending_requests(run_dir)}
    chosen = decide_pending(run_dir, answer, ids, all_pending=all_pending, by=by)
    return [{**requests[request_id], "id": request_id} for request_id in chosen]


def answer_question(
    run_dir: Path, text: str, question_id: str | None = None, *, by: str = "cli"
) -> dict[str, Any]:
    """Answer a waiting run's question (`ask`) unless the run is still running; the question
    with the answer taken (an option chosen by number is its text). `by` is recorded with
    the answer, as for `answer_requests`. Raises `AnswerError` (or `DamagedRun`)."""
    from openprose.record.runstore import RunStore
    from openprose.session.runs import status_of
    from openprose.vm.questions import AnswerError
    from openprose.vm.replies import answer_pending

    if status_of(RunStore.open(run_dir).read_meta()) == "running":
        raise AnswerError(f"run {run_dir.name} is still running")
    return answer_pending(run_dir, text, question_id, by=by)

"""What `prose ui` shows of the batches of a project: each batch as one entry (progress,
failures, tokens, cost, its rows file) instead of its runs as thousands of flat rows, and a
batch's rows filtered by status. Read-only: it never takes a batch's lock."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from openprose.batches.driver import BatchStats
from openprose.batches.store import BATCHES_DIR, BatchStore

__all__ = ["batch_rows", "batch_summaries"]


def batch_summaries(project: Path) -> list[dict[str, Any]]:
    """Every batch of the project, newest first."""
    root = project / BATCHES_DIR
    folders = sorted(root.iterdir(), reverse=True) if root.is_dir() else []
    return [s for s in map(_summary, folders) if s is not None]


def batch_rows(project: Path, batch_id: str, status: str | None = None) -> list[dict[str, Any]]:
    """The batch's rows in line order (only those of `status` when given: `succeeded`,
    `invalid`, or `failed` — every other row, as the batch counts them); a folder that is
    not one of the project's batches has none."""
    if batch_id not in {p.name for p in (project / BATCHES_DIR).glob("*")}:
        raise KeyError(batch_id)
    store = BatchStore(project / BATCHES_DIR / batch_id)
    rows = (r for r in _rows(store) if status is None or _counted_as(r) == status)
    return sorted(rows, key=lambda r: r["line"])


def _counted_as(row: dict[str, Any]) -> str:
    """The count a row is in (`BatchStats.add`): a run that ended `error`, `aborted` or
    `stopped` is a failure."""
    status = row.get("status")
    return status if status in ("succeeded", "invalid") else "failed"


def _summary(folder: Path) -> dict[str, Any] | None:
    store = BatchStore(folder)
    try:
        meta = store.read_meta()
    except (OSError, ValueError):
        return None  # not a batch (or one being created)
    stats = BatchStats()
    for row in _rows(store):
        stats.add(row)
    return {
        "batch_id": store.batch_id,
        "state": meta.get("status"),  # running / finished
        "program": meta.get("program"),
        "inputs": meta.get("inputs"),
        "rows_file": meta.get("output"),
        "cases": meta.get("cases"),  # known once it finished
        "done": stats.done,
        "succeeded": stats.succeeded,
        "failed": stats.failed,
        "invalid": stats.invalid,
        "input_tokens": stats.input_tokens,
        "output_tokens": stats.output_tokens,
        "cost_usd": round(stats.cost, 6),
        "unpriced_models": sorted(stats.unpriced),
    }


def _rows(store: BatchStore) -> list[dict[str, Any]]:
    try:
        return list(store.rows())
    except (OSError, KeyError):
        return []  # no rows file yet, or it was moved away

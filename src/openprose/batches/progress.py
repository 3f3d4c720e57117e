"""What a batch shows while it runs: a Rich progress bar on a terminal (done/failed, rate,
ETA, tokens, cost), otherwise one plain status line at most every few seconds."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable
from typing import Any, Self, TextIO

from openprose.batches.driver import BatchStats
from openprose.providers.prices import cache_text

__all__ = ["BarProgress", "PlainBatchProgress", "describe"]


def describe(stats: BatchStats, total: int | None) -> str:
    elapsed = max(time.monotonic() - stats.started, 1e-9)
    rate = stats.done / elapsed
    done = stats.done + stats.done_before
    parts = [f"{done}/{total}" if total is not None else f"{done} done"]
    parts.append(f"{stats.failed} failed, {stats.invalid} invalid")
    parts.append(f"{rate:.1f} runs/s")
    if total is not None and rate > 0:
        parts.append(f"ETA {_clock((total - done) / rate)}")
    cached = cache_text(stats.cache_read_tokens, stats.cache_write_tokens)
    parts.append(f"tokens {stats.input_tokens} in{cached} / {stats.output_tokens} out")
    parts.append(cost_text(stats.cost, stats.unpriced, stats.by_model))
    return ", ".join(parts)


def cost_text(cost: float, unpriced: dict[str, int], models: Iterable[str] = ()) -> str:
    """The cost, never an unknown price shown as free; as `prose run` says it."""
    from openprose.providers.prices import cost_amount

    if not unpriced:
        return cost_amount(cost, models)
    unknown = f"unknown (no price for {', '.join(sorted(unpriced))})"
    priced = [m for m in models if m not in unpriced]
    return f"{cost_amount(cost, priced)} + {unknown}" if priced else unknown


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return (
        f"{seconds // 3600}h{seconds // 60 % 60:02d}m"
        if seconds >= 3600
        else (f"{seconds // 60}m{seconds % 60:02d}s")
    )


def invalid_line(cases: str, row: dict[str, Any]) -> str:
    """An invalid input line as the progress views and `--json` runs name it:
    `cases.jsonl:LINE: why` (`cases` is the file's name and a colon, or "line ")."""
    return f"{cases}{row['line']}: {row['error']}"


class PlainBatchProgress:
    """Invalid lines as they come; a status line every `interval` seconds and at the end."""

    def __init__(
        self, stream: TextIO, total: int | None, interval: float = 5.0, cases: str = "line "
    ) -> None:
        self.stream = stream
        self.total = total
        self.cases = cases  # how an invalid line is named: `cases.jsonl:` + its number
        self.interval = interval
        self._last = time.monotonic()
        self._stats: BatchStats | None = None

    def __call__(self, row: dict[str, Any], stats: BatchStats) -> None:
        self._stats = stats
        if row["status"] == "invalid":
            print(f"prose batch: {invalid_line(self.cases, row)}", file=self.stream)
        now = time.monotonic()
        if now - self._last >= self.interval:
            self._last = now
            print(f"prose batch: {describe(stats, self.total)}", file=self.stream)

    def finish(self) -> None:
        if self._stats is not None:
            print(f"prose batch: {describe(self._stats, self.total)}", file=self.stream)


class BarProgress:
    """A Rich bar on stderr; invalid lines are printed above it."""

    def __init__(self, total: int | None, title: str, cases: str = "line ") -> None:
        self.cases = cases
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn

        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[status]}"),
            console=Console(file=sys.stderr),
            transient=False,
        )
        self._task = self._progress.add_task(title, total=total, status="starting")
        self.total = total

    def __enter__(self) -> Self:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def __call__(self, row: dict[str, Any], stats: BatchStats) -> None:
        if row["status"] == "invalid":
            self._progress.console.print(
                invalid_line(self.cases, row), markup=False, highlight=False
            )
        self._progress.update(
            self._task,
            completed=stats.done + stats.done_before,
            status=describe(stats, self.total),
        )

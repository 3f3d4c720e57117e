"""Showing a run as it goes: a Rich live table on a terminal, plain lines otherwise.

Both are observers (`Interpreter` events in, text out on stderr); Rich is imported only when
the live view is used.
"""

from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Self, TextIO

# USD per million tokens (input, output), for the models whose prices are published.
PRICES: dict[str, tuple[float, float]] = {
    "claude-sonnet-4-5": (3.0, 15.0),
    "claude-opus-4-1": (15.0, 75.0),
    "claude-haiku-4-5": (1.0, 5.0),
    "gpt-4.1": (2.0, 8.0),
    "gpt-4.1-mini": (0.4, 1.6),
    "gpt-4.1-nano": (0.1, 0.4),
    "gpt-4o": (2.5, 10.0),
    "gpt-4o-mini": (0.15, 0.6),
    "o3": (2.0, 8.0),
}
# A dated snapshot costs what its model does: claude-sonnet-4-5-20250929, gpt-4.1-2025-04-14.
_SNAPSHOT = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2}|latest)$")


def price_of(model: str) -> tuple[float, float] | None:
    return PRICES.get(model) or PRICES.get(_SNAPSHOT.sub("", model))


_SHOWN = (
    "session_started",
    "session_finished",
    "session_failed",
    "session_cancelled",
    "session_served",
    "decision",
)


def cost_of(by_model: dict[str, dict[str, int]]) -> float | None:
    """Total USD when every model's price is known, else None."""
    total = 0.0
    for model, usage in by_model.items():
        price = price_of(model)
        if price is None:
            if usage["input_tokens"] or usage["output_tokens"]:
                return None
            continue
        total += usage["input_tokens"] * price[0] / 1e6 + usage["output_tokens"] * price[1] / 1e6
    return total


class PlainProgress:
    """One line per finished session, failure and decision (for logs and pipes)."""

    def __init__(self, stream: TextIO = sys.stderr) -> None:
        self.stream = stream
        self.started = time.monotonic()

    def __call__(self, event: str, step: str, fields: dict[str, Any]) -> None:
        if event not in _SHOWN or event == "session_started":
            return
        clock = f"[{time.monotonic() - self.started:7.2f}s]"
        if event == "session_finished":
            usage = fields["response"]["usage"]
            who = fields.get("binding") or fields.get("kind") or ""
            line = (
                f"{clock} ✓ {step} {who} ({fields.get('agent') or '-'}, {fields.get('model')}) "
                f"{usage['input_tokens']}+{usage['output_tokens']} tok {fields.get('elapsed', 0):.2f}s"
            )
        elif event == "session_served":
            line = f"{clock} ↺ {step} served from the journal"
        elif event == "session_failed":
            line = f"{clock} ✗ {step} attempt {fields.get('attempt')}: {fields.get('error')}"
        elif event == "session_cancelled":
            line = f"{clock} ⊘ {step} cancelled"
        else:
            line = f"{clock} ? {step} {fields.get('kind')} → {fields.get('verdict')} ({fields.get('reason')})"
        from openprose.terminal import printable

        self.stream.write(printable(line, self.stream) + "\n")
        self.stream.flush()


@dataclass(slots=True)
class _Row:
    agent: str
    model: str
    state: str
    tokens: int = 0
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None


class LiveView:
    """A Rich live table of sessions: agent, model, state, tokens, elapsed."""

    MAX_ROWS = 18

    def __init__(self) -> None:
        from rich.console import Console
        from rich.live import Live

        self.rows: dict[str, _Row] = {}
        self.done = 0
        self.tokens = 0
        self.console = Console(stderr=True)
        self.live = Live(
            get_renderable=self._render, console=self.console, refresh_per_second=4, transient=False
        )

    def __enter__(self) -> Self:
        self.live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.stop()

    def __call__(self, event: str, step: str, fields: dict[str, Any]) -> None:
        if event == "session_started":
            self.rows[step] = _Row(
                str(fields.get("agent") or "-"), str(fields.get("model")), "running"
            )
        elif event in ("session_finished", "session_served"):
            row = self.rows.setdefault(step, _Row("-", str(fields.get("model", "")), ""))
            row.state = "done" if event == "session_finished" else "from journal"
            row.ended = time.monotonic()
            if event == "session_finished":
                usage = fields["response"]["usage"]
                row.tokens = usage["input_tokens"] + usage["output_tokens"]
                self.tokens += row.tokens
            self.done += 1
        elif event == "session_failed" and step in self.rows:
            # Final unless a `retry:` sends it again (then a later event updates the row).
            self.rows[step].state = f"failed (attempt {fields.get('attempt')})"
            self.rows[step].ended = time.monotonic()
        elif event == "session_cancelled" and step in self.rows:
            self.rows[step].state = "cancelled"
            self.rows[step].ended = time.monotonic()

    def _render(self) -> Any:
        from rich.table import Table

        table = Table(title=f"sessions: {self.done} done, {self.tokens} tokens", expand=False)
        for column in ("step", "agent", "model", "state", "tokens", "elapsed"):
            table.add_column(column)
        now = time.monotonic()
        running = [(s, r) for s, r in self.rows.items() if r.ended is None]
        finished = [(s, r) for s, r in self.rows.items() if r.ended is not None]
        for step, row in (running + finished[::-1])[: self.MAX_ROWS]:
            elapsed = (row.ended or now) - row.started
            table.add_row(step, row.agent, row.model, row.state, str(row.tokens), f"{elapsed:.1f}s")
        return table

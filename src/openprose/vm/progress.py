"""Showing a run as it goes: a Rich live table on a terminal, plain lines otherwise.

Both are observers (`Interpreter` events in, text out on stderr); Rich is imported only when
the live view is used. The live view also watches answers as they stream (`answer_text`),
which makes the hosted providers stream; plain lines do not, so a run without a terminal
makes the cheaper unstreamed requests.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Self, TextIO

from openprose.providers.prices import cache_text
from openprose.record.events import (
    Decision,
    Event,
    QuestionAnswered,
    RunStarted,
    SessionCancelled,
    SessionFailed,
    SessionFinished,
    SessionServed,
    SessionStarted,
)


def _cached(usage: dict[str, Any]) -> str:
    return cache_text(usage.get("cache_read_tokens", 0), usage.get("cache_write_tokens", 0))


def shown_verdict(verdict: Any) -> str:
    """A judgment's answer as the language writes it: `true`/`false`, not Python's `True`."""
    if isinstance(verdict, bool):
        return "true" if verdict else "false"
    return str(verdict)


def _answered(event: QuestionAnswered) -> str:
    """An `ask`'s answer, and who gave it (or that the time ran out)."""
    if event.by == "timeout":
        return f"{event.id}: no answer in time, took the default {event.answer!r}"
    return f"{event.id}: answered {event.answer!r} via {event.by}"


class PlainProgress:
    """One line per finished session, failure and decision (for logs and pipes)."""

    def __init__(self, stream: TextIO = sys.stderr) -> None:
        self.stream = stream
        self.started = time.monotonic()
        self._held: list[str] | None = None  # lines waiting for the journal, once held

    def hold_until_written(self) -> Callable[[], None]:
        """From now on, lines wait until the journal has written the events they show (the
        VM calls the returned function after each journal write): nobody reads of a session
        a kill -9 could still lose. One `write` to the stream per batch, too."""
        self._held = []
        return self._release

    def _release(self) -> None:
        if self._held:
            text, self._held = "".join(self._held), []
            self.stream.write(text)
            self.stream.flush()

    def __call__(self, event: Event, t: float) -> None:
        clock = f"[{time.monotonic() - self.started:7.2f}s]"
        match event:
            case SessionFinished(step=step, response=response):
                usage = response["usage"]
                who = event.binding or event.kind or ""
                line = (
                    f"{clock} ✓ {step} {who} ({event.agent or '-'}, {event.model}) "
                    f"{usage['input_tokens']}+{usage['output_tokens']} tok{_cached(usage)} "
                    f"{event.elapsed:.2f}s"
                )
            case SessionServed(step=step):
                line = f"{clock} ↺ {step} served from the journal"
            case SessionFailed(step=step):
                line = f"{clock} ✗ {step}{_retried(event.attempt)}: {event.error}"
            case SessionCancelled(step=step):
                line = f"{clock} ⊘ {step} cancelled"
            case Decision(step=step):
                verdict = shown_verdict(event.verdict)
                line = f"{clock} ? {step} {event.kind} → {verdict} ({event.reason})"
            case QuestionAnswered(step=step):
                line = f"{clock} ✎ {step} {_answered(event)}"
            case _:
                return
        from openprose.terminal import printable

        line = printable(line, self.stream) + "\n"
        if self._held is not None:
            self._held.append(line)
            return
        self.stream.write(line)
        self.stream.flush()


TAIL_CHARS = 240  # of a streaming answer kept per row; the view shows its last line


@dataclass(slots=True)
class _Row:
    agent: str
    model: str
    state: str
    tokens: int = 0
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    tail: str = ""  # the end of the answer so far

    def last_line(self, width: int) -> str:
        """The answer's last non-empty line, its end if it is too long for `width`."""
        from openprose.terminal import neutralise

        lines = [line for line in self.tail.splitlines() if line.strip()]
        line = neutralise(" ".join(lines[-1].split())) if lines else ""
        return line if len(line) <= width else "…" + line[-(width - 1) :]


class LiveView:
    """A Rich live table of sessions: agent, model, state, tokens, elapsed, and the last
    line of each answer as it streams in."""

    MAX_ROWS = 18
    ANSWER_WIDTH = 60

    def __init__(self) -> None:
        from rich.console import Console
        from rich.live import Live

        self.rows: dict[str, _Row] = {}
        self.running: set[str] = set()
        self.run_id = ""
        self.done = 0
        self.tokens = 0
        self.cache_read = self.cache_write = 0  # prompt tokens the prompt cache served, kept
        self.console = Console(stderr=True)
        self.live = Live(
            get_renderable=self._render, console=self.console, refresh_per_second=4, transient=False
        )
        self._held: list[Event] | None = None

    def hold_until_written(self) -> Callable[[], None]:
        """As `PlainProgress.hold_until_written`: a session shows as done (with its answer)
        only once the journal holds it. Starts show at once (the view streams a running
        session's answer, which no journal holds until it is whole)."""
        self._held = []
        return self._release

    def _release(self) -> None:
        if self._held:
            held, self._held = self._held, []
            for event in held:
                self._show(event)

    def __enter__(self) -> Self:
        self.live.start()
        return self

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Stop drawing while someone else uses the terminal (an approval prompt)."""
        self.live.stop()
        try:
            yield
        finally:
            self.live.start()

    def __exit__(self, *exc: object) -> None:
        self.live.stop()

    def __call__(self, event: Event, t: float) -> None:
        match event:
            case RunStarted(run_id=run_id):
                self.run_id = run_id
                return
            case SessionStarted(step=step, agent=agent, model=model):
                self.rows[step] = _Row(agent or "-", model, "running")
                self.running.add(step)
                return
            case SessionFinished() | SessionServed() | SessionFailed() | SessionCancelled():
                if self._held is not None:
                    self._held.append(event)
                else:
                    self._show(event)

    def _show(self, event: Event) -> None:
        step = event.step
        self.running.discard(step)
        match event:
            case SessionFinished(response=response):
                row = self.rows.setdefault(step, _Row("-", event.model, ""))
                row.state = "done"
                row.ended = time.monotonic()
                usage = response["usage"]
                row.tokens = usage["input_tokens"] + usage["output_tokens"]
                self.tokens += row.tokens
                self.cache_read += usage.get("cache_read_tokens", 0)
                self.cache_write += usage.get("cache_write_tokens", 0)
                row.tail = str(response.get("text", ""))[-TAIL_CHARS:]
                self.done += 1
            case SessionServed():
                row = self.rows.setdefault(step, _Row("-", "", ""))
                row.state = "from journal"
                row.ended = time.monotonic()
                self.done += 1
            case SessionFailed(attempt=attempt) if step in self.rows:
                # Final unless a `retry:` sends it again (then a later event updates the row).
                self.rows[step].state = f"failed{_retried(attempt)}"
                self.rows[step].ended = time.monotonic()
            case SessionCancelled() if step in self.rows:
                self.rows[step].state = "cancelled"
                self.rows[step].ended = time.monotonic()

    def watches(self, step: str) -> bool:
        """Whether to stream this session's answer: only while the running sessions all fit
        in the table. A session started when they do not would stream to a hidden row, so
        a wide fan-out makes plain requests, the cheaper kind."""
        return step in self.running and len(self.running) <= self.MAX_ROWS

    def answer_text(self, step: str, text: str) -> None:
        """A piece of a running session's answer (the view then asks for streamed answers)."""
        row = self.rows.get(step)
        if row is not None:
            if row.state == "waiting":
                row.state, row.tail = "running", ""  # the retry answers
            row.tail = (row.tail + text)[-TAIL_CHARS:]

    def answer_restarted(self, step: str) -> None:
        """A retry starts the answer over: the failed attempt's text goes."""
        row = self.rows.get(step)
        if row is not None:
            row.tail = ""

    def answer_waiting(self, step: str, note: str) -> None:
        """The call waits before a retry: the row says why and for how long, where the
        answer shows (`... HTTP 503 ...; attempt 3 of 5 in 4.0 s`)."""
        row = self.rows.get(step)
        if row is not None and row.ended is None:
            row.state, row.tail = "waiting", note

    def _render(self) -> Any:
        from rich.table import Table
        from rich.text import Text

        title = f"sessions: {self.done} done, {self.tokens} tokens" + cache_text(
            self.cache_read, self.cache_write
        )
        if self.run_id:
            title = f"run {self.run_id} · {title}"
        table = Table(title=title, expand=False)
        for column in ("step", "agent", "model", "state", "tokens", "elapsed"):
            table.add_column(column)
        table.add_column("answer", no_wrap=True, overflow="ellipsis", max_width=self.ANSWER_WIDTH)
        now = time.monotonic()
        running = [(s, r) for s, r in self.rows.items() if r.ended is None]
        finished = [(s, r) for s, r in self.rows.items() if r.ended is not None]
        for step, row in (running + finished[::-1])[: self.MAX_ROWS]:
            elapsed = (row.ended or now) - row.started
            table.add_row(
                step,
                row.agent,
                row.model,
                row.state,
                str(row.tokens),
                f"{elapsed:.1f}s",
                Text(row.last_line(self.ANSWER_WIDTH)),  # a model's words: not Rich markup
            )
        return table


def _retried(attempt: int | None) -> str:
    """` attempt N` for a session its program's `retry:` sent again; nothing for the first
    attempt, whose provider-level retries its error message counts."""
    return f" attempt {attempt}" if isinstance(attempt, int) and attempt > 1 else ""

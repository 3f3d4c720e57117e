"""The progress observers: plain lines off a terminal, a Rich table on one."""

from __future__ import annotations

import io
from typing import Any

from openprose.vm.progress import LiveView, PlainProgress
from tests.support.events import feed


def finished(tokens: tuple[int, int]) -> dict[str, Any]:
    return {
        "agent": "writer",
        "model": "opus",
        "binding": "draft",
        "elapsed": 0.25,
        "response": {"usage": {"input_tokens": tokens[0], "output_tokens": tokens[1]}},
    }


def test_plain_progress_lines() -> None:
    stream = io.StringIO()
    view = PlainProgress(stream)
    feed(view, "session_started", "1", {"agent": "writer", "model": "opus"})
    feed(view, "session_finished", "1", finished((10, 5)))
    feed(view, "decision", "2?c1", {"kind": "condition", "verdict": True, "reason": "ok"})
    feed(view, "session_failed", "3", {"attempt": 1, "error": "boom"})
    feed(view, "session_cancelled", "4|2", {"attempt": 1})
    feed(view, "session_failed", "5", {"attempt": 2, "error": "again"})  # its `retry:` sent it
    lines = stream.getvalue().splitlines()
    assert len(lines) == 5 and "✗ 5 attempt 2: again" in lines[4]
    assert "✓ 1 draft (writer, opus) 10+5 tok" in lines[0]
    assert "2?c1 condition → true (ok)" in lines[1] and "✗ 3: boom" in lines[2]
    assert "⊘ 4|2 cancelled" in lines[3]


def test_plain_progress_in_a_run_shows_a_session_only_once_the_journal_has_it(
    tmp_path: Any,
) -> None:
    """Lines wait for the journal's write (one per event-loop turn): what a person read on
    the terminal is never lost by a kill -9."""
    import asyncio

    from openprose.parser import parse_text
    from openprose.providers import ScriptedProvider
    from openprose.record.journal import read_journal
    from openprose.vm.runner import run_program

    writes: list[tuple[list[str], set[str]]] = []  # (steps shown, steps journaled by then)

    class Watched(io.StringIO):
        def write(self, text: str) -> int:
            journal = next((tmp_path / ".prose" / "runs").glob("*/journal.jsonl"))
            shown = [line.split("✓ ")[1].split()[0] for line in text.splitlines()]
            journaled = {e["step"] for e in read_journal(journal) if e["ev"] == "session_finished"}
            writes.append((shown, journaled))
            return len(text)

    source = 'let xs = [1, 2, 3]\nlet ys = xs | pmap:\n  session "Item {item}"\n'
    program = parse_text(source, str(tmp_path / "main.prose")).program
    result = asyncio.run(
        run_program(
            program, source, provider=ScriptedProvider([], default="ok"), project_dir=tmp_path,
            observer=PlainProgress(Watched()),
        )
    )  # fmt: skip
    assert result.status == "succeeded"
    assert sorted(step for shown, _ in writes for step in shown) == [
        f"2:1[{i}].1" for i in range(3)
    ]
    assert len(writes) < 3  # a turn's lines go out together
    for shown, journaled in writes:
        assert set(shown) <= journaled


def test_live_view_shows_a_session_done_only_once_the_journal_has_it() -> None:
    view = LiveView()
    release = view.hold_until_written()
    feed(view, "session_started", "1", {"agent": "writer", "model": "opus"})
    assert view.rows["1"].state == "running" and "1" in view.running  # starts show at once
    feed(view, "session_finished", "1", {**finished((7, 3)), "response": {
        "text": "the answer", "usage": {"input_tokens": 7, "output_tokens": 3}}})  # fmt: skip
    assert view.rows["1"].state == "running" and view.done == 0  # not journaled yet
    release()  # the journal wrote it
    assert view.rows["1"].state == "done" and view.done == 1 and view.tokens == 10
    assert view.rows["1"].tail == "the answer" and "1" not in view.running


def test_live_view_table_renders_sessions() -> None:
    from rich.console import Console

    view = LiveView()
    feed(view, "session_started", "1", {"agent": "writer", "model": "opus"})
    feed(view, "session_started", "2", {"agent": None, "model": "haiku"})
    feed(view, "session_finished", "1", finished((7, 3)))
    feed(view, "session_cancelled", "2", {})
    console = Console(file=io.StringIO(), width=120)
    console.print(view._render())
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "sessions: 1 done, 10 tokens" in text
    assert "writer" in text and "cancelled" in text and "done" in text


def test_live_view_stops_the_clock_of_a_failed_session() -> None:
    view = LiveView()
    feed(view, "session_started", "1", {"agent": None, "model": "opus"})
    feed(view, "session_failed", "1", {"attempt": 1, "error": "boom"})
    row = view.rows["1"]
    assert row.state == "failed" and row.ended is not None
    # A `retry:` that then succeeds turns the row to done.
    feed(view, "session_finished", "1", finished((1, 1)))
    assert row.state == "done" and view.done == 1


def test_live_view_only_on_a_terminal(monkeypatch: Any) -> None:
    import sys

    from openprose.cli.run import RunNotice, progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.setattr(sys, "stderr", Terminal())
    notice = RunNotice(quiet=False)
    with progress(False, notice) as observer:
        assert observer.observers[0] is notice and isinstance(observer.observers[1], LiveView)
    with progress(True, notice) as observer:  # --json: the run notice itself, no progress
        assert observer is notice
    with progress(False, notice, quiet=True) as observer:  # -q: the same
        assert observer is notice
    monkeypatch.setenv("TERM", "dumb")
    with progress(False, notice) as observer:
        assert isinstance(observer.observers[1], PlainProgress)
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # a pipe or a file
    with progress(False, notice) as observer:
        assert isinstance(observer.observers[1], PlainProgress)


def test_live_view_title_names_the_run() -> None:
    view = LiveView()
    feed(view, "run_started", "", {"run_id": "20261125-140618-9944a0", "resumed": False})
    feed(view, "session_started", "1", {"agent": "writer", "model": "opus"})
    assert view._render().title == "run 20261125-140618-9944a0 · sessions: 0 done, 0 tokens"


def test_live_view_shows_why_a_session_waits_until_its_retry_answers() -> None:
    view = LiveView()
    feed(view, "session_started", "1", {"agent": "writer", "model": "opus"})
    view.answer_waiting("1", "HTTP 503: down; attempt 2 of 5 in 4.0 s")
    row = view.rows["1"]
    assert row.state == "waiting" and row.last_line(60).endswith("attempt 2 of 5 in 4.0 s")
    view.answer_text("1", "Hello")
    assert row.state == "running" and row.tail == "Hello"


def test_plain_progress_says_what_the_prompt_cache_served() -> None:
    stream = io.StringIO()
    view = PlainProgress(stream)
    cached = finished((3000, 5))
    cached["response"]["usage"].update(cache_read_tokens=2900, cache_write_tokens=90)
    feed(view, "session_finished", "1", cached)
    assert "3000+5 tok (2900 cache read, 90 cache write) " in stream.getvalue()

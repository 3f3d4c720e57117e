"""Answers streamed to the live view: the watcher sees them grow, the journal only whole."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from openprose.parser import parse_text
from openprose.providers import ProviderSettings, RetryPolicy, open_provider
from openprose.record.events import Event
from openprose.record.journal import read_journal
from openprose.vm.progress import LiveView, PlainProgress
from openprose.vm.runner import run_program
from tests.support import fixtures
from tests.support.events import feed
from tests.support.fake_llm_server import FakeLLMServer, Fault

fake_llm_server = fixtures.fake_llm_server

PROGRAM = 'output a = session "Tell me a long story about seven small ducks"\n'
ANSWER = "echo: Tell me a long story about seven small ducks"


class Watcher:
    """An observer that watches answers stream, as the live view does."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.pieces: list[str] = []
        self.restarts = 0

    def __call__(self, event: Event, t: float) -> None:
        self.events.append(event.ev)

    def answer_text(self, step: str, text: str) -> None:
        self.pieces.append(text)

    def answer_restarted(self, step: str) -> None:
        self.restarts += 1
        self.pieces.clear()


async def run(server: FakeLLMServer, api: str, tmp_path: Path, observer: Any) -> Any:
    base_url = server.base_url if api == "anthropic" else server.openai_base_url
    settings = ProviderSettings(
        provider=api,
        base_url=base_url,
        api_key="k",
        timeout=5.0,
        retry=RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02),
    )
    provider = open_provider(settings)
    program = parse_text(PROGRAM, str(tmp_path / "p.prose")).program
    try:
        return await run_program(
            program, PROGRAM, provider=provider, project_dir=tmp_path, observer=observer
        )
    finally:
        await provider.aclose()


@pytest.mark.parametrize("api", ["anthropic", "openai"])
async def test_the_watcher_sees_the_answer_grow_and_the_journal_holds_it_whole(
    fake_llm_server: FakeLLMServer, api: str, tmp_path: Path
) -> None:
    fake_llm_server.script(Fault("stream_cut"))  # the first attempt breaks off: a restart
    watcher = Watcher()
    result = await run(fake_llm_server, api, tmp_path, watcher)
    assert result.status == "succeeded" and result.outputs == {"a": ANSWER}
    assert fake_llm_server.stats.bodies[0]["stream"] is True
    assert watcher.restarts == 1
    assert len(watcher.pieces) > 5 and "".join(watcher.pieces) == ANSWER
    events = list(read_journal(result.run_dir / "journal.jsonl"))
    finished = [e for e in events if e["ev"] == "session_finished"]
    assert len(finished) == 1 and finished[0]["response"]["text"] == ANSWER
    # No piece of the stream is journaled: the answer is only in its session's end, and in
    # the run's end, whose outputs hold it.
    whole = ("session_finished", "run_finished")
    assert not any(ANSWER[:20] in str(e) for e in events if e["ev"] not in whole)
    assert "session_finished" in watcher.events


@pytest.mark.parametrize("api", ["anthropic", "openai"])
async def test_without_a_watcher_the_request_is_not_streamed(
    fake_llm_server: FakeLLMServer, api: str, tmp_path: Path
) -> None:
    result = await run(fake_llm_server, api, tmp_path, PlainProgress(io.StringIO()))
    assert result.outputs == {"a": ANSWER}
    assert "stream" not in fake_llm_server.stats.bodies[0]


def test_the_live_view_shows_the_last_line_of_a_streaming_answer() -> None:
    from rich.console import Console

    view = LiveView()
    feed(view, "session_started", "1", {"agent": "writer", "model": "opus"})
    for piece in ("Once upon a time\n", "there were seven ", "small ducks"):
        view.answer_text("1", piece)
    console = Console(file=io.StringIO(), width=160)
    console.print(view._render())
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "there were seven small ducks" in text and "Once upon" not in text
    view.answer_restarted("1")
    assert view.rows["1"].tail == ""
    view.answer_text("2", "a step the view never saw start is ignored")
    assert "2" not in view.rows
    view.answer_text("1", "x" * 500)
    assert view.rows["1"].last_line(20) == "…" + "x" * 19


def test_the_live_view_streams_only_the_sessions_it_can_show() -> None:
    view = LiveView()
    for i in range(view.MAX_ROWS):
        feed(view, "session_started", str(i), {"agent": None, "model": "opus"})
        assert view.watches(str(i))
    feed(view, "session_started", "extra", {"agent": None, "model": "opus"})
    assert not view.watches("extra")  # one row too many: a plain request
    feed(
        view,
        "session_finished",
        "0",
        {"response": {"usage": {"input_tokens": 1, "output_tokens": 1}}},
    )
    assert view.watches("1") and not view.watches("0")

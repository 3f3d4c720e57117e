"""Issue 31's first goal end to end: an agent using a real stdio MCP server and a real
streamable-HTTP MCP server, a typed review result read by a later session (`{review.severity}`
and `context: review`), and a question answered mid-run; the model is a loopback fake of the
OpenAI API (`tests/support/fake_llm_server.py`) whose replies follow the conversation it is
sent, so a resumed run is answered the same way. Run from the CLI (`prose run` exits 4 at the
question, `prose answer`, `prose resume`) and from the Python API, then killed with SIGKILL
after the N-th journal line and resumed: the same outputs, and no MCP tool called again beyond
the one in flight at the kill (the stdio server logs its calls to out/calls.log, the HTTP one
to a list in this process)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from openprose.vm.tools import sandbox_problem
from tests.support.fake_llm_server import FakeAnswer, FakeLLMServer, FakeToolCall
from tests.support.mcp.http_server import http_mcp_server

pytestmark = pytest.mark.skipif(
    sandbox_problem() is not None, reason=f"no sandbox: {sandbox_problem()}"
)

NOTES_SERVER = Path(__file__).parents[1] / "support" / "mcp" / "notes_server.py"

PROGRAM = """\
agent reviewer:
  prompt: "You review code changes with your tools"
  permissions:
    write: ["out/"]
    mcp: ["notes.add", "dict"]

output review = session: reviewer
  prompt: "Review the change to the scanner"
  returns:
    title: string
    severity: "low" | "medium" | "high"

let plan = ask "When should the fix for {review.title} ship?"
  options: ["now", "next release"]

output fix = session: reviewer
  prompt: "Fix the {review.severity} issue, shipping {plan}"
  context: review
"""

REVIEW = {"title": "Off-by-one in the scanner", "severity": "high"}
# What every successful run, however often killed, ends with.
OUTPUTS = {
    "review": REVIEW,
    "fix": "fixed 5 (metrical writing): Fix the high issue, shipping now | saw the review",
}
# The calls one uninterrupted run makes: per session an `add` (stdio) and a `define` (HTTP).
NOTES_CALLS = ["add 2 3", "add 4 1"]
DICT_CALLS = ["prose", "verse"]


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return str(content or "")


def _reply(api: str, body: dict[str, Any]) -> str | FakeAnswer:
    """The model: the session's prompt (its first user message), the tool results it has seen
    and its last user message decide the answer, so a replayed conversation gets the same one.
    The review's first answer is off its shape (a severity not among the three), the answer
    to the re-ask is right."""
    messages = body.get("messages") or []
    users = [_text(m.get("content")) for m in messages if m.get("role") == "user"]
    prompt, last = (users[0], users[-1]) if users else ("", "")
    results = [_text(m.get("content")) for m in messages if m.get("role") == "tool"]
    if prompt.startswith("Review the change"):
        if last.startswith("Your answer does not match"):  # asked again, without the tools
            return json.dumps(REVIEW)
        if not results:
            return FakeAnswer(tool_calls=(FakeToolCall("mcp__notes__add", {"a": 2, "b": 3}),))
        if len(results) == 1:
            return FakeAnswer(tool_calls=(FakeToolCall("mcp__dict__define", {"word": "prose"}),))
        return json.dumps({**REVIEW, "severity": "critical"})
    if prompt.startswith("Fix the"):
        if not results:
            return FakeAnswer(tool_calls=(FakeToolCall("mcp__notes__add", {"a": 4, "b": 1}),))
        if len(results) == 1:
            return FakeAnswer(tool_calls=(FakeToolCall("mcp__dict__define", {"word": "verse"}),))
        # `context: review` reaches the model as the review's fields after the prompt
        seen = " | saw the review" if REVIEW["title"] in prompt else " | no review"
        return f"fixed {results[0]} ({results[1]}): {prompt.splitlines()[0]}{seen}"
    return f"unexpected prompt: {prompt[:80]}"


@contextmanager
def model_server() -> Iterator[str]:
    """The fake model on loopback, served from a thread; yields its OpenAI base URL."""
    loop = asyncio.new_event_loop()
    server = FakeLLMServer(latency_ms=20, reply=_reply, keep_requests=False)
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(server.start(), loop).result(10)
    try:
        yield server.openai_base_url
    finally:
        asyncio.run_coroutine_threadsafe(server.close(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


@dataclass
class World:
    project: Path
    model_url: str
    dict_calls: list[str]

    def notes_calls(self) -> list[str]:
        log = self.project / "out" / "calls.log"
        return log.read_text().splitlines() if log.exists() else []

    def env(self) -> dict[str, str]:
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "TERM": "dumb", "NO_COLOR": "1"}
        env.pop("PROSE_PROVIDER", None)
        env.update(OPENAI_BASE_URL=self.model_url, OPENAI_API_KEY="test-key")
        return env


@contextmanager
def world(tmp_path: Path) -> Iterator[World]:
    with model_server() as model_url, http_mcp_server() as (dict_url, dict_calls):
        project = tmp_path / "project"
        (project / "out").mkdir(parents=True)
        shutil.copy(NOTES_SERVER, project / "notes_server.py")
        readable = json.dumps(sorted({sys.base_prefix, sys.prefix}))
        (project / "prose.toml").write_text(
            "[mcp.servers.notes]\n"
            f"command = {json.dumps(sys.executable)}\n"
            'args = ["notes_server.py"]\n'
            f"readable = {readable}\n"
            "\n[mcp.servers.dict]\n"
            f"url = {json.dumps(dict_url)}\n"
        )
        (project / "review.prose").write_text(PROGRAM)
        yield World(project, model_url, dict_calls)


def _run_dir(project: Path) -> Path:
    (run_dir,) = (project / ".prose" / "runs").iterdir()
    return run_dir


def _journal_lines(project: Path) -> int:
    runs = project / ".prose" / "runs"
    journals = list(runs.glob("*/journal.jsonl")) if runs.exists() else []
    return journals[0].read_bytes().count(b"\n") if journals else 0


def _prose(w: World, *args: str, kill_at: int | None = None) -> int | None:
    """Run `prose ARGS` in the project; with `kill_at`, SIGKILL it once the journal holds
    that many lines. The exit code, or None when it was killed."""
    child = subprocess.Popen(
        [sys.executable, "-m", "openprose.cli", *args],
        cwd=w.project,
        env=w.env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while child.poll() is None and time.monotonic() < deadline:
            if kill_at is not None and _journal_lines(w.project) >= kill_at:
                child.send_signal(signal.SIGKILL)
                child.wait(10)
                return None
            time.sleep(0.005)
        if child.poll() is None:
            raise AssertionError(f"prose {' '.join(args)} did not end in 120 s")
        return child.returncode
    finally:
        if child.poll() is None:
            child.kill()
        child.wait(10)


RUN = ("run", "review.prose", "--provider", "openai")


def _drive_cli(w: World, kills: tuple[int, ...] = ()) -> tuple[list[int | None], int]:
    """run -> (exit 4) answer -> resume, each step SIGKILLed at the next of `kills` (journal
    line counts) it reaches and resumed: the exit codes in order and how many kills happened
    (a step that ends before the journal reaches its kill point passes it on to the next)."""
    codes: list[int | None] = []
    command: tuple[str, ...] = RUN
    pending = list(kills)
    for _ in range(8 + len(kills)):
        code = _prose(w, *command, kill_at=pending[0] if pending else None)
        codes.append(code)
        run_id = _run_dir(w.project).name
        if code is None:
            pending.pop(0)
            command = ("resume", run_id)
        elif code == 4:
            assert _prose(w, "answer", run_id, "1") == 0
            command = ("resume", run_id)
        elif code == 0:
            return codes, len(kills) - len(pending)
        else:
            raise AssertionError(f"prose {' '.join(command)} exited {code}: {codes}")
    raise AssertionError(f"the run never ended: {codes}")


def _outputs(project: Path) -> dict[str, Any]:
    result: dict[str, Any] = json.loads((_run_dir(project) / "outputs.json").read_text())
    return result


def _assert_tools_called_once(w: World, extra_allowed: int) -> None:
    """Each call of the uninterrupted run was made; beyond them at most `extra_allowed` more
    (the call in flight at a kill, made again on resume)."""
    notes, words = w.notes_calls(), list(w.dict_calls)
    assert set(notes) == set(NOTES_CALLS) and set(words) == set(DICT_CALLS), (notes, words)
    extra = len(notes) - len(NOTES_CALLS) + len(words) - len(DICT_CALLS)
    assert extra <= extra_allowed, (notes, words)


def test_the_cli_runs_it_waits_for_the_answer_and_resumes(tmp_path: Path) -> None:
    with world(tmp_path) as w:
        codes, _ = _drive_cli(w)
        assert codes == [4, 0]
        assert _outputs(w.project) == OUTPUTS
        journal = (_run_dir(w.project) / "journal.jsonl").read_text()
        assert "typed_invalid" in journal and "question_answered" in journal
        _assert_tools_called_once(w, extra_allowed=0)
        assert w.notes_calls() == NOTES_CALLS and w.dict_calls == DICT_CALLS


def test_the_python_api_gives_the_same_outputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import openprose

    with world(tmp_path) as w:
        for name, value in w.env().items():
            if name.startswith("OPENAI_"):
                monkeypatch.setenv(name, value)
        monkeypatch.delenv("PROSE_PROVIDER", raising=False)
        monkeypatch.chdir(w.project)  # the stdio server's command is relative to the project
        first = openprose.run(w.project / "review.prose", provider="openai", project_dir=w.project)
        assert first.status == "waiting", first.error
        asked = openprose.answer(first.run_id, "now", project_dir=w.project)
        assert (asked["answer"], asked["by"]) == ("now", "api")
        done = openprose.resume(first.run_id, provider="openai", project_dir=w.project)
        assert done.status == "succeeded", done.error
        assert done.outputs == OUTPUTS
        assert _outputs(w.project) == OUTPUTS
        assert w.notes_calls() == NOTES_CALLS and w.dict_calls == DICT_CALLS


# One uninterrupted run writes 40 journal lines: 1-19 by `prose run` (the review's MCP calls
# at 5-7 and 10-12: tool_call, permission, tool_result; the typed answer's re-ask at 15-17; the
# question at 18), 20 by `prose answer`, 21-40 by `prose resume` (the review served from the
# journal at 23-27, the fix's MCP calls at 30-32 and 35-37). Each kill costs a resume (~10 s
# on a loaded 2-core machine, most of it the stdio server starting), so by default two runs
# are each killed several times: inside MCP calls of both kinds, in the re-ask, at the
# question, while the resume replays; PROSE_E2E_EVERY_KILL=1 kills a run after each line
# N = 1..40 in turn (~17 minutes; all passed on 2026-12-07).
SAMPLED_KILLS = ((6, 16, 31), (11, 18, 24, 36))
EVERY_KILL = os.environ.get("PROSE_E2E_EVERY_KILL") == "1"


@pytest.mark.parametrize(
    "kills", [(n,) for n in range(1, 41)] if EVERY_KILL else SAMPLED_KILLS, ids=str
)
def test_killed_after_journal_lines_it_resumes_to_the_same_outputs(
    tmp_path: Path, kills: tuple[int, ...]
) -> None:
    with world(tmp_path) as w:
        codes, killed = _drive_cli(w, kills)
        assert killed == len(kills), codes
        assert codes[-1] == 0 and codes.count(4) == 1, codes  # the question asked until answered
        assert _outputs(w.project) == OUTPUTS, codes
        _assert_tools_called_once(w, extra_allowed=killed)

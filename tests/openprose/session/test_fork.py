"""`openprose.fork`: a new run that takes its parent's answers before a step, counted at a
loopback fake of the Anthropic API — nothing before the step is sent again, a changed input
re-asks exactly the calls whose prompts it changes, and outputs equal a fresh run's."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import openprose
from openprose.record.events import Event, SessionStarted
from openprose.record.runstore import RUNS_DIR
from tests.support.fake_llm_server import FakeLLMServer, Fault

PROGRAM = """\
input topic: "what to write about"
input tone: "how it sounds"
let outline = session "Outline about {topic}"
let style = session "Describe the {tone} tone"
let draft = session "Draft from {outline} in {style}"
parallel:
  a = session "Angle A on {draft}"
  b = session "Angle B on {draft}"
output final = session "Final {a} {b}"
"""
INPUTS = {"topic": "cats", "tone": "warm"}
# the steps of the calls, in program order (statements 1 and 2 are the inputs)
STEPS = ["3", "4", "5", "6|1", "6|2", "7"]


@pytest.fixture
async def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeLLMServer]:
    """The fake (it answers "echo: PROMPT"), as the project's Anthropic API."""
    async with FakeLLMServer() as fake:
        for name in ("PROSE_PROVIDER", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        monkeypatch.chdir(tmp_path)
        (tmp_path / "p.prose").write_text(PROGRAM)
        yield fake


def prompts(server: FakeLLMServer) -> list[str]:
    """The prompt of each request the server received, in order of arrival."""
    return [body["messages"][-1]["content"] for body in server.stats.bodies]


def sent_since(server: FakeLLMServer, before: int) -> list[str]:
    return prompts(server)[before:]


def journal(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines()]


def origins(run_dir: Path) -> dict[str, Any]:
    """step -> where the fork's answer came from (absent: sent)."""
    return {
        e["step"]: e.get("inherited") for e in journal(run_dir) if e["ev"] == "session_finished"
    }


async def run_parent(server: FakeLLMServer, **inputs: str) -> Any:
    result = await openprose.arun("p.prose", inputs={**INPUTS, **inputs}, project_dir=Path.cwd())
    assert result.status == "succeeded", result.error
    return result


async def test_a_fork_sends_nothing_before_its_step_and_ends_as_a_fresh_run(
    server: FakeLLMServer,
) -> None:
    parent = await run_parent(server)
    assert server.stats.attempts == len(STEPS)
    fresh = await run_parent(server)
    before = server.stats.attempts
    forked = await openprose.afork(parent.run_id, "5")
    assert forked.status == "succeeded", forked.error
    assert forked.run_id not in (parent.run_id, fresh.run_id)
    # only the step and what follows it reached the server
    sent = sent_since(server, before)
    assert len(sent) == 4
    assert [p.split()[0] for p in sent[:1]] == ["Draft"]
    assert not any(p.startswith(("Outline", "Describe")) for p in sent)
    assert forked.outputs == fresh.outputs == parent.outputs
    assert forked.usage["requests_sent"] == 4
    assert forked.usage["requests_served_from_journal"] == 2
    where = origins(forked.run_dir)
    assert where["3"] == {"run": parent.run_id, "step": "3"}
    assert where["4"] == {"run": parent.run_id, "step": "4"}
    assert all(where[step] is None for step in ("5", "6|1", "6|2", "7"))
    meta = json.loads((forked.run_dir / "run.json").read_text())
    assert meta["forked_from"] == {"run": parent.run_id, "step": "5"}
    assert meta["inputs"] == INPUTS


@pytest.mark.parametrize("step", STEPS)
async def test_at_every_step_only_what_had_not_finished_when_it_started_is_sent(
    server: FakeLLMServer, step: str
) -> None:
    parent = await run_parent(server)
    events = journal(parent.run_dir)
    start = next(i for i, e in enumerate(events) if e.get("step") == step)
    done_before = {e["step"] for e in events[:start] if e["ev"] == "session_finished"}
    before = server.stats.attempts
    forked = await openprose.afork(parent.run_id, step)
    assert forked.status == "succeeded", forked.error
    assert forked.outputs == parent.outputs
    assert len(sent_since(server, before)) == len(STEPS) - len(done_before)
    where = origins(forked.run_dir)
    assert {s for s, origin in where.items() if origin is not None} == done_before
    assert step not in done_before


async def test_a_changed_input_re_asks_exactly_the_calls_it_changes(
    server: FakeLLMServer,
) -> None:
    parent = await run_parent(server)
    before = server.stats.attempts
    # forked at the last step: every earlier call could be taken, but the tone feeds the
    # style, the draft and the angles; only the outline is the same request
    forked = await openprose.afork(parent.run_id, "7", inputs={"tone": "dry"})
    assert forked.status == "succeeded", forked.error
    sent = sent_since(server, before)
    assert [p.split()[0] for p in sent] == ["Describe", "Draft", "Angle", "Angle", "Final"]
    assert sent[0].startswith("Describe the dry tone")
    assert origins(forked.run_dir)["3"] == {"run": parent.run_id, "step": "3"}
    reference = await run_parent(server, tone="dry")
    assert forked.outputs == reference.outputs != parent.outputs
    meta = json.loads((forked.run_dir / "run.json").read_text())
    assert meta["inputs"] == {"topic": "cats", "tone": "dry"}
    assert meta["forked_from"]["inputs"] == {"tone": "dry"}


async def test_a_set_binding_is_answered_with_its_value_and_what_follows_re_asked(
    server: FakeLLMServer,
) -> None:
    parent = await run_parent(server)
    before = server.stats.attempts
    forked = await openprose.afork(parent.run_id, "7", bindings={"draft": "SHORT"})
    assert forked.status == "succeeded", forked.error
    sent = sent_since(server, before)
    assert sorted(p.partition("\n")[0] for p in sent[:2]) == [
        "Angle A on SHORT",
        "Angle B on SHORT",
    ]
    assert len(sent) == 3 and sent[2].startswith("Final echo: Angle A on SHORT")
    where = origins(forked.run_dir)
    assert where["5"] == {"set": "draft"}
    assert where["3"]["run"] == where["4"]["run"] == parent.run_id
    assert (forked.run_dir / "bindings" / "draft.md").read_text().strip().endswith("SHORT")


async def test_a_fork_of_a_fork(server: FakeLLMServer) -> None:
    parent = await run_parent(server)
    child = await openprose.afork(parent.run_id, "4", inputs={"tone": "dry"})
    before = server.stats.attempts
    grandchild = await openprose.afork(child.run_id, "7")
    assert grandchild.status == "succeeded", grandchild.error
    assert [p.split()[0] for p in sent_since(server, before)] == ["Final"]
    assert grandchild.outputs == child.outputs
    where = origins(grandchild.run_dir)
    assert {where[step]["run"] for step in STEPS[:-1]} == {child.run_id}
    meta = json.loads((grandchild.run_dir / "run.json").read_text())
    assert meta["forked_from"] == {"run": child.run_id, "step": "7"}
    assert meta["inputs"] == {"topic": "cats", "tone": "dry"}


async def test_a_fork_of_a_failed_run(server: FakeLLMServer) -> None:
    def refuse_the_draft(event: Event, t: float) -> None:
        if isinstance(event, SessionStarted) and event.step == "5":
            server.script(Fault("400"))  # the draft's request is refused: the run fails

    failed = await openprose.arun(
        "p.prose", inputs=INPUTS, project_dir=Path.cwd(), observer=refuse_the_draft
    )
    assert failed.status == "failed"
    before = server.stats.attempts
    forked = await openprose.afork(failed.run_id, "5")
    assert forked.status == "succeeded", forked.error
    sent = sent_since(server, before)
    assert [p.split()[0] for p in sent] == ["Draft", "Angle", "Angle", "Final"]
    assert forked.outputs == (await run_parent(server)).outputs


async def test_a_fork_of_a_killed_run(server: FakeLLMServer, tmp_path: Path) -> None:
    server.latency = 0.3  # time to kill the run while the draft is asked
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "openprose.cli", "run", "p.prose", "--input", "topic=cats",
        "--input", "tone=warm", stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL, env=env,
    )  # fmt: skip
    runs = tmp_path / RUNS_DIR
    try:
        for _ in range(400):
            finished = [
                e["step"]
                for run in runs.glob("*/journal.jsonl")
                for e in journal(run.parent)
                if e["ev"] == "session_finished"
            ] if runs.is_dir() else []  # fmt: skip
            if "4" in finished:
                break
            await asyncio.sleep(0.05)
        process.send_signal(signal.SIGKILL)
    finally:
        await process.wait()
    server.latency = 0.0
    (killed,) = [p.name for p in runs.iterdir()]
    before = server.stats.attempts
    forked = await openprose.afork(killed, "5")
    assert forked.status == "succeeded", forked.error
    assert [p.split()[0] for p in sent_since(server, before)] == [
        "Draft",
        "Angle",
        "Angle",
        "Final",
    ]
    assert forked.outputs == (await run_parent(server)).outputs


class Crash(BaseException):
    """Stands in for the process dying mid-run."""


@pytest.mark.parametrize(
    ("bindings", "resent", "at_the_draft"),
    [
        ({}, ["Final"], "parent"),
        ({"draft": "SHORT"}, ["Angle", "Angle", "Final"], {"set": "draft"}),
    ],
)
async def test_a_resumed_fork_still_takes_from_its_parent(
    server: FakeLLMServer, bindings: dict[str, str], resent: list[str], at_the_draft: Any
) -> None:
    parent = await run_parent(server)

    def die_at_the_draft(event: Event, t: float) -> None:
        if isinstance(event, SessionStarted) and event.step == "5":
            raise Crash

    before = server.stats.attempts
    with pytest.raises(Crash):
        await openprose.afork(parent.run_id, "7", bindings=bindings, observer=die_at_the_draft)
    (fork_dir,) = [p for p in (Path.cwd() / RUNS_DIR).iterdir() if p.name != parent.run_id]
    meta = json.loads((fork_dir / "run.json").read_text())
    (fork_dir / "run.json").write_text(json.dumps({**meta, "pid": None}))  # its process gone
    assert list(origins(fork_dir)) == ["3", "4"]
    resumed = await openprose.aresume(fork_dir.name)
    assert resumed.status == "succeeded", resumed.error
    # what the fork had not taken yet from its parent when it died is taken now
    assert [p.split()[0] for p in sent_since(server, before)] == resent
    expected = {"run": parent.run_id, "step": "5"} if at_the_draft == "parent" else at_the_draft
    assert origins(fork_dir)["5"] == expected


async def test_bad_run_step_input_or_binding_is_one_clear_error(server: FakeLLMServer) -> None:
    parent = await run_parent(server)
    before = server.stats.attempts
    with pytest.raises(openprose.RunError, match=r"no step '9' in run .*; its steps: 3, 4, 5"):
        await openprose.afork(parent.run_id, "9")
    with pytest.raises(openprose.RunError, match="no run 'nope'"):
        await openprose.afork("nope", "3")
    with pytest.raises(openprose.RunError, match=r"declares no input 'mood' \(it declares: topic"):
        await openprose.afork(parent.run_id, "3", inputs={"mood": "x"})
    # a binding made at or after the step cannot be set: the fork asks it again anyway
    with pytest.raises(openprose.RunError, match=r"no session bound 'draft' before step 5"):
        await openprose.afork(parent.run_id, "5", bindings={"draft": "x"})
    assert server.stats.attempts == before
    assert len(list((Path.cwd() / RUNS_DIR).iterdir())) == 1  # no run was made


TOOL_PROGRAM = """\
agent reader:
  prompt: "You read files"
  permissions:
    read: allow

let notes = session: reader
  prompt: "Read the notes"
output summary = session "Summarise {notes}"
"""
TOOL_RULES = {
    "rules": [
        {
            "match": "Read the notes",
            "turns": [
                {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.md"}}]},
                {"text": "read"},
            ],
        },
        {"match": "Summarise", "answer": "short"},
    ]
}


async def test_a_tool_loop_is_taken_while_its_tools_give_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.prose").write_text(TOOL_PROGRAM)
    (tmp_path / "rules.json").write_text(json.dumps(TOOL_RULES))
    (tmp_path / "notes.md").write_text("hello")
    parent = await openprose.arun("t.prose", provider="scripted:rules.json", project_dir=tmp_path)
    assert parent.status == "succeeded", parent.error
    same = await openprose.afork(parent.run_id, "3")
    assert (same.usage["requests_sent"], same.usage["requests_served_from_journal"]) == (1, 2)
    assert origins(same.run_dir)["2~t1"] == {"run": parent.run_id, "step": "2~t1"}
    # the tool runs again in the fork: what it reads now is in the next turn's request,
    # which is no longer the parent's, so that turn is asked
    (tmp_path / "notes.md").write_text("changed")
    changed = await openprose.afork(parent.run_id, "3")
    assert (changed.usage["requests_sent"], changed.usage["requests_served_from_journal"]) == (
        2,
        1,
    )
    assert origins(changed.run_dir)["2"] == {"run": parent.run_id, "step": "2"}
    assert origins(changed.run_dir)["2~t1"] is None


async def test_a_set_tool_loop_session_runs_no_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.prose").write_text(TOOL_PROGRAM)
    (tmp_path / "rules.json").write_text(json.dumps(TOOL_RULES))
    (tmp_path / "notes.md").write_text("hello")
    parent = await openprose.arun("t.prose", provider="scripted:rules.json", project_dir=tmp_path)
    forked = await openprose.afork(parent.run_id, "3", bindings={"notes": "mine"})
    assert forked.status == "succeeded", forked.error
    assert origins(forked.run_dir) == {"2": {"set": "notes"}, "3": None}
    assert not [e for e in journal(forked.run_dir) if e["ev"].startswith("tool_")]

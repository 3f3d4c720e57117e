"""Sessions whose agents act: the tool loop on the scripted provider, journaling, limits,
resume, approvals."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from openprose.parser import parse_text
from openprose.providers import ScriptedProvider
from openprose.vm.runner import VMConfig, resume_run, run_program
from openprose.vm.runtime import ToolRuntime
from openprose.vm.tools import PreApprover

REVIEWER = """\
agent reviewer:
  prompt: "You review code"
  permissions:
    read: ["src/"]
    write: ["output/"]
    bash: deny

let report = session: reviewer
  prompt: "Review the code and write a report"
"""

REVIEW_TURNS = [
    {"tool_calls": [{"name": "list_files", "arguments": {"pattern": "src/**"}}]},
    {
        "tool_calls": [
            {"name": "read_file", "arguments": {"path": "src/app.py"}},
            {"name": "read_file", "arguments": {"path": "src/util.py"}},
        ]
    },
    {
        "tool_calls": [
            {
                "name": "write_file",
                "arguments": {"path": "output/review.md", "content": "# Review\nok\n"},
            }
        ]
    },
    "Wrote output/review.md",
]


class FailsAt:
    """A provider whose `number`th request fails (a non-transient error); the others go
    to `inner`."""

    name = "scripted"

    def __init__(self, number: int, inner: Any) -> None:
        self.number, self.inner, self.sent = number, inner, 0

    async def complete(self, request: Any) -> Any:
        from openprose.providers.base import ProviderError

        self.sent += 1
        if self.sent == self.number:
            raise ProviderError("connection reset")
        return await self.inner.complete(request)

    async def aclose(self) -> None:
        return None


def _project(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("def main():\n    return 1\n")
    (tmp_path / "src" / "util.py").write_text("X = 2\n")
    return tmp_path


def _run(project: Path, source: str, provider: Any, **kwargs: Any) -> Any:
    parsed = parse_text(source, str(project / "main.prose"))
    assert parsed.ok, [d.message for d in parsed.diagnostics]
    return asyncio.run(
        run_program(parsed.program, source, provider=provider, project_dir=project, **kwargs)
    )


def test_tool_loop_reads_and_writes_project_files(vm: Any, tmp_path: Path) -> None:
    project = _project(tmp_path)
    provider = vm.spy([{"match": "Review the code", "turns": REVIEW_TURNS}])
    result = _run(project, REVIEWER, provider)
    assert result.status == "succeeded", result.error
    assert (project / "output" / "review.md").read_text() == "# Review\nok\n"
    assert result.outputs == {} and result.result == "Wrote output/review.md"
    # the second turn saw the listing; the third saw both files' contents
    assert [s.name for s in provider.requests[0].tools] == [
        "read_file", "list_files", "search_files", "write_file", "edit_file",
    ]  # fmt: skip
    listing = provider.requests[1].messages[-1].tool_results[0].content
    assert "src/app.py" in listing and "src/util.py" in listing
    contents = [r.content for r in provider.requests[2].messages[-1].tool_results]
    assert contents == ["def main():\n    return 1\n", "X = 2\n"]
    events = vm.events(result)
    kinds = [e["ev"] for e in events]
    # each turn's results are journaled before the next model call
    finished = [i for i, k in enumerate(kinds) if k == "session_finished"]
    for before, after, calls in zip(finished, finished[1:], (1, 2, 1), strict=False):
        assert kinds[before:after].count("tool_result") == calls
    steps = [e["step"] for e in events if e["ev"] == "session_finished"]
    assert steps == ["2", "2~t1", "2~t2", "2~t3"]


def test_a_tool_acts_only_once_its_call_and_permission_are_in_the_journal(
    vm: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    """The journal writes once per event-loop turn, but a tool's effect is outside the
    process: its `tool_call` and `permission` must be on disk before it acts, or a kill -9
    followed by a resume would run it twice."""
    from openprose.record.journal import read_journal
    from openprose.vm.tools.toolbox import Toolbox

    project = _project(tmp_path)
    on_disk: list[list[str]] = []
    real_path = Toolbox._path

    async def path_then_look(self: Toolbox, call: Any, key: str, kind: str, raw: Any) -> Any:
        resolved = await real_path(self, call, key, kind, raw)  # permission decided: it acts next
        if kind == "write":
            journal = next((project / ".prose" / "runs").glob("*/journal.jsonl"))
            on_disk.append([e["ev"] for e in read_journal(journal)])
        return resolved

    monkeypatch.setattr(Toolbox, "_path", path_then_look)
    provider = vm.spy([{"match": "Review the code", "turns": REVIEW_TURNS}])
    result = _run(project, REVIEWER, provider)
    assert result.status == "succeeded", result.error
    assert len(on_disk) == 1
    assert on_disk[0][-2:] == ["tool_call", "permission"]
    assert on_disk[0].count("tool_result") == 3  # the earlier turns' results too


def test_plain_sessions_get_no_tools(vm: Any) -> None:
    provider = vm.spy(default="fine")
    result = vm.run('agent a:\n  prompt: "x"\n\nsession: a\n  prompt: "hi"\n', provider)
    assert result.status == "succeeded"
    assert provider.requests[0].tools == ()
    assert "tools offered" not in (provider.requests[0].system or "")


def test_denied_action_is_reported_to_the_model_and_journaled(vm: Any, tmp_path: Path) -> None:
    project = _project(tmp_path)
    turns = [
        {
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "src/app.py", "content": "x"}}
            ]
        },
        "gave up",
    ]
    provider = vm.spy([{"match": "Review", "turns": turns}])
    result = _run(project, REVIEWER, provider)
    assert result.status == "succeeded"
    assert (project / "src" / "app.py").read_text().startswith("def main")
    answer = provider.requests[1].messages[-1].tool_results[0]
    assert answer.is_error and "permission denied" in answer.content
    decisions = vm.events(result, "permission")
    assert decisions[0]["decision"] == "denied" and decisions[0]["action"] == "src/app.py"


def test_turn_limit_fails_the_session_catchably(vm: Any, tmp_path: Path) -> None:
    project = _project(tmp_path)
    source = REVIEWER.replace(
        'let report = session: reviewer\n  prompt: "Review the code and write a report"\n',
        'try:\n  session: reviewer\n    prompt: "Review forever"\ncatch as err:\n  session "Recover from {err.message}"\n',
    )
    forever = {"tool_calls": [{"name": "read_file", "arguments": {"path": "src/app.py"}}]}
    provider = vm.spy([{"match": "Review forever", "answer": forever}], default="recovered")
    result = _run(project, source, provider, config=VMConfig(max_turns=3))
    assert result.status == "succeeded", result.error
    recover = provider.sent("Recover")[0].last_user_text()
    assert "after 3 turns" in recover and "max_turns" in recover
    assert len(provider.sent("Review forever")) == 3


def test_tool_output_is_capped_and_the_cut_journaled(vm: Any, tmp_path: Path) -> None:
    project = _project(tmp_path)
    (project / "src" / "big.py").write_text("y" * 5000)
    turns = [{"tool_calls": [{"name": "read_file", "arguments": {"path": "src/big.py"}}]}, "done"]
    result = _run(
        project,
        REVIEWER,
        vm.spy([{"match": "Review", "turns": turns}]),
        config=VMConfig(tool_output_cap=1000),
    )
    cut = vm.events(result, "tool_result")[0]
    assert cut["omitted_bytes"] == 4000
    assert "cut (cap 1000 bytes)" in cut["content"]


def test_resume_never_reruns_a_completed_tool_call(vm: Any, tmp_path: Path) -> None:
    """A run that fails after its tool calls (provider error on the last turn) is resumed:
    the completed calls are served from the journal, none runs twice."""
    project = _project(tmp_path)
    (project / "output").mkdir()
    source = REVIEWER.replace("bash: deny", "bash: allow")
    turns: list[Any] = [
        {
            "tool_calls": [
                {"name": "run_command", "arguments": {"command": "echo x >> output/count.txt"}}
            ]
        },
        {
            "tool_calls": [
                {"name": "run_command", "arguments": {"command": "echo y >> output/count.txt"}}
            ]
        },
        "finished",
    ]
    failing = ScriptedProvider(
        [{"match": "Review", "turns": turns[:2] + [{"text": "unused"}]}], default=None
    )

    from openprose.vm.tools import sandbox_problem

    if sandbox_problem() is not None:
        import pytest

        pytest.skip(f"shell sandbox unavailable: {sandbox_problem()}")
    first = _run(project, source, FailsAt(3, failing))
    assert first.status == "failed"
    assert (project / "output" / "count.txt").read_text() == "x\ny\n"
    text = (first.run_dir / "program.prose").read_text()
    parsed = parse_text(text, str(project / "main.prose"))
    second = asyncio.run(
        resume_run(
            first.run_dir,
            parsed.program,
            provider=vm.spy([{"match": "Review", "turns": turns}]),
            project_dir=project,
        )
    )
    assert second.status == "succeeded", second.error
    assert (project / "output" / "count.txt").read_text() == "x\ny\n"


def test_prompt_without_a_terminal_waits_then_approve_and_resume(vm: Any, tmp_path: Path) -> None:
    project = _project(tmp_path)
    source = REVIEWER.replace('write: ["output/"]', "write: prompt")
    turns = [
        {
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "notes.md", "content": "hi"}}
            ]
        },
        "done",
    ]
    first = _run(project, source, vm.spy([{"match": "Review", "turns": turns}]))
    assert first.status == "waiting"
    assert "notes.md" in (first.error or "")
    assert not (project / "notes.md").exists()
    pending = vm.events(first, "approval_requested")
    assert pending and pending[0]["action"] == "notes.md"
    assert "waiting" in (first.run_dir / "state.md").read_text()

    from openprose.vm.approvals import decide_pending

    assert decide_pending(first.run_dir, "once", all_pending=True) == [pending[0]["id"]]
    text = (first.run_dir / "program.prose").read_text()
    parsed = parse_text(text, str(project / "main.prose"))
    second = asyncio.run(
        resume_run(
            first.run_dir,
            parsed.program,
            provider=vm.spy([{"match": "Review", "turns": turns}]),
            project_dir=project,
        )
    )
    assert second.status == "succeeded", second.error
    assert (project / "notes.md").read_text() == "hi"
    decisions = [e["decision"] for e in vm.events(second, "permission")]
    assert decisions[-2:] == ["asked", "approved"]


def test_yes_pre_approves(vm: Any, tmp_path: Path) -> None:
    project = _project(tmp_path)
    source = REVIEWER.replace('write: ["output/"]', "write: prompt")
    turns = [
        {
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "notes.md", "content": "hi"}}
            ]
        },
        "done",
    ]
    result = _run(
        project, source, vm.spy([{"match": "Review", "turns": turns}]),
        tools=ToolRuntime(approver=PreApprover()),
    )  # fmt: skip
    assert result.status == "succeeded"
    assert (project / "notes.md").read_text() == "hi"


def test_finally_waits_with_the_run_and_runs_once_on_resume(vm: Any, tmp_path: Path) -> None:
    project = _project(tmp_path)
    source = (
        'agent w:\n  prompt: "x"\n  permissions:\n    write: prompt\n\n'
        'try:\n  session: w\n    prompt: "Review and write"\nfinally:\n  session "Clean up"\n'
    )
    turns = [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "n.md", "content": "x"}}]},
        "done",
    ]
    rules = [{"match": "Review", "turns": turns}]
    first_provider = vm.spy(rules, default="cleaned")
    first = _run(project, source, first_provider)
    assert first.status == "waiting"
    assert first_provider.sent("Clean up") == []
    from openprose.vm.approvals import decide_pending

    decide_pending(first.run_dir, "once")
    parsed = parse_text((first.run_dir / "program.prose").read_text(), str(project / "main.prose"))
    provider = vm.spy(rules, default="cleaned")
    second = asyncio.run(
        resume_run(first.run_dir, parsed.program, provider=provider, project_dir=project)
    )
    assert second.status == "succeeded", second.error
    assert len(provider.sent("Clean up")) == 1


def test_permissions_that_allow_nothing_leave_a_plain_completion(vm: Any) -> None:
    provider = vm.spy(default="fine")
    source = (
        'agent a:\n  prompt: "x"\n  permissions:\n    bash: deny\n\nsession: a\n  prompt: "hi"\n'
    )
    result = vm.run(source, provider)
    assert result.status == "succeeded"
    assert provider.requests[0].tools == () and provider.requests[0].system == "x"


def test_missing_skill_is_journaled_and_the_agent_goes_without(vm: Any, tmp_path: Path) -> None:
    source = (
        'use "./skills/nowhere"\n\nagent a:\n  prompt: "x"\n  skills: ["nowhere"]\n'
        '  permissions:\n    read: ["src/"]\n\nsession: a\n  prompt: "hi"\n'
    )
    provider = vm.spy(default="fine")
    result = vm.run(source, provider)
    assert result.status == "succeeded"
    missing = vm.events(result, "skill_missing")
    assert missing and "nowhere" in missing[0]["problem"]
    assert "load_skill" not in [t.name for t in provider.requests[0].tools]


def test_skill_scripts_run_under_the_agents_execute_permission(vm: Any, tmp_path: Path) -> None:
    from openprose.vm.tools import sandbox_problem

    if sandbox_problem() is not None:
        import pytest

        pytest.skip(f"shell sandbox unavailable: {sandbox_problem()}")
    skill = tmp_path / "skills" / "greeter"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: greeter\ndescription: Greets people by running scripts/hello.sh\n---\n"
        "Run scripts/hello.sh with the name.\n"
    )
    (skill / "scripts" / "hello.sh").write_text('#!/bin/sh\necho "hello $1"\n')
    (skill / "scripts" / "hello.sh").chmod(0o755)
    source = (
        'use "./skills/greeter"\n\nagent g:\n  prompt: "You greet"\n  skills: ["greeter"]\n'
        '  permissions:\n    execute: ["skills/greeter/scripts/*.sh"]\n    bash: deny\n\n'
        'session: g\n  prompt: "Greet Ada"\n'
    )
    turns = [
        {"tool_calls": [{"name": "load_skill", "arguments": {"name": "greeter"}}]},
        {
            "tool_calls": [
                {
                    "name": "run_command",
                    "arguments": {"command": "skills/greeter/scripts/hello.sh Ada"},
                }
            ]
        },
        {"tool_calls": [{"name": "run_command", "arguments": {"command": "sh -c 'echo sneaky'"}}]},
        "greeted",
    ]
    provider = vm.spy([{"match": "Greet", "turns": turns}])
    result = vm.run(source, provider)
    assert result.status == "succeeded", result.error
    assert "greeter: Greets people" in (provider.requests[0].system or "")
    results = [e["content"] for e in vm.events(result, "tool_result")]
    assert "Run scripts/hello.sh" in results[0] and "skills/greeter/scripts/hello.sh" in results[0]
    assert "hello Ada" in results[1]
    assert "permission denied" in results[2]
    loaded = vm.events(result, "skill_loaded")[0]
    assert loaded["name"] == "greeter" and len(loaded["sha256"]) == 64


def test_allow_for_the_run_is_remembered_by_a_resume(vm: Any, tmp_path: Path) -> None:
    from openprose.vm.tools.approvals import Answer, ApprovalRequest

    project = _project(tmp_path)
    source = REVIEWER.replace('write: ["output/"]', "write: prompt").replace(
        'prompt: "Review the code and write a report"',
        'prompt: "Review the code and write a report"\n\nsession: reviewer\n  prompt: "Again"',
    )
    write = {"tool_calls": [{"name": "write_file", "arguments": {"path": "n.md", "content": "x"}}]}
    rules = [
        {"match": "Review", "turns": [write, "done"]},
        {"match": "Again", "turns": [write, "done"]},
    ]
    asked: list[str] = []

    class ForTheRun:
        async def ask(self, request: ApprovalRequest) -> Answer:
            asked.append(request.action)
            return "run"

    failing = vm.spy([rules[0], {"match": "Again", "answer": "x", "failures": ["error"]}])
    first = _run(project, source, failing, tools=ToolRuntime(approver=ForTheRun()))
    assert first.status == "failed" and asked == ["n.md"]
    parsed = parse_text((first.run_dir / "program.prose").read_text(), str(project / "main.prose"))
    second = asyncio.run(
        resume_run(first.run_dir, parsed.program, provider=vm.spy(rules), project_dir=project)
    )
    assert second.status == "succeeded", second.error  # no approver: the grant answered
    allowed = [
        e for e in vm.events(second, "permission") if e["reason"] == "approved earlier for this run"
    ]
    assert allowed


def test_resume_uses_the_skill_text_the_run_started_with(vm: Any, tmp_path: Path) -> None:
    skill = tmp_path / "skills" / "style"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: style\ndescription: House style\n---\nUse tabs.\n")
    source = (
        'use "./skills/style"\n\nagent a:\n  prompt: "x"\n  skills: ["style"]\n\n'
        'session: a\n  prompt: "Format"\n\nsession "Then"\n'
    )
    load = {"tool_calls": [{"name": "load_skill", "arguments": {"name": "style"}}]}
    rules: list[dict[str, Any]] = [{"match": "Format", "turns": [load, "formatted"]}]
    first = vm.run(
        source, vm.spy([*rules, {"match": "Then", "answer": "x", "failures": ["error"]}])
    )
    assert first.status == "failed"
    (skill / "SKILL.md").write_text("---\nname: style\ndescription: Changed\n---\nUse spaces.\n")
    provider = vm.spy([*rules, {"match": "Then", "answer": "done"}])
    second = vm.resume(first.run_dir, provider)
    assert second.status == "succeeded", second.error
    loaded = vm.events(second, "skill_loaded")
    assert len(loaded) == 1 and loaded[0]["instructions"] == "Use tabs."


LONG_TURNS = 40


def _long_conversation(turns: int = LONG_TURNS) -> list[Any]:
    """A model that reads a file per turn, `turns` times, then answers."""
    script: list[Any] = [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": f"src/f{i % 5}.py"}}]}
        for i in range(turns)
    ]
    return [*script, "read them all"]


def _long_project(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    for i in range(5):
        (tmp_path / "src" / f"f{i}.py").write_text(f"N = {i}\n" * 30)
    return tmp_path


LONG_READER = """\
agent reader:
  prompt: "You read"
  permissions:
    read: ["src/"]

let summary = session: reader
  prompt: "Read every file"
"""


def test_each_tool_turn_journals_only_its_delta(vm: Any, tmp_path: Path) -> None:
    """The journal's cost of a turn is flat in the conversation's length: turn 39's event is
    no bigger than turn 2's, and the cassette made from the journal still holds the whole
    requests the provider was sent, exactly."""
    import orjson

    from openprose.providers import ModelRequest
    from openprose.providers.replay import read_cassette

    _long_project(tmp_path)
    provider = vm.spy([{"match": "Read every file", "turns": _long_conversation()}])
    result = vm.run(LONG_READER, provider, config=VMConfig(max_turns=LONG_TURNS + 5))
    assert result.status == "succeeded", result.error
    finished = {e["step"]: e for e in vm.events(result, "session_finished")}
    sizes = {step: len(orjson.dumps(e)) for step, e in finished.items()}
    assert "request" in finished["2"] and "request_delta" not in finished["2"]
    assert finished["2~t5"]["request_delta"]["base"] == "2~t4"
    assert "request" not in finished["2~t5"]
    assert sizes["2~t39"] <= sizes["2~t2"] + 64  # step names grow by a digit, nothing else
    whole = [ModelRequest.from_dict(r.to_dict()) for r in provider.requests]
    rebuilt = [request for request, _ in read_cassette(result.run_dir / "journal.jsonl")]
    assert [r.key() for r in rebuilt] == [r.key() for r in whole]
    assert len(rebuilt[-1].messages) == 1 + 2 * LONG_TURNS


def test_a_long_conversation_resumed_midway_continues_exactly(vm: Any, tmp_path: Path) -> None:
    """A 40-turn tool loop dies at turn 25 (provider error); the resumed run serves turns
    0-24 and their tool results from the journal (no completed call runs again) and sends
    turn 25 on with exactly the conversation an uninterrupted run sends."""
    _long_project(tmp_path)
    config = VMConfig(max_turns=LONG_TURNS + 5, retry_base_delay=0.001)
    rules = [{"match": "Read every file", "turns": _long_conversation()}]
    reference = vm.spy(rules)
    assert vm.run(LONG_READER, reference, config=config).status == "succeeded"
    first = vm.run(LONG_READER, FailsAt(26, vm.spy(rules)), config=config)
    assert first.status == "failed"
    calls_before = len(vm.events(first, "tool_call"))
    assert calls_before == 25
    [failed] = [e for e in vm.events(first, "session_failed") if "attempt" in e]
    assert failed["step"] == "2~t25" and "request" not in failed  # a failed turn: delta too
    assert failed["request_delta"]["base"] == "2~t24"
    resumed_provider = vm.spy(rules)
    second = vm.resume(first.run_dir, resumed_provider)
    assert second.status == "succeeded", second.error
    assert [r.key() for r in resumed_provider.requests] == [
        r.key() for r in reference.requests[25:]
    ]
    calls = [(e["turn"], e["index"]) for e in vm.events(second, "tool_call")]
    assert len(calls) == len(set(calls)) == LONG_TURNS  # every call ran exactly once
    summary = (second.run_dir / "bindings" / "summary.md").read_text()
    assert "read them all" in summary


def test_a_journal_with_tool_turn_deltas_replays_as_a_cassette(vm: Any, tmp_path: Path) -> None:
    from openprose.providers import ReplayProvider

    _long_project(tmp_path)
    config = VMConfig(max_turns=LONG_TURNS + 5)
    rules = [{"match": "Read every file", "turns": _long_conversation(12)}]
    first = vm.run(LONG_READER, vm.spy(rules), config=config)
    replayed = vm.run(LONG_READER, ReplayProvider.from_file(first.run_dir), config=config)
    assert replayed.status == "succeeded", replayed.error
    assert len(vm.events(replayed, "tool_result")) == 12


def test_a_journal_written_before_deltas_still_reads_as_a_cassette(vm: Any, tmp_path: Path) -> None:
    """Journals of earlier versions hold whole requests on every tool turn: same exchanges."""
    import json

    from openprose.providers.replay import read_cassette
    from openprose.record.codec import readable
    from openprose.record.exchanges import exchanges
    from openprose.record.journal import read_journal

    _long_project(tmp_path)
    rules = [{"match": "Read every file", "turns": _long_conversation(6)}]
    run = vm.run(LONG_READER, vm.spy(rules), config=VMConfig(max_turns=10))
    journal = run.run_dir / "journal.jsonl"
    events = (recorded.event for recorded in readable(read_journal(journal)))
    whole = iter(request for request, _ in exchanges(events))
    old_style = []
    for event in read_journal(journal):
        if event["ev"] == "session_finished":
            request = next(whole)
            event.pop("request_delta", None)
            event["request"] = request
        old_style.append(json.dumps(event))
    old = tmp_path / "old-journal.jsonl"
    old.write_text("\n".join(old_style) + "\n")
    assert [r.key() for r, _ in read_cassette(old)] == [r.key() for r, _ in read_cassette(journal)]


def test_a_run_over_the_tool_call_limit_stays_resumable(vm: Any, tmp_path: Path) -> None:
    """Calls past `[vm] max_tool_calls_per_turn` are answered with the limit; the run goes
    on, and a resume (with the limit recorded in run.json) serves them, running nothing."""
    from dataclasses import replace

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("A = 1\n")
    source = (
        'agent r:\n  prompt: "x"\n  permissions:\n    read: ["src/"]\n\n'
        'session: r\n  prompt: "Read"\n\nsession "Then"\n'
    )
    reads = {"tool_calls": [{"name": "read_file", "arguments": {"path": "src/a.py"}}] * 5}
    rules: list[dict[str, Any]] = [{"match": "Read", "turns": [reads, "read"]}]
    config = replace(vm.FAST, max_tool_calls_per_turn=2)
    first = vm.run(
        source,
        vm.spy([*rules, {"match": "Then", "answer": "x", "failures": ["error"]}]),
        config=config,
    )
    assert first.status == "failed"
    results = vm.events(first, "tool_result")
    assert [r["is_error"] for r in results] == [False, False, True, True, True]
    assert "[vm] max_tool_calls_per_turn = 2" in results[2]["content"]
    second = vm.resume(first.run_dir, vm.spy([*rules, {"match": "Then", "answer": "done"}]))
    assert second.status == "succeeded", second.error
    assert len(vm.events(second, "tool_result")) == 5  # served, not run again

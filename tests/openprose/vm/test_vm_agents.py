"""Persistent agents: memory locations, updates after each session, `resume:`, E017/E018."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

MEMORY_RULE = {
    "match": "^Update your memory",
    "answer": lambda r: (
        "MEM after: " + r.last_user_text().split("## This session's task\n")[1].split("\n")[0]
    ),
}


def captain(persist: str) -> str:
    return f"""agent captain:
  model: opus
  persist: {persist}
  prompt: "You coordinate and review"
"""


def test_execution_scoped_memory_and_resume(vm: Any) -> None:
    provider = vm.spy([MEMORY_RULE])
    source = (
        captain("true")
        + """session: captain
  prompt: "Review the plan"
let review = resume: captain
  prompt: "Review step 1"
"""
    )
    result = vm.run(source, provider)
    assert result.status == "succeeded", result.error
    folder = result.run_dir / "agents" / "captain"
    assert (folder / "memory.md").read_text().strip() == "MEM after: Review step 1"
    assert (folder / "captain-001.md").exists() and (folder / "captain-002.md").exists()
    resumed_request = provider.sent("^Review step 1")[0]
    assert "## Your memory\nMEM after: Review the plan" in resumed_request.last_user_text()
    assert resumed_request.system == "You coordinate and review" and resumed_request.model == "opus"
    assert "## Your memory" not in provider.sent("^Review the plan")[0].last_user_text()
    assert len(vm.events(result, "memory_updated")) == 2


def test_project_memory_survives_runs(vm: Any) -> None:
    first = vm.run(
        captain("project") + 'session: captain\n  prompt: "First"\n', vm.spy([MEMORY_RULE])
    )
    assert first.status == "succeeded"
    assert (vm.project / ".prose" / "agents" / "captain" / "memory.md").exists()
    provider = vm.spy([MEMORY_RULE])
    second = vm.run(captain("project") + 'resume: captain\n  prompt: "Second"\n', provider)
    assert second.status == "succeeded", second.error
    assert "MEM after: First" in provider.sent("^Second")[0].last_user_text()


def test_user_and_custom_path_memory(
    vm: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    vm.run(captain("user") + 'session: captain\n  prompt: "Hi"\n', vm.spy([MEMORY_RULE]))
    assert (home / ".prose" / "agents" / "captain" / "memory.md").exists()
    vm.run(
        captain('".prose/custom/shared/"') + 'session: captain\n  prompt: "Hi"\n',
        vm.spy([MEMORY_RULE]),
    )
    assert (vm.project / ".prose" / "custom" / "shared" / "memory.md").exists()


def test_resume_needs_persist_and_memory(vm: Any) -> None:
    plain = 'agent helper:\n  model: haiku\nresume: helper\n  prompt: "x"\n'
    result = vm.run(plain, vm.spy())
    assert result.status == "failed" and "E017" in (result.error or "")
    fresh = vm.run(captain("true") + 'resume: captain\n  prompt: "x"\n', vm.spy())
    assert (
        fresh.status == "failed"
        and "E018" in (fresh.error or "")
        and "main.prose:5:1" in (fresh.error or "")
    )


def test_memory_updates_are_served_on_resume(vm: Any) -> None:
    source = captain("true") + 'session: captain\n  prompt: "One"\nsession "Two"\n'
    broken = vm.spy([MEMORY_RULE, {"match": "^Two", "answer": "x", "failures": ["error"]}])
    failed = vm.run(source, broken)
    assert failed.status == "failed"
    again = vm.spy([MEMORY_RULE])
    resumed = vm.resume(failed.run_dir, again)
    assert resumed.status == "succeeded"
    assert [p.split("\n")[0] for p in again.prompts()] == ["Two"]


def test_skills_and_permissions_are_recorded(vm: Any) -> None:
    source = """agent secure:
  model: sonnet
  skills: ["web-search"]
  permissions:
    read: ["*.md"]
    bash: deny
session: secure
  prompt: "Go"
"""
    result = vm.run(source, vm.spy())
    agents = vm.events(result, "agents")[0]["agents"]
    assert agents["secure"]["skills"] == ["web-search"]
    assert agents["secure"]["permissions"] == {"read": ["*.md"], "bash": "deny"}


def test_concurrent_sessions_of_one_agent_lose_no_memory_update(vm: Any) -> None:
    def accumulate(request: Any) -> str:
        text = request.last_user_text()
        before = text.split("## Memory so far\n")[1].split("## This session's task")[0].strip()
        task = text.split("## This session's task\n")[1].split("\n")[0]
        return ("" if before == "(empty)" else before + "; ") + task

    # Every answer takes 20 ms, so both sessions end before either memory update does.
    provider = vm.spy([{"match": "^Update your memory", "answer": accumulate}], latency=0.02)
    source = captain("true") + (
        'parallel:\n  session: captain\n    prompt: "Left"\n'
        '  session: captain\n    prompt: "Right"\n'
    )
    result = vm.run(source, provider)
    assert result.status == "succeeded", result.error
    memory = (result.run_dir / "agents" / "captain" / "memory.md").read_text().strip()
    assert sorted(memory.split("; ")) == ["Left", "Right"]

"""MCP tools end to end: real servers written with the SDK's server side — a stdio one the
VM starts inside the sandbox, a streamable HTTP one on loopback — granted by an agent's
`mcp:` permission and called through the tool loop, journal, approvals and output cap."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openprose.parser import parse_text
from openprose.vm.runner import VMConfig, resume_run, run_program
from openprose.vm.runtime import ToolRuntime
from openprose.vm.tools import sandbox_problem
from openprose.vm.tools.mcp_config import McpServer
from tests.support.mcp.http_server import http_mcp_server

SERVER_SCRIPT = Path(__file__).parents[3] / "support" / "mcp" / "notes_server.py"
needs_sandbox = pytest.mark.skipif(
    sandbox_problem() is not None, reason=f"no sandbox here: {sandbox_problem()}"
)


def notes_server(**settings: Any) -> McpServer:
    """The stdio test server, run by this interpreter (its installation mounted read-only)."""
    return McpServer(
        "notes",
        command=sys.executable,
        args=("notes_server.py",),
        readable=tuple({sys.base_prefix, sys.prefix}),
        **settings,
    )


def make_project(tmp_path: Path) -> Path:
    shutil.copy(SERVER_SCRIPT, tmp_path / "notes_server.py")
    (tmp_path / "out").mkdir()
    return tmp_path


def program(grant: str, *, extra: str = "", prompt: str = "Use the tools") -> str:
    return (
        "agent helper:\n"
        '  prompt: "You use tools"\n'
        "  permissions:\n"
        f"    mcp: {grant}\n"
        f"{extra}"
        "\n"
        "session: helper\n"
        f'  prompt: "{prompt}"\n'
    )


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def run(project: Path, source: str, provider: Any, servers: dict[str, McpServer], **kw: Any) -> Any:
    parsed = parse_text(source, str(project / "main.prose"))
    assert parsed.ok, [d.message for d in parsed.diagnostics]
    runtime = kw.pop("tools", None) or ToolRuntime()
    runtime.mcp_servers = servers
    return asyncio.run(
        run_program(
            parsed.program, source, provider=provider, project_dir=project, tools=runtime, **kw
        )
    )


def calls_log(project: Path) -> list[str]:
    log = project / "out" / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


@pytest.fixture
def http_server() -> Iterator[tuple[str, list[str]]]:
    with http_mcp_server(token="t0ken-123") as served:
        yield served


@needs_sandbox
def test_an_agent_calls_a_stdio_and_an_http_server_it_is_granted(
    vm: Any, tmp_path: Path, http_server: tuple[str, list[str]], monkeypatch: Any
) -> None:
    url, defined = http_server
    monkeypatch.setenv("DICT_TOKEN", "t0ken-123")
    project = make_project(tmp_path)
    servers = {
        "notes": notes_server(),
        "dict": McpServer("dict", url=url, headers={"Authorization": "Bearer ${DICT_TOKEN}"}),
    }
    turns = [
        {
            "tool_calls": [
                {"name": "mcp__notes__add", "arguments": {"a": 2, "b": 40}},
                {"name": "mcp__notes__add", "arguments": {"a": 1, "b": 1}},  # beside the first
                {"name": "mcp__dict__define", "arguments": {"word": "prose"}},
            ]
        },
        "42; prose is ordinary language",
    ]
    provider = vm.spy([{"match": "Use the tools", "turns": turns}])
    source = program('["notes.add", "dict"]', extra='    write: ["out/"]\n')
    result = run(project, source, provider, servers)
    assert result.status == "succeeded", result.error
    offered = {spec.name: spec for spec in provider.requests[0].tools}
    # only the granted tools of each server, with the servers' own JSON Schemas
    assert sorted(n for n in offered if n.startswith("mcp__")) == [
        "mcp__dict__define",
        "mcp__notes__add",
    ]
    add = offered["mcp__notes__add"].parameters
    assert add["required"] == ["a", "b"] and add["properties"]["a"]["type"] == "integer"
    results = [r.content for r in provider.requests[1].messages[-1].tool_results]
    assert results == ["42", "2", "written language in its ordinary form"]
    assert sorted(calls_log(project)) == ["add 1 1", "add 2 40"] and defined == ["prose"]
    journal = (result.run_dir / "journal.jsonl").read_text()
    assert "t0ken-123" not in journal  # a secret from the environment is never journaled
    trail = (result.run_dir / "audit.ndjson").read_text()
    assert "mcp__notes__add" in trail and "permission allowed" in trail
    assert "t0ken-123" not in trail
    decisions = vm.events(result, "permission")
    assert {(d["kind"], d["action"], d["decision"]) for d in decisions} == {
        ("mcp", "notes.add", "allowed"),
        ("mcp", "dict.define", "allowed"),
    }


@needs_sandbox
def test_a_stdio_server_writes_only_where_the_agent_may(vm: Any, tmp_path: Path) -> None:
    project = make_project(tmp_path)
    turns = [
        {
            "tool_calls": [
                {"name": "mcp__notes__write_note", "arguments": {"path": "x.md", "text": "no"}},
                {"name": "mcp__notes__write_note", "arguments": {"path": "out/y.md", "text": "ok"}},
            ]
        },
        "done",
    ]
    provider = vm.spy([{"match": "Use", "turns": turns}])
    result = run(project, program('["notes"]', extra='    write: ["out/"]\n'), provider, {
        "notes": notes_server()
    })  # fmt: skip
    assert result.status == "succeeded", result.error
    first, second = provider.requests[1].messages[-1].tool_results
    assert first.is_error and not (project / "x.md").exists()  # the sandbox refused it
    assert not second.is_error and (project / "out" / "y.md").read_text() == "ok"


@needs_sandbox
def test_a_crashing_server_is_a_catchable_session_failure(vm: Any, tmp_path: Path) -> None:
    project = make_project(tmp_path)
    source = (
        program('["notes"]', prompt="Crash it")
        .replace("session: helper\n", "try:\n  session: helper\n")
        .replace('  prompt: "Crash it"\n', '    prompt: "Crash it"\n')
        + 'catch as err:\n  session "Recover from {err.message}"\n'
    )
    provider = vm.spy(
        [{"match": "Crash it", "turns": [call("mcp__notes__crash"), "unreached"]}],
        default="recovered",
    )
    result = run(project, source, provider, {"notes": notes_server()})
    assert result.status == "succeeded", result.error
    told = provider.sent("Recover")[0].last_user_text()
    assert "MCP server 'notes'" in told and "failed during crash" in told
    failed = vm.events(result, "session_failed")
    assert failed and "notes" in failed[0]["error"]


@needs_sandbox
def test_a_server_that_does_not_answer_in_time_fails_the_session(vm: Any, tmp_path: Path) -> None:
    project = make_project(tmp_path)
    provider = vm.spy([{"match": "Use", "turns": [call("mcp__notes__slow", seconds=30), "x"]}])
    result = run(project, program('["notes"]'), provider, {"notes": notes_server(timeout=0.5)})
    assert result.status == "failed"
    assert "failed during slow" in (result.error or "") and "timed out" in (result.error or "")


def test_a_missing_server_program_fails_the_session_with_what_it_said(
    vm: Any, tmp_path: Path
) -> None:
    if sandbox_problem() is not None:  # then the refusal names the sandbox instead
        pytest.skip("no sandbox")
    project = make_project(tmp_path)
    missing = McpServer("notes", command="/nowhere/notes-server")
    result = run(project, program('["notes"]'), vm.spy(default="x"), {"notes": missing})
    assert result.status == "failed"
    assert "'notes'" in (result.error or "") and "/nowhere/notes-server" in (result.error or "")


def test_a_grant_of_an_undeclared_server_fails_before_any_model_call(
    vm: Any, tmp_path: Path
) -> None:
    provider = vm.spy(default="x")
    result = run(make_project(tmp_path), program('["nope"]'), provider, {})
    assert result.status == "failed"
    assert "'nope', a server prose.toml does not declare" in (result.error or "")
    assert provider.requests == []


@needs_sandbox
def test_a_grant_of_a_tool_the_server_lacks_fails_clearly(vm: Any, tmp_path: Path) -> None:
    result = run(
        make_project(tmp_path), program('["notes.erase"]'), vm.spy(default="x"),
        {"notes": notes_server()},
    )  # fmt: skip
    assert result.status == "failed"
    assert "has no tool 'erase'" in (result.error or "") and "add" in (result.error or "")


@needs_sandbox
def test_prompt_waits_for_an_approval_and_resume_calls_once(vm: Any, tmp_path: Path) -> None:
    from openprose.vm.approvals import decide_pending

    project = make_project(tmp_path)
    source = program("prompt", extra='    write: ["out/"]\n')
    turns = [call("mcp__notes__write_note", path="out/a.md", text="hi"), "done"]
    servers = {"notes": notes_server()}
    first = run(project, source, vm.spy([{"match": "Use", "turns": turns}]), servers)
    assert first.status == "waiting"
    pending = vm.events(first, "approval_requested")
    assert pending[0]["kind"] == "mcp" and pending[0]["action"] == "notes.write_note"
    assert calls_log(project) == []  # not called before the answer
    decide_pending(first.run_dir, "once", all_pending=True)
    parsed = parse_text((first.run_dir / "program.prose").read_text(), str(project / "main.prose"))
    second = asyncio.run(
        resume_run(
            first.run_dir, parsed.program, provider=vm.spy([{"match": "Use", "turns": turns}]),
            project_dir=project, tools=ToolRuntime(mcp_servers=servers),
        )
    )  # fmt: skip
    assert second.status == "succeeded", second.error
    assert calls_log(project) == ["write_note out/a.md"]


@needs_sandbox
def test_resume_serves_completed_mcp_calls_from_the_journal(vm: Any, tmp_path: Path) -> None:
    from tests.openprose.vm.test_vm_tools import FailsAt

    project = make_project(tmp_path)
    turns: list[Any] = [call("mcp__notes__add", a=1, b=2), call("mcp__notes__add", a=3, b=4), "ok"]
    servers = {"notes": notes_server()}
    source = program('["notes"]', extra='    write: ["out/"]\n')
    first = run(project, source, FailsAt(3, vm.spy([{"match": "Use", "turns": turns}])), servers)
    assert first.status == "failed" and calls_log(project) == ["add 1 2", "add 3 4"]
    parsed = parse_text((first.run_dir / "program.prose").read_text(), str(project / "main.prose"))
    second = asyncio.run(
        resume_run(
            first.run_dir, parsed.program, provider=vm.spy([{"match": "Use", "turns": turns}]),
            project_dir=project, tools=ToolRuntime(mcp_servers=servers),
        )
    )  # fmt: skip
    assert second.status == "succeeded", second.error
    assert calls_log(project) == ["add 1 2", "add 3 4"]  # neither called again


@needs_sandbox
def test_mcp_results_are_capped_like_built_in_ones(vm: Any, tmp_path: Path) -> None:
    project = make_project(tmp_path)
    (project / "big.txt").write_text("z" * 3000)
    turns = [call("mcp__notes__read_note", path="big.txt"), "done"]
    result = run(
        project, program('["notes.read_note"]'), vm.spy([{"match": "Use", "turns": turns}]),
        {"notes": notes_server()}, config=VMConfig(tool_output_cap=1000),
    )  # fmt: skip
    cut = vm.events(result, "tool_result")[0]
    assert cut["omitted_bytes"] == 2000 and "cut (cap 1000 bytes)" in cut["content"]


@needs_sandbox
def test_a_server_sees_only_its_declared_environment(
    vm: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setenv("PROVIDER_KEY_LIKE", "sk-secret")
    monkeypatch.setenv("NOTES_TOKEN", "abc")
    project = make_project(tmp_path)
    server = notes_server(env={"TOKEN": "${NOTES_TOKEN}"})
    turns = [
        {
            "tool_calls": [
                {"name": "mcp__notes__environment", "arguments": {"name": "TOKEN"}},
                {"name": "mcp__notes__environment", "arguments": {"name": "PROVIDER_KEY_LIKE"}},
            ]
        },
        "done",
    ]
    provider = vm.spy([{"match": "Use", "turns": turns}])
    result = run(project, program('["notes"]'), provider, {"notes": server})
    assert result.status == "succeeded", result.error
    seen = [r.content for r in provider.requests[1].messages[-1].tool_results]
    assert seen == ["abc", "unset"]


def test_an_unset_secret_reference_fails_the_session_by_name(vm: Any, tmp_path: Path) -> None:
    server = McpServer("dict", url="http://127.0.0.1:9/mcp", headers={"X": "${NOT_SET_MCP31}"})
    result = run(make_project(tmp_path), program('["dict"]'), vm.spy(default="x"), {"dict": server})
    assert result.status == "failed"
    assert "headers.X refers to ${NOT_SET_MCP31}, which is not set" in (result.error or "")


def test_the_journal_names_the_mcp_call_as_the_model_made_it(vm: Any, tmp_path: Path) -> None:
    with http_mcp_server() as (url, _):
        turns = [call("mcp__dict__define", word="verse"), "done"]
        result = run(
            make_project(tmp_path), program("allow"), vm.spy([{"match": "Use", "turns": turns}]),
            {"dict": McpServer("dict", url=url)},
        )  # fmt: skip
    assert result.status == "succeeded", result.error
    (made,) = vm.events(result, "tool_call")
    assert made["call"]["name"] == "mcp__dict__define"
    assert json.dumps(made["call"]["arguments"]) == '{"word": "verse"}'
    (answer,) = vm.events(result, "tool_result")
    assert answer["content"] == "metrical writing" and answer["tool"] == "mcp__dict__define"


def test_the_python_api_runs_an_agent_with_an_http_server_from_prose_toml(
    tmp_path: Path,
) -> None:
    import openprose

    with http_mcp_server() as (url, defined):
        (tmp_path / "prose.toml").write_text(f'[mcp.servers.dict]\nurl = "{url}"\n')
        (tmp_path / "main.prose").write_text(
            program('["dict.define"]', prompt="Define prose").replace(
                "session: helper", "output meaning = session: helper"
            )
        )
        turns = [call("mcp__dict__define", word="prose"), {"text": "ordinary language"}]
        rules = {"rules": [{"match": "Define prose", "turns": turns}]}
        (tmp_path / "rules.json").write_text(json.dumps(rules))
        result = openprose.run(
            tmp_path / "main.prose", provider=f"scripted:{tmp_path / 'rules.json'}",
            project_dir=tmp_path,
        )  # fmt: skip
    assert result.status == "succeeded", result.error
    assert result.outputs == {"meaning": "ordinary language"} and defined == ["prose"]


@needs_sandbox
def test_plan_mode_refuses_changing_tools_and_starts_servers_read_only(
    vm: Any, tmp_path: Path
) -> None:
    project = make_project(tmp_path)
    turns = [
        {
            "tool_calls": [
                {"name": "mcp__notes__write_note", "arguments": {"path": "out/a.md", "text": "x"}},
                {"name": "mcp__notes__sneaky_write", "arguments": {"path": "out/b.md"}},
                {"name": "mcp__notes__add", "arguments": {"a": 1, "b": 2}},
            ]
        },
        "planned",
    ]
    provider = vm.spy([{"match": "Use", "turns": turns}])
    source = program('["notes"]', extra='    write: ["out/"]\n')
    result = run(project, source, provider, {"notes": notes_server()}, tools=ToolRuntime(plan=True))
    assert result.status == "succeeded", result.error
    refused, sneaked, added = provider.requests[1].messages[-1].tool_results
    assert refused.is_error and "plan mode" in refused.content
    # a tool that claims to be read-only runs, but its server cannot write anything
    assert sneaked.is_error and not (project / "out" / "b.md").exists()
    assert not added.is_error and added.content == "3"
    assert not (project / "out" / "a.md").exists()

"""Tool turns in the scripted and replay providers."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from openprose.parser import parse_text
from openprose.providers import ProviderError, ReplayProvider, ScriptedProvider
from openprose.providers.base import Message, ModelRequest, ToolCall, ToolResult, ToolSpec
from openprose.providers.replay import read_cassette, write_cassette
from openprose.vm.runner import run_program

READ = ToolSpec("read_file", "Read", {"type": "object"})


def _request(*messages: Message, tools: tuple[ToolSpec, ...] = (READ,)) -> ModelRequest:
    return ModelRequest("m", messages, tools=tools)


async def test_scripted_turns_follow_the_conversation() -> None:
    provider = ScriptedProvider(
        [
            {
                "match": "Review",
                "turns": [
                    {"tool_calls": [{"name": "read_file", "arguments": {"path": "a"}}]},
                    {"text": "done"},
                ],
            }
        ]
    )
    first = await provider.complete(_request(Message("user", "Review")))
    assert first.tool_calls == (ToolCall("call_0_0", "read_file", {"path": "a"}),)
    assert first.finish_reason == "tool_use"
    followed = _request(
        Message("user", "Review"),
        Message("assistant", "", tool_calls=first.tool_calls),
        Message("user", "", tool_results=(ToolResult("call_0_0", "x"),)),
    )
    assert followed.last_user_text() == "Review"  # a results-only turn is skipped
    second = await provider.complete(followed)
    assert second.text == "done" and second.tool_calls == ()
    again = await provider.complete(_request(Message("user", "Review")))  # a new conversation
    assert again.tool_calls == first.tool_calls


async def test_scripted_tool_calls_without_offered_tools_are_an_error() -> None:
    provider = ScriptedProvider(
        [{"match": "", "answer": {"tool_calls": [{"name": "read_file", "arguments": {}}]}}]
    )
    with pytest.raises(ProviderError, match="offers no tools"):
        await provider.complete(_request(Message("user", "x"), tools=()))


def test_scripted_rules_file_checks_reply_mappings(tmp_path: Path) -> None:
    from openprose.providers import ProviderConfigError

    path = tmp_path / "r.yaml"
    path.write_text("rules:\n  - match: x\n    turns:\n      - {txt: oops}\n")
    with pytest.raises(ProviderConfigError, match="holds `text` and `tool_calls`"):
        ScriptedProvider.from_file(path)


PROGRAM = """\
agent reader:
  prompt: "You read"
  permissions:
    read: ["src/"]

session: reader
  prompt: "Review src"
"""


def test_a_tool_run_replays_from_its_own_journal(tmp_path: Path) -> None:
    """Journal → cassette → replay: the same tool turns, answered without the scripted model."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x = 1\n")
    scripted = ScriptedProvider(
        [
            {
                "match": "Review src",
                "turns": [
                    {"tool_calls": [{"name": "read_file", "arguments": {"path": "src/a.py"}}]},
                    {"text": "x is one"},
                ],
            }
        ]
    )
    program = parse_text(PROGRAM, str(tmp_path / "main.prose")).program
    first = asyncio.run(run_program(program, PROGRAM, provider=scripted, project_dir=tmp_path))
    assert first.status == "succeeded" and first.result == "x is one"
    cassette = tmp_path / "c.jsonl"
    assert write_cassette(first.run_dir / "journal.jsonl", cassette) == 2
    records = read_cassette(cassette)
    assert records[0][1].tool_calls[0].name == "read_file"
    assert records[1][0].messages[-1].tool_results[0].content == "x = 1\n"
    replay = ReplayProvider.from_file(cassette)
    second = asyncio.run(run_program(program, PROGRAM, provider=replay, project_dir=tmp_path))
    assert second.status == "succeeded" and second.result == "x is one"


def test_a_cassette_recorded_before_tools_still_replays(tmp_path: Path) -> None:
    """The form of a plain request is what it was: no `tools` key, same replay key."""
    request = {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "system": None,
        "max_tokens": 1024,
        "temperature": None,
    }
    response = {
        "text": "hello",
        "usage": {"input_tokens": 1, "output_tokens": 1},
        "finish_reason": "stop",
        "request_id": None,
        "model": "m",
        "provider": "openai",
    }
    key = ModelRequest.from_dict(request).key()
    cassette = tmp_path / "old.jsonl"
    cassette.write_text(json.dumps({"key": key, "request": request, "response": response}) + "\n")
    replay = ReplayProvider.from_file(cassette)
    answer = asyncio.run(replay.complete(ModelRequest("m", (Message("user", "hi"),))))
    assert answer.text == "hello" and answer.tool_calls == ()

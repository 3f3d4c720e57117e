"""Tool calls over both wire formats: definitions out, calls back, results out again.

Anthropic: `tools` with `input_schema`, `tool_use` blocks, `tool_result` blocks.
OpenAI: `tools` function definitions, `tool_calls` with JSON-string arguments, `role: tool`.
Each for a whole answer and a streamed one (calls assembled from their pieces).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from openprose.providers import (
    Message,
    ModelRequest,
    ModelResponse,
    ProviderError,
    ProviderSettings,
    TransientProviderError,
    open_provider,
    stream_text_to,
)
from openprose.providers.base import ToolCall, ToolResult, ToolSpec
from tests.support.fake_llm_server import FakeAnswer, FakeLLMServer, FakeToolCall

SettingsFor = Callable[..., ProviderSettings]

READ = ToolSpec(
    "read_file",
    "Read a file of the project.",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
LIST = ToolSpec("list_files", "List files matching a glob.", {})
ASKING = ModelRequest(
    model="test-model", messages=(Message("user", "look around"),), tools=(READ, LIST)
)
CALLS = (
    ToolCall("c1", "read_file", {"path": "README.md"}),
    ToolCall("c2", "list_files", {}),
)
CONVERSATION = ModelRequest(
    model="test-model",
    messages=(
        Message("user", "look around"),
        Message("assistant", "Let me look.", tool_calls=CALLS),
        Message(
            "user",
            "",
            tool_results=(
                ToolResult("c1", "# hello"),
                ToolResult("c2", "no such folder", is_error=True),
            ),
        ),
    ),
    tools=(READ, LIST),
)


async def ask(settings: ProviderSettings, request: ModelRequest, mode: str) -> ModelResponse:
    provider = open_provider(settings)
    try:
        if mode == "whole":
            return await provider.complete(request)
        pieces: list[str] = []
        with stream_text_to(pieces.append, on_restart=pieces.clear):
            response = await provider.complete(request)
        assert "".join(pieces) == response.text
        return response
    finally:
        await provider.aclose()


def answering(*calls: FakeToolCall, text: str = "") -> Callable[[str, dict[str, Any]], FakeAnswer]:
    return lambda api, body: FakeAnswer(text, calls)


async def test_tools_are_offered_in_the_api_shape(
    fake_llm_server: FakeLLMServer, settings_for: SettingsFor, api: str, mode: str
) -> None:
    await ask(settings_for(), ASKING, mode)
    tools = fake_llm_server.stats.bodies[0]["tools"]
    if api == "anthropic":
        assert tools[0] == {
            "name": "read_file",
            "description": "Read a file of the project.",
            "input_schema": READ.parameters,
        }
        assert tools[1]["input_schema"] == {"type": "object", "properties": {}}
    else:
        assert tools[0] == {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a file of the project.",
                "parameters": READ.parameters,
            },
        }
        assert tools[1]["function"]["parameters"] == {"type": "object", "properties": {}}


async def test_a_plain_request_offers_no_tools(
    fake_llm_server: FakeLLMServer, settings_for: SettingsFor, mode: str
) -> None:
    await ask(settings_for(), ModelRequest("m", (Message("user", "hi"),)), mode)
    assert "tools" not in fake_llm_server.stats.bodies[0]


async def test_tool_calls_come_back_as_tool_calls(
    fake_llm_server: FakeLLMServer, settings_for: SettingsFor, api: str, mode: str
) -> None:
    fake_llm_server.reply = answering(
        FakeToolCall("read_file", {"path": "src/main.py", "limit": 20}),
        FakeToolCall("list_files", {}),
        text="Reading two things.",
    )
    response = await ask(settings_for(), ASKING, mode)
    assert response.text == "Reading two things."
    assert [(c.name, c.arguments) for c in response.tool_calls] == [
        ("read_file", {"path": "src/main.py", "limit": 20}),
        ("list_files", {}),
    ]
    ids = [c.id for c in response.tool_calls]
    assert len(set(ids)) == 2 and all(ids)  # the provider's ids, echoed by the results
    assert response.finish_reason == ("tool_use" if api == "anthropic" else "tool_calls")


async def test_tool_calls_and_results_go_back_in_the_api_shape(
    fake_llm_server: FakeLLMServer, settings_for: SettingsFor, api: str, mode: str
) -> None:
    await ask(settings_for(), CONVERSATION, mode)
    messages = fake_llm_server.stats.bodies[0]["messages"]
    if api == "anthropic":
        assert messages[1] == {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me look."},
                {
                    "type": "tool_use",
                    "id": "c1",
                    "name": "read_file",
                    "input": {"path": "README.md"},
                },
                {"type": "tool_use", "id": "c2", "name": "list_files", "input": {}},
            ],
        }
        assert messages[2] == {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "# hello"},
                {
                    "type": "tool_result",
                    "tool_use_id": "c2",
                    "content": "no such folder",
                    "is_error": True,
                },
            ],
        }
    else:
        assert messages[1] == {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path":"README.md"}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "list_files", "arguments": "{}"},
                },
            ],
        }
        assert messages[2:] == [
            {"role": "tool", "tool_call_id": "c1", "content": "# hello"},
            {"role": "tool", "tool_call_id": "c2", "content": "error: no such folder"},
        ]


async def test_user_text_beside_tool_results_follows_them(
    fake_llm_server: FakeLLMServer, settings_for: SettingsFor, api: str
) -> None:
    results = Message("user", "and be brief", tool_results=(ToolResult("c1", "ok"),))
    request = ModelRequest("m", (*CONVERSATION.messages[:2], results))
    await ask(settings_for(), request, "whole")
    last = fake_llm_server.stats.bodies[0]["messages"][2:]
    if api == "anthropic":
        assert [b["type"] for b in last[0]["content"]] == ["tool_result", "text"]
    else:
        assert [m["role"] for m in last] == ["tool", "user"]
        assert last[1]["content"] == "and be brief"


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ('{"path": "a.txt"', "are not valid JSON|is not valid JSON|not a JSON object"),
        ("[1, 2]", "not a JSON object"),
    ],
)
async def test_tool_arguments_that_are_not_a_json_object_are_a_clear_error(
    fake_llm_server: FakeLLMServer,
    settings_for: SettingsFor,
    api: str,
    mode: str,
    arguments: str,
    problem: str,
) -> None:
    fake_llm_server.reply = answering(FakeToolCall("read_file", arguments))
    with pytest.raises(ProviderError) as caught:
        await ask(settings_for(), ASKING, mode)
    message = str(caught.value)
    assert not isinstance(caught.value, TransientProviderError)
    assert message.startswith(f"{api} (model test-model): malformed response: ")
    assert "read_file" in message and re.search(problem, message), message
    assert fake_llm_server.stats.attempts == 1

"""The local provider's tool calls without the model: the prompt, the grammar's schema and
the decoding of its reply (the end-to-end run is in test_providers_local.py)."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from openprose.providers.base import Message, ModelRequest, ToolCall, ToolResult, ToolSpec
from openprose.providers.local import chat_messages, decode_tool_reply, tool_reply_schema

READ = ToolSpec(
    "read_file",
    "Read a file",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)


def _tool_request(*messages: Any) -> ModelRequest:
    return ModelRequest(
        "m", tuple(messages) or (Message("user", "Review src"),), system="You review", tools=(READ,)
    )


def test_local_tool_schema_offers_each_tool_with_its_arguments_or_an_answer() -> None:
    schema = tool_reply_schema(_tool_request())
    jsonschema.validate({"tool": "read_file", "arguments": {"path": "a"}}, schema)
    jsonschema.validate({"answer": "done"}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"tool": "write_file", "arguments": {"path": "a"}}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"tool": "read_file", "arguments": {}}, schema)


def test_local_decodes_a_tool_call_or_a_final_answer() -> None:
    text, calls = decode_tool_reply('{"tool": "read_file", "arguments": {"path": "src/a.py"}}', 2)
    assert text == "" and [(c.id, c.name, c.arguments) for c in calls] == [
        ("local_2", "read_file", {"path": "src/a.py"})
    ]
    assert decode_tool_reply('{"answer": "All good"}', 0) == ("All good", ())
    assert decode_tool_reply("plain words", 0) == ("plain words", ())


def test_local_renders_tool_turns_as_chat_text() -> None:
    request = _tool_request(
        Message("user", "Review src"),
        Message("assistant", "", tool_calls=(ToolCall("local_0", "read_file", {"path": "a"}),)),
        Message("user", "", tool_results=(ToolResult("local_0", "x = 1"),)),
    )
    messages = chat_messages(request)
    assert messages[0]["role"] == "system" and "read_file: Read a file" in messages[0]["content"]
    assert messages[2]["content"] == '{"tool": "read_file", "arguments": {"path": "a"}}'
    assert messages[3]["content"] == "Result of tool call local_0:\nx = 1"

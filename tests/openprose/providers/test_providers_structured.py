"""Typed results over real HTTP: a session that `returns:` a shape asks each API in its own
native structured mode (OpenAI `response_format` json_schema, Anthropic a forced call of the
`answer` tool), whole and streamed, and the VM binds the decoded value."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from openprose.parser import parse_text
from openprose.providers import Message, ModelRequest, open_provider
from openprose.providers.streaming import stream_text_to
from openprose.providers.structured import strict_ready
from openprose.vm.runner import run_program
from tests.support.fake_llm_server import FakeAnswer, FakeLLMServer, FakeToolCall

REVIEW = {"title": "Null check", "severity": "high", "files": ["a.py", "b.py"]}


def _native_reply(value: Any) -> Any:
    """A server that answers `value` the way each API's structured mode does, and plain
    text when the request asked for no structure."""

    def reply(api: str, body: dict[str, Any]) -> str | FakeAnswer:
        if api == "openai" and body.get("response_format", {}).get("type") == "json_schema":
            return json.dumps(value)
        choice = body.get("tool_choice") or {}
        if api == "anthropic" and choice.get("name") == "answer":
            schema = body["tools"][0]["input_schema"]
            wrapped = value if isinstance(value, dict) else {"value": value}
            assert set(schema["required"]) <= set(wrapped)
            return FakeAnswer("", (FakeToolCall("answer", wrapped),))
        return "plain text, not JSON"

    return reply


PROGRAM = """\
let review = session "Review the change"
  returns:
    title: string
    severity: "low" | "medium" | "high"
    files: list of string
output summary = session "Fix {review.title} ({review.severity}): {review.files}"
"""


async def test_a_typed_session_uses_the_native_structured_mode(
    tmp_path: Path, fake_llm_server: FakeLLMServer, settings_for: Any, api: str
) -> None:
    fake_llm_server.reply = _native_reply(REVIEW)
    provider = open_provider(settings_for())
    program = parse_text(PROGRAM, str(tmp_path / "main.prose")).program
    result = await run_program(program, PROGRAM, provider=provider, project_dir=tmp_path)
    await provider.aclose()
    assert result.status == "succeeded", result.error
    typed_body, plain_body = fake_llm_server.stats.bodies
    if api == "openai":
        format_ = typed_body["response_format"]
        assert format_["json_schema"]["strict"] is True  # closed, every field required
        assert format_["json_schema"]["schema"]["properties"]["severity"]["enum"] == [
            "low",
            "medium",
            "high",
        ]
        assert "response_format" not in plain_body
    else:
        assert typed_body["tool_choice"] == {"type": "tool", "name": "answer"}
        assert [t["name"] for t in typed_body["tools"]] == ["answer"]
        assert "tools" not in plain_body and "tool_choice" not in plain_body
    assert fake_llm_server.stats.completed == 2  # valid on the first try: no re-ask
    outputs = json.loads((result.run_dir / "outputs.json").read_text())
    assert outputs["summary"] == "plain text, not JSON"
    bindings = (result.run_dir / "bindings" / "review.md").read_text()
    assert "Null check" in bindings


@pytest.mark.parametrize("mode", ["whole", "streamed"])
async def test_a_list_shape_is_wrapped_for_anthropic_and_unwrapped_again(
    fake_llm_server: FakeLLMServer, settings_for: Any, api: str, mode: str
) -> None:
    schema = {"type": "array", "items": {"type": "string"}}
    fake_llm_server.reply = _native_reply(["a", "b"])
    provider = open_provider(settings_for())
    request = ModelRequest(
        "m", (Message("user", "List them"),), response_schema=schema, structured=True
    )
    if mode == "whole":
        response = await provider.complete(request)
    else:
        with stream_text_to(lambda _: None):
            response = await provider.complete(request)
    await provider.aclose()
    assert json.loads(response.text) == ["a", "b"]
    assert response.tool_calls == ()
    body = fake_llm_server.stats.bodies[0]
    if api == "anthropic":
        assert body["tools"][0]["input_schema"]["properties"]["value"] == schema


async def test_an_unstructured_request_with_a_schema_is_asked_in_prose(
    fake_llm_server: FakeLLMServer, settings_for: Any, api: str
) -> None:
    """Judgments carry a schema but not `structured`: their requests stay as they were."""
    provider = open_provider(settings_for())
    request = ModelRequest("m", (Message("user", "x"),), response_schema={"type": "object"})
    await provider.complete(request)
    await provider.aclose()
    body = fake_llm_server.stats.bodies[0]
    assert "response_format" not in body and "tool_choice" not in body


def test_strict_mode_only_for_closed_objects_with_every_field_required() -> None:
    closed = {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "required": ["a"],
        "additionalProperties": False,
    }
    assert strict_ready(closed)
    assert strict_ready({"type": "array", "items": closed})
    assert not strict_ready({**closed, "required": []})  # an optional field
    assert not strict_ready({"type": "object", "properties": {}})  # open
    nested_open = {**closed, "properties": {"a": {"type": "object"}}}
    assert not strict_ready(nested_open)

"""A whole tool loop over real HTTP: the VM's session of an agent with permissions, against
the loopback fake of each API — the model asks to read a file, the VM reads it (permission
checked), sends the result in the API's own shape, and the model's final answer quotes it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from openprose.parser import parse_text
from openprose.providers import open_provider
from openprose.vm.runner import run_program
from tests.support.fake_llm_server import FakeAnswer, FakeLLMServer, FakeToolCall

PROGRAM = """\
agent reader:
  prompt: "You read files"
  permissions:
    read: ["src/"]

session: reader
  prompt: "What does src/a.py set?"
"""


def _tool_result_text(body: dict[str, Any]) -> str | None:
    for message in body.get("messages") or []:
        if message.get("role") == "tool":  # OpenAI
            return str(message.get("content"))
        content = message.get("content")
        if isinstance(content, list):  # Anthropic
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    inner = block.get("content")
                    return inner if isinstance(inner, str) else json.dumps(inner)
    return None


def _reply(api: str, body: dict[str, Any]) -> str | FakeAnswer:
    result = _tool_result_text(body)
    if result is None:
        return FakeAnswer("Let me read it.", (FakeToolCall("read_file", {"path": "src/a.py"}),))
    return f"It says: {result.strip()}"


async def test_tool_loop_over_http(
    tmp_path: Path, fake_llm_server: FakeLLMServer, settings_for: Any, api: str
) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("ANSWER = 42\n")
    fake_llm_server.reply = _reply
    provider = open_provider(settings_for())
    program = parse_text(PROGRAM, str(tmp_path / "main.prose")).program
    result = await run_program(program, PROGRAM, provider=provider, project_dir=tmp_path)
    await provider.aclose()
    assert result.status == "succeeded", result.error
    assert result.result == "It says: ANSWER = 42"
    first = fake_llm_server.stats.bodies[0]
    names = [t.get("name") or t.get("function", {}).get("name") for t in first["tools"]]
    assert names == ["read_file", "list_files", "search_files"]
    assert fake_llm_server.stats.completed == 2

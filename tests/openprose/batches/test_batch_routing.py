"""A batch whose program routes an agent to a second provider (`--model ALIAS=PROVIDER:MODEL`)
opens that provider once for the whole batch, as it does the selected one: one connection
pool and one concurrency limit, not a new client (and connections) per run."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from openprose.batches import run_batch
from openprose.session.options import RunOptions
from tests.support.fake_llm_server import FakeLLMServer

PROGRAM = """input topic: "what"
agent critic:
  model: opus
let draft = session "Draft {topic}"
output verdict = session: critic
  prompt: "Judge {draft}"
"""


def test_a_provider_an_override_routes_to_is_opened_once_per_batch(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "routed.prose").write_text(PROGRAM)
    cases = 6
    (project / "in.jsonl").write_text("".join(f'{{"topic": "t{i}"}}\n' for i in range(cases)))

    async def go() -> tuple[dict, set[tuple[str, int]]]:
        async with FakeLLMServer() as server:
            monkeypatch.setenv("OPENAI_BASE_URL", f"{server.base_url}/v1")
            monkeypatch.setenv("OPENAI_API_KEY", "test")
            monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
            monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
            result = await run_batch(
                project / "routed.prose",
                project / "in.jsonl",
                output=project / "out.jsonl",
                options=RunOptions(provider="openai", models=("opus=anthropic:claude-test",)),
                max_runs=1,  # one run at a time: each provider keeps one connection alive
                project_dir=project,
            )
            assert server.stats.completed == 2 * cases
            return result.to_json(), server.stats.connections

    summary, connections = asyncio.run(go())
    assert summary["status"] == "succeeded" and summary["succeeded"] == cases
    assert set(summary["usage"]["by_model"]) == {"gpt-4.1-mini", "claude-test"}
    rows = [json.loads(line) for line in (project / "out.jsonl").read_text().splitlines()]
    assert all(row["outputs"]["verdict"].startswith("echo: Judge") for row in rows)
    # one kept-alive connection per provider; a provider opened per run would have made a
    # new connection for each of the six runs
    assert len(connections) == 2

"""`prose ui` groups a batch's runs: one entry per batch (progress, failures, tokens, cost,
rows file) and its rows filtered by status."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient, TestServer

from openprose.cli import main
from openprose.ui.server import make_app

TOKEN = "t0ken-for-tests_0123456789"
AUTH = {"X-Prose-Token": TOKEN}
RULES = """default: "ok"
rules:
  - match: "On fail"
    answer: "never"
    failures: [error, error, error, error, error, error]
"""


def test_a_batch_is_one_entry_with_its_counts_and_rows_by_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PROSE_PROVIDER", raising=False)
    (tmp_path / "rules.yaml").write_text(RULES)
    (tmp_path / "p.prose").write_text('input topic: "what"\noutput answer = session "On {topic}"\n')
    (tmp_path / "in.jsonl").write_text(
        '{"topic": "a"}\n{"topic": "fail"}\nnot json\n{"topic": "b"}\n'
    )
    assert main(["batch", "p.prose", "in.jsonl", "--provider", "scripted:rules.yaml"]) == 1
    capsys.readouterr()
    asyncio.run(_look(tmp_path))


async def _get(client: TestClient[Any, Any], path: str) -> Any:
    response = await client.get(path, headers=AUTH)
    return response.status, orjson.loads(await response.read())


async def _look(project: Path) -> None:
    async with TestClient(TestServer(make_app(project, TOKEN))) as client:
        status, batches = await _get(client, "/api/batches")
        assert status == 200 and len(batches) == 1
        batch = batches[0]
        assert batch["state"] == "finished" and batch["cases"] == 4
        assert (batch["done"], batch["succeeded"], batch["failed"], batch["invalid"]) == (
            4,
            2,
            1,
            1,
        )
        assert batch["input_tokens"] > 0 and batch["output_tokens"] > 0
        assert Path(batch["rows_file"]).is_file()
        batch_id = batch["batch_id"]
        _, failed = await _get(client, f"/api/batches/{batch_id}/rows?status=failed")
        assert [r["line"] for r in failed] == [2]
        _, every = await _get(client, f"/api/batches/{batch_id}/rows")
        assert [r["line"] for r in every] == [1, 2, 3, 4]
        status, _ = await _get(client, "/api/batches/..%2F..%2Fetc/rows")
        assert status == 404
        status, _ = await _get(client, "/api/batches/nope/rows")
        assert status == 404
        # without the token, nothing
        assert (await client.get("/api/batches")).status in (401, 403)

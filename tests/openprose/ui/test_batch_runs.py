"""`prose ui` shows a batch's runs like `prose runs` lists them, and opening one makes its
folder from the batch's run log (as `prose show` does)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient, TestServer

from openprose.cli import main
from openprose.ui.server import make_app

TOKEN = "t0ken-for-tests_0123456789"
AUTH = {"X-Prose-Token": TOKEN}


def test_a_batch_run_is_listed_and_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PROSE_PROVIDER", raising=False)
    (tmp_path / "rules.yaml").write_text('default: "ok"\n')
    (tmp_path / "p.prose").write_text('input topic: "what"\noutput answer = session "On {topic}"\n')
    (tmp_path / "in.jsonl").write_text('{"topic": "a"}\n{"topic": "b"}\n')
    assert main(["batch", "p.prose", "in.jsonl", "--provider", "scripted:rules.yaml"]) == 0
    capsys.readouterr()
    assert main(["runs", "--json"]) == 0
    listed_by_cli = json.loads(capsys.readouterr().out)
    assert len(listed_by_cli) == 2
    run_id = listed_by_cli[0]["run_id"]
    assert not (tmp_path / ".prose" / "runs" / run_id).exists()

    asyncio.run(_open_in_the_ui(tmp_path, run_id, listed_by_cli))


async def _open_in_the_ui(project: Path, run_id: str, listed_by_cli: list[Any]) -> None:
    async with TestClient(TestServer(make_app(project, TOKEN))) as client:
        listed: Any = orjson.loads(await (await client.get("/api/runs", headers=AUTH)).read())
        assert listed == listed_by_cli
        response = await client.get(f"/api/runs/{run_id}", headers=AUTH)
        assert response.status == 200
        view = orjson.loads(await response.read())
        assert view["run"]["status"] == "succeeded"
        assert (project / ".prose" / "runs" / run_id / "journal.jsonl").is_file()
        # listed once, now as a folder
        listed = orjson.loads(await (await client.get("/api/runs", headers=AUTH)).read())
        assert [r["run_id"] for r in listed] == [r["run_id"] for r in listed_by_cli]

"""`prose ui` groups a batch's runs: one entry per batch (progress, failures, tokens, cost,
rows file) and its rows filtered by status."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient, TestServer

import openprose
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


def test_the_page_lists_a_batch_once_and_filters_its_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    chromium = shutil.which(os.environ.get("PROSE_TEST_CHROMIUM") or "chromium")
    if chromium is None:
        pytest.skip("no Chromium on this machine: apt-get install chromium (.ci/run installs it)")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PROSE_PROVIDER", raising=False)
    (tmp_path / "rules.yaml").write_text(RULES)
    (tmp_path / "p.prose").write_text('input topic: "what"\noutput answer = session "On {topic}"\n')
    (tmp_path / "in.jsonl").write_text("".join(f'{{"topic": "t{i}"}}\n' for i in range(30)))
    with (tmp_path / "in.jsonl").open("a") as cases:
        cases.write('{"topic": "fail"}\n')
    assert main(["batch", "p.prose", "in.jsonl", "--provider", "scripted:rules.yaml"]) == 1
    capsys.readouterr()
    with openprose.serve_ui(tmp_path) as server, sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium)
        page = browser.new_page()
        problems: list[str] = []
        page.on("pageerror", lambda error: problems.append(str(error)))
        page.goto(server.url)
        page.wait_for_selector("#batch-list li a")
        # one entry for the batch, none of its 31 runs in the flat list
        assert page.locator("#batch-list li").count() == 1
        assert page.locator("#run-list li[data-run]").count() == 0
        assert "31/31 · 1 failed" in page.text_content("#batch-list")
        page.click("#batch-list li a")
        page.wait_for_function("() => document.querySelectorAll('#batch-rows tbody tr').length")
        assert page.locator("#batch-rows tbody tr").count() == 31
        totals = page.inner_text("#batch-totals")
        assert "31/31" in totals and "outputs.jsonl" in totals and "tokens" in totals
        page.select_option("#batch-status", "failed")
        page.wait_for_function(
            "() => document.querySelectorAll('#batch-rows tbody tr').length === 1"
        )
        assert page.text_content("#batch-rows tbody tr td") == "31"
        page.click("#batch-rows tbody tr a")  # the row's run opens as any run
        page.wait_for_function(
            "() => document.getElementById('run-id').textContent.endsWith('-31')"
        )
        assert page.locator("#batch-view").is_hidden()
        browser.close()
    assert problems == []

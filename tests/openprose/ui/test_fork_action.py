"""The web view's "fork from here": the HTTP action (`POST /api/runs/{run}/fork`) and the
page's form driven in Chromium, each starting a fork as `prose fork` does."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient, TestServer

import openprose
from openprose.ui import UIServer
from openprose.ui.server import make_app
from tests.openprose.ui.runs import Project, make_project

TOKEN = "t0ken-for-tests_0123456789"
AUTH = {"X-Prose-Token": TOKEN}
LAST = "6/c1.1"  # the program's last session (`Summarise`, after the decision)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    made = make_project(tmp_path / "project")
    monkeypatch.chdir(made.root)
    return made


@pytest.fixture
async def client(project: Project) -> AsyncIterator[TestClient[Any, Any]]:
    async with TestClient(TestServer(make_app(project.root, TOKEN))) as client:
        yield client


def origins(run_dir: Path) -> dict[str, Any]:
    events = [json.loads(x) for x in (run_dir / "journal.jsonl").read_text().splitlines()]
    return {e["step"]: e.get("inherited") for e in events if e["ev"] == "session_finished"}


async def finished_run(client: TestClient[Any, Any], run_id: str) -> dict[str, Any]:
    for _ in range(200):
        response = await client.get(f"/api/runs/{run_id}", headers=AUTH)
        if response.status == 200:
            view = orjson.loads(await response.read())
            if view["run"]["status"] not in ("running", "unknown"):
                return dict(view)
        await asyncio.sleep(0.05)
    raise AssertionError(f"run {run_id} did not finish")


async def test_the_fork_action_starts_a_fork_the_page_can_watch(
    client: TestClient[Any, Any], project: Project
) -> None:
    response = await client.post(
        f"/api/runs/{project.finished}/fork", headers=AUTH, json={"step": LAST}
    )
    assert response.status == 202
    started = orjson.loads(await response.read())
    assert started["parent"] == project.finished and started["step"] == LAST
    view = await finished_run(client, started["run_id"])
    assert view["run"]["status"] == "succeeded"
    assert view["run"]["forked_from"] == {"run": project.finished, "step": LAST}
    where = origins(project.runs / started["run_id"])
    assert where.pop(LAST) is None  # asked again; everything before it taken
    assert {origin["run"] for origin in where.values()} == {project.finished}
    listed = orjson.loads(await (await client.get("/api/runs", headers=AUTH)).read())
    row = next(r for r in listed if r["run_id"] == started["run_id"])
    assert row["parent"] == project.finished and row["parent_step"] == LAST


async def test_the_fork_is_watchable_as_soon_as_the_action_answers(
    client: TestClient[Any, Any], project: Project
) -> None:
    """The page opens the fork's event stream the moment the POST answers: a run not yet
    open would be a 404 there, and a browser's EventSource never retries a 404."""
    response = await client.post(
        f"/api/runs/{project.finished}/fork", headers=AUTH, json={"step": LAST}
    )
    assert response.status == 202
    fork = orjson.loads(await response.read())["run_id"]
    assert (project.runs / fork / "run.json").is_file()
    watched = await client.get(f"/api/runs/{fork}", headers=AUTH)  # no wait in between
    assert watched.status == 200, await watched.text()
    assert (await finished_run(client, fork))["run"]["status"] == "succeeded"


async def test_inputs_keep_their_json_types(client: TestClient[Any, Any], project: Project) -> None:
    (project.root / "each.prose").write_text(
        'input items: "things"\nlet notes = items | pmap:\n  session "Note on {item}"\n'
        "output all_notes = notes\n"
    )
    run = await openprose.arun(
        project.root / "each.prose",
        inputs={"items": ["x"]},
        provider=f"scripted:{project.root / 'rules.json'}",
        project_dir=project.root,
    )
    response = await client.post(
        f"/api/runs/{run.run_id}/fork",
        headers=AUTH,
        json={"step": "2:1[0].1", "inputs": {"items": ["y", "z"]}},
    )
    assert response.status == 202
    fork = orjson.loads(await response.read())["run_id"]
    view = await finished_run(client, fork)
    assert view["run"]["status"] == "succeeded"
    assert view["run"]["inputs"] == {"items": ["y", "z"]}
    assert len(json.loads((project.runs / fork / "outputs.json").read_text())["all_notes"]) == 2


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        ({"step": "99"}, 400, "no step '99' in run {run}; its steps: 2, 3|1, 3|2"),
        ({"step": LAST, "set": {"nothing": "x"}}, 400, "--set nothing: no session bound"),
        ({"step": LAST, "inputs": {"mood": "x"}}, 400, "--input mood: the program declares no"),
        ({"step": LAST, "inputs": {"mood": 1}}, 400, "--input mood: the program declares no"),
        ({"step": LAST, "set": {"topic": 1}}, 400, 'send a JSON object: {"step"'),
        ({"step": LAST, "inputs": []}, 400, 'send a JSON object: {"step"'),
        ({"inputs": {}}, 400, 'send a JSON object: {"step"'),
        ([LAST], 400, 'send a JSON object: {"step"'),
    ],
)
async def test_a_bad_fork_is_refused_with_one_line(
    client: TestClient[Any, Any], project: Project, body: Any, status: int, error: str
) -> None:
    response = await client.post(f"/api/runs/{project.finished}/fork", headers=AUTH, json=body)
    assert response.status == status
    message = orjson.loads(await response.read())["error"]
    assert message.startswith(error.replace("{run}", project.finished)) and "\n" not in message
    assert len(list(project.runs.iterdir())) == 2  # nothing started


async def test_the_fork_action_wants_the_token_and_a_run(
    client: TestClient[Any, Any], project: Project
) -> None:
    url = f"/api/runs/{project.finished}/fork"
    assert (await client.post(url, json={"step": LAST})).status == 401
    assert (await client.post(url + f"?token={TOKEN}", json={"step": LAST})).status == 401
    missing = await client.post("/api/runs/nope/fork", headers=AUTH, json={"step": LAST})
    assert missing.status == 404
    assert len(list(project.runs.iterdir())) == 2


# --- the page's form in Chromium ------------------------------------------------------------

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')"
)
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture
def page(project: Project) -> Iterator[tuple[Any, UIServer]]:
    if CHROMIUM is None:
        pytest.skip("no Chromium on this machine: apt-get install chromium")
    with openprose.serve_ui(project.root) as server, sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        page = browser.new_page(viewport={"width": 1500, "height": 1000})
        # The fork runs live behind the page: on a loaded shared machine it can take longer
        # than Playwright's 30 s default for one wait.
        page.set_default_timeout(90_000)
        page.problems = []
        page.on("pageerror", lambda error: page.problems.append(str(error)))
        yield page, server
        browser.close()


def test_fork_from_here_in_the_page(page: tuple[Any, UIServer], project: Project) -> None:
    browser_page, server = page
    browser_page.goto(f"{server.url}#run={project.finished}")
    browser_page.wait_for_function(
        "id => document.getElementById('run-id').textContent === id", arg=project.finished
    )
    assert browser_page.is_hidden("#run-parent")
    browser_page.click('#sessions tr[data-step="3|1"]')
    browser_page.wait_for_selector("#fork-form:not([hidden])")
    # a malformed line is refused in the page, nothing sent
    browser_page.fill("#fork-set", "no equals sign")
    browser_page.click("#fork-start")
    browser_page.wait_for_selector("#fork-message:not([hidden])")
    assert "write NAME=VALUE" in browser_page.text_content("#fork-message")
    # the topic (bound at step 2, before 3|1) set; the fork is opened once it starts
    browser_page.fill("#fork-set", "topic=Cats <b>bold</b>")
    browser_page.click("#fork-start")
    browser_page.wait_for_function(
        "id => document.getElementById('run-id').textContent !== id", arg=project.finished
    )
    fork = browser_page.text_content("#run-id")
    browser_page.wait_for_function(
        "() => document.getElementById('run-status').textContent === 'succeeded'"
    )
    assert browser_page.text_content("#parent-link") == project.finished
    assert browser_page.text_content("#parent-step") == "3|1"
    where = origins(project.runs / fork)
    assert where["2"] == {"set": "topic"}
    assert where["3|1"] is None and where["3|2"] is None  # the step; a prompt with the topic
    browser_page.click('#sessions tr[data-step="2"]')
    browser_page.wait_for_function(
        "() => document.getElementById('detail-facts').textContent.includes('answer from')"
    )
    assert "set by the fork (topic)" in browser_page.inner_text("#detail-facts")
    browser_page.click("#parent-link")  # back to the parent
    browser_page.wait_for_function(
        "id => document.getElementById('run-id').textContent === id", arg=project.finished
    )
    assert browser_page.problems == []

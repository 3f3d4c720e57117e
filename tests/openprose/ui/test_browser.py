"""`prose ui` in a real browser: Playwright driving the system's Chromium (never a browser
Playwright downloads). A finished run, a live one, an approval clicked, a 10,000-session run.
Screenshots land in pytest's tmp dir."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

import openprose
from openprose.cli import main
from openprose.ui import UIServer
from tests.openprose.ui.runs import (
    Project,
    journal_lines,
    make_project,
    same_but_who,
    start_prose,
)

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')"
)


def _chromium() -> str | None:
    for name in (os.environ.get("PROSE_TEST_CHROMIUM"), "chromium", "chromium-browser"):
        if name and (found := shutil.which(name)):
            return found
    return None


CHROMIUM = _chromium()
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no Chromium on this machine: apt-get install chromium (.ci/run installs it)",
)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    return make_project(tmp_path_factory.mktemp("browser") / "project")


@pytest.fixture(scope="module")
def server(project: Project) -> Iterator[UIServer]:
    with openprose.serve_ui(project.root) as running:
        yield running


@pytest.fixture(scope="module")
def browser(server: UIServer) -> Iterator[Any]:
    # after the runs are made: Playwright's sync API keeps an event loop running, in which
    # the blocking `openprose.run` refuses to run
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    page = browser.new_page(viewport={"width": 1500, "height": 1000})
    page.dialogs = []  # an alert() from run data would land here
    page.on("dialog", lambda dialog: (page.dialogs.append(dialog.message), dialog.dismiss()))
    page.problems = []
    page.on("pageerror", lambda error: page.problems.append(str(error)))
    yield page
    page.close()


def _open(page: Any, server: UIServer, run_id: str) -> None:
    page.goto(f"{server.url}#run={run_id}")
    page.wait_for_function("id => document.getElementById('run-id').textContent === id", arg=run_id)


def test_a_finished_run(page: Any, server: UIServer, project: Project, tmp_path: Path) -> None:
    _open(page, server, project.finished)
    assert page.text_content("#run-status") == "succeeded"
    assert page.locator("#run-list li").count() == 2
    steps = page.locator("#sessions tbody tr").evaluate_all("rows => rows.map(r => r.dataset.step)")
    assert steps == ["2", "3|1", "3|2", "5:1[0].1", "5:1[1].1", "5:1[2].1", "6?c1~1", "6/c1.1"]
    # the program, each statement with its status
    badges = page.locator("#program li[data-statement] .badge").all_text_contents()
    assert badges == ["done"] * 5  # the agent definition has none
    # parallel branches and pmap items side by side: overlapping in time, lanes of their own
    # (not "the same start": on a loaded machine one branch may start a few ms later)
    bars = {
        b["step"]: b
        for b in page.locator("#timeline .bar").evaluate_all(
            "bars => bars.map(b => ({step: b.dataset.step, top: b.offsetTop,"
            " left: b.offsetLeft, right: b.offsetLeft + b.offsetWidth}))"
        )
    }
    first, second = bars["3|1"], bars["3|2"]
    assert first["top"] != second["top"]
    assert first["left"] < second["right"] and second["left"] < first["right"]
    assert len({bars[f"5:1[{i}].1"]["top"] for i in range(3)}) == 3
    assert page.text_content("#decisions tbody") == "6?c1conditionthe drafts look goodtruethey do"
    # a session in full; what the run holds shows as text, never as HTML
    page.click('#sessions tr[data-step="2"]')
    page.wait_for_selector("#detail:not([hidden]) pre.answer")
    prompt = page.locator("#detail-body pre.m-user").text_content()
    assert prompt == "Pick a topic <script>alert('x')</script>"
    answer = page.locator("#detail-body pre.answer").text_content()
    assert answer.startswith("Answer <img src=x onerror=")
    facts = page.locator("#detail-facts").inner_text()
    assert "writer" in facts and "sonnet" in facts and " in + " in facts
    assert page.locator("#run-view img, #run-view script").count() == 0
    page.focus('#sessions tr[data-step="3|1"]')  # the keyboard opens a session too
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.getElementById('detail-step').textContent === '3|1'")
    assert page.title() == "prose ui" and page.dialogs == [] and page.problems == []
    page.screenshot(path=str(tmp_path / "finished-run.png"), full_page=True)


def test_a_live_run_updates_without_reload(
    page: Any, server: UIServer, project: Project, tmp_path: Path
) -> None:
    rules = {**json.loads((project.root / "rules.json").read_text()), "latency_ms": 700}
    (project.root / "slow-rules.json").write_text(json.dumps(rules))
    process = start_prose(
        project.root, "run", "main.prose", "--provider", "scripted:slow-rules.json"
    )
    try:
        assert process.stderr is not None
        started = process.stderr.readline()  # "prose: run ID started (folder)"
        run_id = started.split()[2]
        page.goto(server.url)
        page.wait_for_selector(f'#run-list li[data-run="{run_id}"]')  # the list is live too
        page.click(f'#run-list li[data-run="{run_id}"] a')
        page.wait_for_function("() => document.body.dataset.runStatus === 'running'")
        page.evaluate("() => { window.loadedOnce = true }")
        page.wait_for_selector("#timeline .bar.s-running")
        page.screenshot(path=str(tmp_path / "live-run.png"), full_page=True)
        page.wait_for_function(
            "() => document.body.dataset.runStatus === 'succeeded'", timeout=30_000
        )
        assert process.wait(timeout=30) == 0
    finally:
        process.kill()
        process.communicate()
    assert page.evaluate("() => window.loadedOnce") is True  # updated in place, never reloaded
    assert page.locator("#sessions tbody tr").count() == 8
    assert page.locator("#timeline .bar.s-running").count() == 0
    assert page.locator("#program li[data-statement] .badge").all_text_contents() == ["done"] * 5


def test_approve_in_the_browser_is_prose_approve(
    page: Any,
    server: UIServer,
    project: Project,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    by_ui = project.copy_run(project.waiting, "20261231-000000-d00001")
    by_cli = project.copy_run(project.waiting, "20261231-000000-d00002")
    _open(page, server, by_ui.name)
    assert page.text_content("#run-status") == "waiting"
    request = page.locator("#pending-list li.pending")
    assert request.count() == 1 and "write_file wants to write a.md" in request.inner_text()
    page.screenshot(path=str(tmp_path / "waiting-run.png"), full_page=True)
    page.click("#pending-list button.approve")
    page.wait_for_function(
        "() => document.getElementById('approval-message').textContent.startsWith('approved')"
    )
    message = page.text_content("#approval-message")
    assert message == (
        f"approved: write_file write a.md. Continue the run with: prose resume {by_ui.name}"
    )
    # the journal grew: the stream takes the request off the page and lists the answer
    page.wait_for_function("() => document.querySelectorAll('#pending-list li').length === 0")
    done = page.text_content("#approvals-done tbody") or ""
    assert "once" in done and "ui" in done  # answered in the browser, and said so
    monkeypatch.chdir(project.root)
    request_id = journal_lines(by_ui)[-1]["id"]
    assert journal_lines(by_ui)[-1]["by"] == "ui"
    assert main(["approve", by_cli.name, str(request_id)]) == 0
    capsys.readouterr()
    assert same_but_who(journal_lines(by_ui), journal_lines(by_cli))
    assert (by_ui / "state.md").read_text() == (by_cli / "state.md").read_text()


def test_a_run_of_ten_thousand_sessions_loads(
    page: Any, server: UIServer, project: Project, tmp_path: Path
) -> None:
    run_dir = _big_run(project, 10_000)
    page.goto(server.url)
    page.wait_for_selector("#run-list li")
    started = time.perf_counter()
    page.evaluate("id => { location.hash = 'run=' + id }", run_dir.name)
    page.wait_for_function(
        "() => document.body.dataset.sessions === '10000' && "
        "document.querySelectorAll('#timeline .bar').length === 10000",
        timeout=60_000,
    )
    seconds = time.perf_counter() - started
    render = page.evaluate(
        "() => performance.getEntriesByName('run-rendered').at(-1).startTime"
        " - performance.getEntriesByName('run-received').at(-1).startTime"
    )
    rows = page.locator("#sessions tbody tr").count()
    page.screenshot(path=str(tmp_path / "big-run.png"))
    load = os.getloadavg()[0]
    print(
        f"\nprose ui: 10,000-session run shown in {seconds:.2f} s, of which drawing "
        f"{render / 1000:.2f} s (target 2 s; load {load:.2f})"
    )
    assert rows == 500 and page.is_visible("#show-all-sessions")
    assert page.text_content("#session-count") == "(10000)"


def _big_run(project: Project, count: int) -> Path:
    """The finished run with its pmap grown to make `count` sessions in all, 16 at a time, in
    the events the VM writes (the finished run's own events as the pattern)."""
    run_dir = project.copy_run(project.finished, "20261231-000000-e00001")
    events = [orjson.loads(line) for line in (run_dir / "journal.jsonl").read_bytes().splitlines()]
    start = next(e for e in events if e["ev"] == "session_started" and e["step"] == "5:1[0].1")
    finish = next(e for e in events if e["ev"] == "session_finished" and e["step"] == "5:1[0].1")
    head = [e for e in events if not str(e.get("step", "")).startswith(("5", "6"))]
    head = [e for e in head if e["ev"] != "run_finished"]
    t0 = finish["t"]
    lines = [orjson.dumps(e) for e in head]
    before = sum(1 for e in head if e["ev"] == "session_started")
    for i in range(count - before):
        step = f"5:1[{i}].1"
        began = t0 + (i // 16) * 0.02
        lines.append(orjson.dumps({**start, "step": step, "t": began}))
        lines.append(orjson.dumps({**finish, "step": step, "t": began + 0.02}))
    lines.append(orjson.dumps(next(e for e in events if e["ev"] == "run_finished")))
    (run_dir / "journal.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    return run_dir

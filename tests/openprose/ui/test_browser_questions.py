"""`prose ui` in a real browser (Playwright on the system's Chromium): a run waiting for an
`ask` shows the question with its options as a form; choosing one and pressing Answer records
the answer as `prose answer` would, and the question leaves the page."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import openprose
from openprose.record.runstore import RUNS_DIR
from openprose.ui import UIServer
from tests.openprose.ui.runs import journal_lines

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

PROGRAMS = {
    "choose.prose": 'let plan = ask "Which plan? <img src=x>"\n'
    '  options: ["fast", "safe <b>"]\n'
    '  default: "fast"\n'
    'output report = session "Write the {plan} plan"\n',
    "free.prose": 'let name = ask "Name the release"\noutput note = session "Announce {name}"\n',
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("browser-ask")
    (root / "rules.json").write_text(json.dumps({"rules": [], "default": "done"}))
    made = {}
    for name, source in PROGRAMS.items():
        (root / name).write_text(source)
        result = openprose.run(
            root / name, provider=f"scripted:{root / 'rules.json'}", project_dir=root
        )
        assert result.status == "waiting", result.error
        made[name] = result.run_id
    return root, made


@pytest.fixture(scope="module")
def server(runs: tuple[Path, dict[str, str]]) -> Iterator[UIServer]:
    with openprose.serve_ui(runs[0]) as running:
        yield running


@pytest.fixture(scope="module")
def browser(server: UIServer) -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.problems = []
    page.on("pageerror", lambda error: page.problems.append(str(error)))
    yield page
    page.close()


def _open(page: Any, server: UIServer, run_id: str) -> None:
    page.goto(f"{server.url}#run={run_id}")
    page.wait_for_function("id => document.getElementById('run-id').textContent === id", arg=run_id)


def test_choosing_an_option_answers_the_question(
    page: Any, server: UIServer, runs: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    root, made = runs
    run_id = made["choose.prose"]
    _open(page, server, run_id)
    assert page.text_content("#run-status") == "waiting"
    question = page.locator("#question-list li.pending")
    assert question.count() == 1
    assert "Which plan? <img src=x>" in question.inner_text()  # text, never HTML
    assert page.locator("#run-view img").count() == 0
    labels = page.locator("#question-list label.option").all_text_contents()
    assert [label.strip() for label in labels] == ["fast", "safe <b>"]
    assert page.is_checked("#question-list input[value='1']")  # the default, chosen already
    page.screenshot(path=str(tmp_path / "question.png"), full_page=True)
    page.check("#question-list input[value='2']")
    page.click("#question-list button.answer")
    page.wait_for_function(
        "() => document.getElementById('question-message').textContent.startsWith('answered')"
    )
    assert page.text_content("#question-message") == (
        f"answered q1: safe <b>. Continue the run with: prose resume {run_id}"
    )
    page.wait_for_function("() => document.querySelectorAll('#question-list li').length === 0")
    last = journal_lines(root / RUNS_DIR / run_id)[-1]
    assert (last["ev"], last["answer"], last["by"]) == ("question_answered", "safe <b>", "ui")
    assert page.problems == []


def test_a_free_text_question_takes_what_is_typed(
    page: Any, server: UIServer, runs: tuple[Path, dict[str, str]]
) -> None:
    root, made = runs
    run_id = made["free.prose"]
    _open(page, server, run_id)
    page.fill("#question-list input.answer-text", "Aurora")
    page.press("#question-list input.answer-text", "Enter")
    page.wait_for_function(
        "() => document.getElementById('question-message').textContent.startsWith('answered')"
    )
    last = journal_lines(root / RUNS_DIR / run_id)[-1]
    assert (last["answer"], last["by"]) == ("Aurora", "ui")
    assert page.problems == []

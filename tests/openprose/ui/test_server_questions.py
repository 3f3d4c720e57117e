"""`prose ui` and the Python API answer an `ask` with exactly the effect of `prose answer`: the
waiting run's view carries its questions, the form's POST records the answer sealed `by` the
ui, `openprose.answer` `by` the api, and the run resumes with it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient, TestServer

import openprose
from openprose.cli import main
from openprose.record.runstore import RUNS_DIR
from openprose.ui.server import make_app
from tests.openprose.ui.runs import journal_lines

TOKEN = "t0ken-for-tests_0123456789"
AUTH = {"X-Prose-Token": TOKEN}

ASKING = """\
let plan = ask "Which plan, <b>really</b>?"
  options: ["fast", "safe"]
output report = session "Write the {plan} plan"
"""
FREE = 'let name = ask "Name the release"\noutput note = session "Announce {name}"\n'


def _same_but_who(ui: list[dict[str, Any]], cli: list[dict[str, Any]]) -> bool:
    """Two journals equal but for who answered and when (`by`, `answered`, the seal)."""

    def anyone(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in e.items() if k not in ("by", "seal", "answered")} for e in events]

    return anyone(ui) == anyone(cli)


def _program(root: Path, source: str) -> dict[str, Any]:
    (root / "ask.prose").write_text(source)
    (root / "rules.json").write_text(json.dumps({"rules": [], "default": "done"}))
    return {"provider": f"scripted:{root / 'rules.json'}", "project_dir": root}


def _waiting_run(root: Path, source: str) -> str:
    result = openprose.run(root / "ask.prose", **_program(root, source))
    assert result.status == "waiting", result.error
    return result.run_id


async def _awaiting_run(root: Path, source: str) -> str:
    result = await openprose.arun(root / "ask.prose", **_program(root, source))
    assert result.status == "waiting", result.error
    return result.run_id


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # where `prose answer` looks for runs
    return tmp_path


@pytest.fixture
async def client(root: Path) -> AsyncIterator[TestClient[Any, Any]]:
    async with TestClient(TestServer(make_app(root, TOKEN))) as client:
        yield client


async def test_the_form_answers_exactly_as_prose_answer(
    client: TestClient[Any, Any], root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    by_ui = await _awaiting_run(root, ASKING)
    by_cli = await _awaiting_run(root, ASKING)
    view = orjson.loads(await (await client.get(f"/api/runs/{by_ui}", headers=AUTH)).read())
    (question,) = view["questions"]
    assert (question["id"], question["options"], question["answer"]) == (
        "q1",
        ["fast", "safe"],
        None,
    )
    assert question["question"] == "Which plan, <b>really</b>?"  # data, shown as text
    assert view["statements"][0]["status"] == "waiting"

    response = await client.post(
        f"/api/runs/{by_ui}/answers", headers=AUTH, json={"id": "q1", "text": "2"}
    )
    assert response.status == 200
    body = orjson.loads(await response.read())
    assert (body["answered"]["answer"], body["answered"]["by"]) == ("safe", "ui")
    assert body["next"] == f"prose resume {by_ui}"
    assert main(["answer", by_cli, "q1", "2"]) == 0
    capsys.readouterr()
    runs = root / RUNS_DIR
    ui_lines, cli_lines = journal_lines(runs / by_ui), journal_lines(runs / by_cli)
    assert (ui_lines[-1]["by"], cli_lines[-1]["by"]) == ("ui", "cli")
    assert _same_but_who(ui_lines[-1:], cli_lines[-1:])  # the answer, sealed for each run
    assert len(str(ui_lines[-1]["seal"])) == len(str(cli_lines[-1]["seal"])) == 64

    view = orjson.loads(await (await client.get(f"/api/runs/{by_ui}", headers=AUTH)).read())
    assert view["questions"][0]["answer"] == "safe"
    resumed = await openprose.aresume(by_ui, project_dir=root)
    assert resumed.status == "succeeded", resumed.error
    assert resumed.outputs == {"report": "done"}

    again = await client.post(f"/api/runs/{by_ui}/answers", headers=AUTH, json={"text": "fast"})
    assert again.status == 409
    assert "no question waiting" in orjson.loads(await again.read())["error"]


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b"not json", 400),
        (b"[]", 400),
        (b'{"text": 2}', 400),
        (b'{"text": "fast", "id": 1}', 400),
        (b'{"text": "slow"}', 409),  # not one of the options
        (b'{"text": "fast", "id": "q7"}', 409),
    ],
)
async def test_a_malformed_answer_is_refused_and_nothing_written(
    client: TestClient[Any, Any], root: Path, body: bytes, status: int
) -> None:
    run_id = await _awaiting_run(root, ASKING)
    journal = root / RUNS_DIR / run_id / "journal.jsonl"
    before = journal.read_bytes()
    response = await client.post(
        f"/api/runs/{run_id}/answers",
        headers={**AUTH, "Content-Type": "application/json"},
        data=body,
    )
    assert response.status == status
    assert journal.read_bytes() == before


async def test_the_answer_route_wants_the_token(client: TestClient[Any, Any], root: Path) -> None:
    run_id = await _awaiting_run(root, ASKING)
    response = await client.post(f"/api/runs/{run_id}/answers", json={"text": "fast"})
    assert response.status == 401


def test_openprose_answer_then_resume(root: Path) -> None:
    run_id = _waiting_run(root, FREE)
    with pytest.raises(openprose.RunError, match="no question q2 is waiting"):
        openprose.answer(run_id, "Aurora", "q2")
    answered = openprose.answer(run_id, "Aurora", project_dir=root)
    assert (answered["id"], answered["answer"], answered["by"]) == ("q1", "Aurora", "api")
    assert answered["user"] == journal_lines(root / RUNS_DIR / run_id)[-1]["user"]
    result = openprose.resume(run_id, project_dir=root)
    assert result.status == "succeeded", result.error
    with pytest.raises(openprose.RunError, match="no question waiting"):
        openprose.answer(run_id, "again", project_dir=root)

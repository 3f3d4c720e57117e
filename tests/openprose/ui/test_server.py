"""`prose ui`'s server at the HTTP level: the token, the routes, the JSON and SSE payloads,
and approvals with exactly the effect of `prose approve` / `prose deny`."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient, TestServer

import openprose
from openprose.cli import main
from openprose.record.runstore import process_started
from openprose.ui.server import SECURITY_HEADERS, make_app
from tests.openprose.ui.runs import (
    Project,
    journal_lines,
    make_project,
    same_but_who,
    start_prose,
)

TOKEN = "t0ken-for-tests_0123456789"
AUTH = {"X-Prose-Token": TOKEN}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    return make_project(tmp_path_factory.mktemp("ui") / "project")


@pytest.fixture(autouse=True)
def in_project(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project.root)  # where `prose approve` / `prose runs` look for runs


@pytest.fixture
async def client(project: Project) -> AsyncIterator[TestClient[Any, Any]]:
    async with TestClient(TestServer(make_app(project.root, TOKEN))) as client:
        yield client


async def _json(response: ClientResponse) -> Any:
    return orjson.loads(await response.read())


# --- the token and the guard --------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["/", "/static/app.js", "/static/style.css", "/api/runs", "/api/events"],
)
async def test_every_route_wants_the_token(client: TestClient[Any, Any], path: str) -> None:
    assert (await client.get(path)).status == 401
    assert (await client.get(path, params={"token": TOKEN[:-1] + "x"})).status == 401
    assert (await client.get(path, params={"token": ""})).status == 401
    if path != "/api/events":  # a stream stays open; its acceptance is tested below
        ok = await client.get(path, params={"token": TOKEN})
        assert ok.status == 200
        assert ok.headers["Content-Security-Policy"] == SECURITY_HEADERS["Content-Security-Policy"]
        assert ok.headers["Referrer-Policy"] == "no-referrer"


async def test_run_routes_want_the_token_too(
    client: TestClient[Any, Any], project: Project
) -> None:
    base = f"/api/runs/{project.finished}"
    for path in (base, f"{base}/session?step=2"):
        assert (await client.get(path)).status == 401
        assert (await client.get(path, headers=AUTH)).status == 200
    post = await client.post(
        f"/api/runs/{project.waiting}/approvals",
        params={"token": TOKEN},  # in the URL only: refused, a POST needs the header
        json={"answer": "once", "ids": []},
    )
    assert post.status == 401
    assert (await client.get(f"/api/runs/{project.waiting}/approvals", headers=AUTH)).status == 405


async def test_the_page_carries_the_token_to_its_assets_and_runs_no_inline_script(
    client: TestClient[Any, Any],
) -> None:
    page = await (await client.get("/", params={"token": TOKEN})).text()
    assert f'src="/static/app.js?token={TOKEN}"' in page
    assert f'href="/static/style.css?token={TOKEN}"' in page
    assert "<script>" not in page and "{{TOKEN}}" not in page
    assert "'unsafe-inline'" not in SECURITY_HEADERS["Content-Security-Policy"]
    assert (await client.get("/static/../server.py", params={"token": TOKEN})).status == 404
    assert (await client.get("/static/index.html", params={"token": TOKEN})).status == 404


def test_the_page_script_has_no_html_sinks() -> None:
    """Run data reaches the document as text only: the script never parses HTML."""
    from importlib import resources

    script = resources.files("openprose.ui").joinpath("static", "app.js").read_text()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(",
                 "new Function"):  # fmt: skip
        assert sink not in script, sink


async def test_a_foreign_host_name_is_refused(client: TestClient[Any, Any]) -> None:
    # DNS rebinding: evil.example resolving to 127.0.0.1 still sends its own Host header
    response = await client.get("/api/runs", headers={**AUTH, "Host": "evil.example:80"})
    assert response.status == 403
    assert (await client.get("/api/runs", headers={**AUTH, "Host": "localhost"})).status == 200


# --- reading runs -------------------------------------------------------------------------


async def test_runs_are_listed_as_prose_runs_lists_them(
    client: TestClient[Any, Any], project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    listed = await _json(await client.get("/api/runs", headers=AUTH))
    assert main(["runs", "--json"]) == 0
    assert listed == json.loads(capsys.readouterr().out)
    assert {r["run_id"]: r["status"] for r in listed} == {
        project.finished: "succeeded",
        project.waiting: "waiting",
    }


async def test_a_finished_run_in_full(client: TestClient[Any, Any], project: Project) -> None:
    view = await _json(await client.get(f"/api/runs/{project.finished}", headers=AUTH))
    assert view["full"] and view["run"]["status"] == "succeeded"
    sessions = {s["step"]: s for s in view["sessions"]}
    # parallel branches 3|1, 3|2; pmap items 5:1[0..2]; the judgment and the branch taken
    assert set(sessions) == {
        "2",
        "3|1",
        "3|2",
        "5:1[0].1",
        "5:1[1].1",
        "5:1[2].1",
        "6?c1~1",
        "6/c1.1",
    }
    topic = sessions["2"]
    assert topic["agent"] == "writer" and topic["binding"] == "topic" and topic["status"] == "done"
    assert topic["prompt_preview"] == "Pick a topic <script>alert('x')</script>"
    assert topic["tokens"] == topic["input_tokens"] + topic["output_tokens"] > 0
    assert topic["elapsed"] >= 0.03 and topic["ended"] > topic["started"]
    assert "request" not in topic and "answer" not in topic  # long texts come one by one
    assert view["run"]["totals"]["sessions"] == 8
    assert view["run"]["totals"]["tokens"] == sum(s["tokens"] for s in sessions.values())
    [decision] = view["decisions"]
    assert (decision["kind"], decision["verdict"], decision["reason"]) == (
        "condition",
        True,
        "they do",
    )
    statuses = [(s["line"], s["kind"], s["status"], s["sessions"]) for s in view["statements"]]
    assert statuses == [
        (1, "agentdef", "definition", 0),
        (4, "binding", "done", 1),
        (7, "parallel", "done", 2),
        (11, "binding", "done", 0),
        (12, "binding", "done", 3),
        (15, "if", "done", 2),
    ]
    assert view["program_text"] == (project.runs / project.finished / "program.prose").read_text()


async def test_one_session_in_full_text_as_data(
    client: TestClient[Any, Any], project: Project
) -> None:
    response = await client.get(
        f"/api/runs/{project.finished}/session", params={"step": "2"}, headers=AUTH
    )
    assert response.headers["Content-Type"].startswith("application/json")
    session = await _json(response)
    assert session["system"] == "You write notes"
    assert session["messages"] == [
        {"role": "user", "text": "Pick a topic <script>alert('x')</script>"}
    ]
    assert session["answer"].startswith("Answer <img src=x onerror=")
    missing = await client.get(
        f"/api/runs/{project.finished}/session", params={"step": "99"}, headers=AUTH
    )
    assert missing.status == 404 and "no session '99'" in (await _json(missing))["error"]


def test_costs_come_from_the_price_table(tmp_path: Path) -> None:
    project = make_project(tmp_path / "priced")
    (project.root / "prose.toml").write_text(
        '[prices."sonnet"]\ninput = 3.0\noutput = 15.0\n[prices."haiku"]\ninput = 1\noutput = 5\n'
    )

    async def view() -> Any:
        async with TestClient(TestServer(make_app(project.root, TOKEN))) as client:
            return await _json(await client.get(f"/api/runs/{project.finished}", headers=AUTH))

    shown = asyncio.run(view())
    for s in shown["sessions"]:
        rate = (3.0, 15.0) if s["model"] == "sonnet" else (1.0, 5.0)
        expected = (s["input_tokens"] * rate[0] + s["output_tokens"] * rate[1]) / 1e6
        assert s["cost"] == pytest.approx(expected)
    assert shown["run"]["totals"]["cost"] == pytest.approx(
        sum(s["cost"] for s in shown["sessions"])
    )


async def test_a_damaged_run_says_what_could_not_be_read(
    client: TestClient[Any, Any], project: Project
) -> None:
    run_dir = project.runs / "20200101-000000-dddddd"
    run_dir.mkdir()
    (run_dir / "run.json").write_text("{broken")
    (run_dir / "journal.jsonl").write_text('{"ev": "session_finished", "step": "1", "t": 1}\n')
    try:
        listed = await _json(await client.get("/api/runs", headers=AUTH))
        damaged = {"run_id": run_dir.name, "status": "damaged", "program": "", "started": ""}
        assert {**damaged, "resume": ""} in listed  # `prose resume` cannot read it either
        view = await _json(await client.get(f"/api/runs/{run_dir.name}", headers=AUTH))
        assert view["run"]["status"] == "damaged" and "not valid JSON" in view["run"]["error"]
        assert view["damaged"] == [
            f"{run_dir / 'journal.jsonl'}: event 1 (session_finished) has the wrong shape"
        ]
    finally:
        shutil.rmtree(run_dir)


@pytest.mark.parametrize(
    "name", ["..", ".", "%2E%2E", "..%2F..%2Fetc", "x%2F..%2F..", "nope", "%00"]
)
async def test_a_run_name_cannot_leave_the_runs_folder(
    client: TestClient[Any, Any], name: str
) -> None:
    for path in (f"/api/runs/{name}", f"/api/runs/{name}/session?step=1"):
        response = await client.get(path, headers=AUTH)
        assert response.status == 404, path


async def test_a_linked_run_folder_outside_is_not_served(
    client: TestClient[Any, Any], project: Project, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "run.json").write_text('{"status": "succeeded", "program": "secret"}')
    (outside / "journal.jsonl").write_text("")
    link = project.runs / "20990101-000000-aaaaaa"
    link.symlink_to(outside)
    try:
        response = await client.get(f"/api/runs/{link.name}", headers=AUTH)
        assert response.status == 404
        post = await client.post(
            f"/api/runs/{link.name}/approvals", headers=AUTH, json={"answer": "deny", "all": True}
        )
        assert post.status == 404
    finally:
        link.unlink()


# --- approvals ----------------------------------------------------------------------------


async def test_approve_has_exactly_the_effect_of_prose_approve(
    client: TestClient[Any, Any], project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    by_ui = project.copy_run(project.waiting, "20261231-000000-a00001")
    by_cli = project.copy_run(project.waiting, "20261231-000000-a00002")
    [pending] = (await _json(await client.get(f"/api/runs/{by_ui.name}", headers=AUTH)))[
        "pending_approvals"
    ]
    response = await client.post(
        f"/api/runs/{by_ui.name}/approvals",
        headers=AUTH,
        json={"answer": "once", "ids": [pending["id"]]},
    )
    assert response.status == 200
    body = await _json(response)
    assert [r["id"] for r in body["answered"]] == [pending["id"]]
    assert body["next"] == f"prose resume {by_ui.name}"
    assert main(["approve", by_cli.name, pending["id"]]) == 0
    capsys.readouterr()
    assert same_but_who(journal_lines(by_ui), journal_lines(by_cli))
    assert journal_lines(by_ui)[-1]["ev"] == "approval_decided"
    assert journal_lines(by_ui)[-1]["by"] == "ui"
    assert journal_lines(by_cli)[-1]["by"] == "cli"
    assert (by_ui / "state.md").read_text() == (by_cli / "state.md").read_text()
    # and the run resumes from it: the approved write happens
    resumed = await openprose.aresume(by_ui.name, project_dir=project.root)
    assert resumed.status == "succeeded"
    assert (project.root / "a.md").read_text() == "A"
    # answering again: nothing is pending any more, said as `prose approve` says it
    again = await client.post(
        f"/api/runs/{by_ui.name}/approvals", headers=AUTH, json={"answer": "once", "ids": []}
    )
    assert again.status == 409
    assert "has no pending approval request" in (await _json(again))["error"]


async def test_deny_all_matches_prose_deny(
    client: TestClient[Any, Any], project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    by_ui = project.copy_run(project.waiting, "20261231-000000-b00001")
    by_cli = project.copy_run(project.waiting, "20261231-000000-b00002")
    response = await client.post(
        f"/api/runs/{by_ui.name}/approvals", headers=AUTH, json={"answer": "deny", "all": True}
    )
    assert response.status == 200
    assert main(["deny", by_cli.name, "--all"]) == 0
    capsys.readouterr()
    assert same_but_who(journal_lines(by_ui), journal_lines(by_cli))
    assert {e["by"] for e in journal_lines(by_ui) if e["ev"] == "approval_decided"} == {"ui"}
    assert (by_ui / "state.md").read_text() == (by_cli / "state.md").read_text()


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[]",
        b'{"answer": "yes"}',
        b'{"answer": "once", "ids": "r1"}',
        b'{"answer": "once", "ids": [1]}',
    ],
)
async def test_a_malformed_answer_is_refused_and_nothing_written(
    client: TestClient[Any, Any], project: Project, body: bytes
) -> None:
    journal = project.runs / project.waiting / "journal.jsonl"
    before = journal.read_bytes()
    response = await client.post(
        f"/api/runs/{project.waiting}/approvals",
        headers={**AUTH, "Content-Type": "application/json"},
        data=body,
    )
    assert response.status == 400 and "answer" in (await _json(response))["error"]
    assert journal.read_bytes() == before


# --- live updates -------------------------------------------------------------------------


async def _events(response: ClientResponse, count: int) -> list[tuple[str, Any]]:
    events: list[tuple[str, Any]] = []
    name = ""
    while len(events) < count:
        line = (await asyncio.wait_for(response.content.readline(), 10)).decode().rstrip("\n")
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            events.append((name, orjson.loads(line[6:])))
    return events


async def test_the_event_stream_sends_the_run_then_what_changes(
    client: TestClient[Any, Any], project: Project
) -> None:
    run_dir = project.copy_run(project.finished, "20261231-000000-c00001")
    meta = json.loads((run_dir / "run.json").read_text())
    # the run is going again: its process is this one, alive
    meta.update(status="running", pid=os.getpid(), pid_started=process_started(os.getpid()))
    (run_dir / "run.json").write_text(json.dumps(meta))
    response = await client.get("/api/events", params={"token": TOKEN, "run": run_dir.name})
    assert response.status == 200
    assert response.headers["Content-Type"] == "text/event-stream"
    first = dict(await _events(response, 2))
    assert {r["run_id"] for r in first["runs"]} >= {run_dir.name, project.finished}
    assert first["run"]["full"] and len(first["run"]["sessions"]) == 8
    assert first["run"]["run"]["status"] == "running"
    with (run_dir / "journal.jsonl").open("ab") as journal:
        journal.write(
            orjson.dumps(
                {
                    "ev": "session_started",
                    "step": "7",
                    "t": 2e9,
                    "agent": None,
                    "model": "sonnet",
                    "binding": "late",
                    "kind": "session",
                }
            )
            + b"\n"
        )
    [(name, delta)] = await _events(response, 1)
    assert name == "run" and not delta["full"] and "program_text" not in delta
    assert [(s["step"], s["status"]) for s in delta["sessions"]] == [("7", "running")]
    meta.update(status="failed", error="stopped <b>here</b>")
    (run_dir / "run.json").write_text(json.dumps(meta))
    [(_, final)] = await _events(response, 1)
    assert final["run"]["status"] == "failed" and final["run"]["error"] == "stopped <b>here</b>"
    assert final["sessions"] == []  # nothing new in the journal: the header alone changed
    response.close()


async def test_an_unknown_run_has_no_stream(client: TestClient[Any, Any]) -> None:
    response = await client.get("/api/events", params={"token": TOKEN, "run": "../x"})
    assert response.status == 404


# --- the command and the API --------------------------------------------------------------


def test_port_in_use_is_one_line_and_exit_2(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["ui", "--port", str(port)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"prose ui: port {port} on 127.0.0.1 is in use (choose another with --port, or "
        f"--port 0 for any free port)\n"
    )
    assert main(["ui", "--port", "70000"]) == 2
    assert "a port is 0 to 65535" in capsys.readouterr().err


def test_prose_ui_prints_the_url_first_and_stops_cleanly_on_ctrl_c(project: Project) -> None:
    process = start_prose(project.root, "ui")
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and "/?token=" in url
        with urllib.request.urlopen(url.replace("/?", "/api/runs?"), timeout=10) as answer:
            assert {r["run_id"] for r in json.load(answer)} >= {project.finished}
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url.split("?")[0] + "api/runs", timeout=10)
        assert refused.value.code == 401
        process.send_signal(2)  # SIGINT, as Ctrl-C
        _, err = process.communicate(timeout=20)
    finally:
        process.kill()
    assert process.returncode == 0
    assert "Traceback" not in err and "prose ui: stopped" in err


def test_serve_ui_from_python(project: Project) -> None:
    with openprose.serve_ui(project.root) as server:
        assert server.url.startswith("http://127.0.0.1:")
        api = server.url.replace("/?", f"/api/runs/{project.finished}?")
        with urllib.request.urlopen(api, timeout=10) as answer:
            assert json.load(answer)["run"]["status"] == "succeeded"
        with pytest.raises(OSError, match="is in use"):
            openprose.serve_ui(project.root, port=server.port)
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(server.url, timeout=5)

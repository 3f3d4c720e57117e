"""The journal digest `prose show` prints and `prose ui` keeps current (`vm/runview.py`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

import openprose
from openprose.parser import parse_text
from openprose.record import events
from openprose.record.codec import encode
from openprose.record.journal import read_journal, read_journal_from
from openprose.record.runview import PREVIEW_CHARS, RunDigest, in_full, statements, summary
from tests.openprose.ui.runs import PROGRAM, Project, make_project


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    return make_project(tmp_path_factory.mktemp("runview") / "project")


def _journal(project: Project, run_id: str) -> Path:
    return project.runs / run_id / "journal.jsonl"


def test_a_growing_journal_is_read_line_by_complete_line(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    assert read_journal_from(path, 0) == ([], 0)
    path.write_bytes(b'{"ev": "a"}\n{"ev": "b"')  # the second line is still being written
    events, offset = read_journal_from(path, 0)
    assert events == [{"ev": "a"}] and offset == len(b'{"ev": "a"}\n')
    with path.open("ab") as journal:
        journal.write(b', "x": 1}\nnot json\n')
    events, offset = read_journal_from(path, offset)
    assert events == [{"ev": "b", "x": 1}] and offset == path.stat().st_size


def test_fed_in_pieces_it_equals_the_whole(project: Project) -> None:
    path = _journal(project, project.finished)
    whole = RunDigest()
    whole.add_all(read_journal(path))
    data = path.read_bytes()
    pieces = RunDigest()
    offset = 0
    for cut in range(0, len(data) + 997, 997):  # cuts that fall mid-line
        partial = path.parent / "partial.jsonl"
        partial.write_bytes(data[:cut])
        events, offset = read_journal_from(partial, offset)
        pieces.add_all(events)
    assert pieces.sessions == whole.sessions and pieces.decisions == whole.decisions
    assert pieces.version == whole.version == len(list(read_journal(path)))


def test_a_summary_since_a_version_holds_only_what_changed(project: Project) -> None:
    events = list(read_journal(_journal(project, project.finished)))
    last = next(
        i for i, e in enumerate(events) if e["ev"] == "session_finished" and e["step"] == "6/c1.1"
    )
    digest = RunDigest()
    digest.add_all(events[:last])  # up to before the last session finished
    seen = digest.version
    assert digest.sessions["6/c1.1"]["status"] == "running"
    digest.add_all(events[last:])
    changed = digest.summary(seen)
    assert [s["step"] for s in changed["sessions"]] == ["6/c1.1"]
    assert changed["sessions"][0]["status"] == "done" and changed["decisions"] == []
    assert len(digest.summary()["sessions"]) == 8


def test_sessions_carry_what_a_person_reads(project: Project) -> None:
    digest = RunDigest(price_of=lambda model: None)
    digest.add_all(read_journal(_journal(project, project.finished)))
    branch = digest.sessions["3|2"]
    assert branch["binding"] == "b" and branch["model"] == "sonnet" and branch["cost"] is None
    [message] = in_full(branch)["messages"]
    assert message["role"] == "user" and message["text"].startswith("Angle B on Answer <img")
    assert summary(branch)["prompt_preview"] == message["text"][:PREVIEW_CHARS]
    assert branch["elapsed"] == pytest.approx(branch["ended"] - branch["started"], abs=0.02)
    judgment = digest.sessions["6?c1~1"]
    assert judgment["kind"] == "judgment" and judgment["agent"] == "evaluator"


def _event(ev: str, step: str, **fields: Any) -> dict[str, Any]:
    """A journal line as written by hand (perhaps lacking what its event needs)."""
    return {"ev": ev, "step": step, "t": 1.0, **fields}


def _line(event: events.Event, t: float = 1.0) -> dict[str, Any]:
    """An event's journal line, as the journal writes it and reads it back."""
    line: dict[str, Any] = orjson.loads(encode(event, t))
    return line


def _started(step: str) -> events.SessionStarted:
    return events.SessionStarted(
        step=step, agent=None, model="sonnet", binding=None, kind="session"
    )


def _finished(step: str, request: Any, response: Any) -> events.SessionFinished:
    return events.SessionFinished(
        step=step, request=request, response=response, agent=None, model="sonnet",
        binding=None, attempt=1, elapsed=0.5, kind="session",
    )  # fmt: skip


def test_statement_status_follows_its_sessions() -> None:
    body = parse_text(PROGRAM).program.body
    digest = RunDigest()
    digest.add(_line(_started("2")))
    request = {"model": "sonnet", "messages": []}
    response = {"text": "t", "usage": {"input_tokens": 1, "output_tokens": 2}}
    digest.add(_line(_finished("2", request, response)))
    digest.add(_line(_started("3|1")))
    digest.add(_line(events.SessionFailed(step="3|2", attempt=1, error="boom")))
    shown = [s["status"] for s in statements(body, digest, "running")]
    assert shown == ["definition", "done", "running", "pending", "pending", "pending"]
    stopped = [s["status"] for s in statements(body, digest, "failed")]
    assert stopped[2] == "failed"
    digest.add_event(
        events.ApprovalRequested(
            step="3|1", turn=0, index=0, id="3|1~t0.0:write", kind="write", action="a.txt",
            tool="write_file",
        ),
        2.0,
    )  # fmt: skip
    assert statements(body, digest, "waiting")[2]["status"] == "waiting"
    assert [s["status"] for s in statements(body, RunDigest(), "succeeded")][1:] == ["done"] * 5
    assert digest.damaged == []


def test_an_event_of_the_wrong_shape_is_named_not_fatal() -> None:
    digest = RunDigest("j.jsonl")
    digest.add(_event("session_finished", "2", response={"text": "x"}))  # lacks its fields
    digest.add(_line(_finished("3", {"messages": []}, {"text": "x"})))  # an answer, no usage
    digest.add(_event("decision", "3?c1", kind="condition", verdict=True, reason="r"))
    digest.add({"step": "4"})  # names no event
    assert digest.damaged == [
        "j.jsonl: event 1 (session_finished) has the wrong shape",
        "j.jsonl: event 2 (session_finished) has the wrong shape",
        "j.jsonl: event 4 (None) has the wrong shape",
    ]
    assert len(digest.decisions) == 1 and digest.events == digest.version == 4


def test_a_tool_loop_turn_journaled_as_a_delta_shows_its_whole_conversation(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path / "tools")
    done = openprose.run(
        project.root / "wait.prose",
        provider=f"scripted:{project.root / 'wait-rules.json'}",
        project_dir=project.root,
        yes=True,
    )
    assert done.status == "succeeded"
    events = list(read_journal(done.run_dir / "journal.jsonl"))
    assert any("request_delta" in e for e in events)  # the second turn holds only its delta
    digest = RunDigest()
    digest.add_all(events)
    assert digest.damaged == []
    first, second = (in_full(digest.sessions[step]) for step in ("2", "2~t1"))
    assert second["messages"][: len(first["messages"])] == first["messages"]
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "user"]
    assert "write_file" in second["messages"][1]["text"] and second["answer"] == "wrote it"
    assert second["system"] == first["system"] and first["system"].startswith("You write notes")


def test_a_sessions_cache_counts_and_their_cost() -> None:
    from openprose.providers.prices import Prices

    digest = RunDigest(price_of=Prices.default().price_of)
    usage = {"input_tokens": 3000, "output_tokens": 10, "cache_read_tokens": 2900}
    request = {"model": "claude-sonnet-5-5", "messages": []}
    response = {"text": "ok", "usage": usage, "model": "claude-sonnet-5-5"}
    digest.add_all([_line(_started("1")), _line(_finished("1", request, response), 2.0)])
    session = digest.sessions["1"]
    assert (session["cache_read_tokens"], session["cache_write_tokens"]) == (2900, 0)
    # 100 uncached x $2 + 2900 read x $0.20 + 10 out x $10, per million
    assert session["cost"] == pytest.approx((100 * 2 + 2900 * 0.2 + 10 * 10) / 1_000_000)

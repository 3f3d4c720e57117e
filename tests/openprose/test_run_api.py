"""Running programs from Python: openprose.run / arun / resume / events / batch."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

import openprose
from openprose.record.events import RunFinished, RunStarted, SessionFinished, Streamed
from tests.support import fixtures
from tests.support.fake_llm_server import FakeLLMServer

fake_llm_server = fixtures.fake_llm_server  # the shared loopback fake, per test

RULES = 'default: "ok"\nrules:\n  - match: "^Fail"\n    answer: "x"\n    failures: [error]\n'


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PROSE_PROVIDER", raising=False)
    (tmp_path / "rules.yaml").write_text(RULES)
    return tmp_path


def test_run_a_file_with_inputs(project: Path) -> None:
    (project / "p.prose").write_text(
        'input topic: "what"\nlet t = session "Write about {topic}"\noutput out = t\n'
    )
    result = openprose.run("p.prose", inputs={"topic": "owls"}, provider="scripted:rules.yaml")
    assert result.status == "succeeded" and result.outputs == {"out": "ok"}
    assert result.usage["requests_sent"] == 1
    meta = json.loads((result.run_dir / "run.json").read_text())
    assert meta["inputs"] == {"topic": "owls"} and meta["run_id"] == result.run_id


def test_run_program_text_and_a_failing_program(project: Path) -> None:
    ok = openprose.run('session "Hello"', provider="scripted:rules.yaml")
    assert ok.status == "succeeded" and ok.result == "ok"
    failed = openprose.run('session "Fail now"', provider="scripted:rules.yaml")
    assert failed.status == "failed" and "injected error" in (failed.error or "")


def test_a_program_that_cannot_start_raises_with_diagnostics(project: Path) -> None:
    with pytest.raises(openprose.RunError) as caught:
        openprose.run('sesion "x"\n', provider="scripted:rules.yaml")
    assert caught.value.diagnostics[0]["code"] == "E004"
    (project / "p.prose").write_text('input topic: "what"\nsession "x {topic}"\n')
    with pytest.raises(openprose.RunError) as missing:
        openprose.run("p.prose", provider="scripted:rules.yaml")
    assert [d["code"] for d in missing.value.diagnostics] == ["E026"]
    with pytest.raises(openprose.RunError, match="scripted"):
        openprose.run('session "x"', provider="scripted:missing.yaml")
    assert not (project / ".prose" / "runs").exists() or not any(
        (project / ".prose" / "runs").iterdir()
    )


async def test_arun_with_models_routes_an_alias_over_http(
    project: Path, fake_llm_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm_server.openai_base_url)
    result = await openprose.arun(
        'agent w:\n  model: opus\nsession: w\n  prompt: "Hi"\n',
        provider="openai",
        models={"opus": "openai:my-model"},
    )
    assert result.status == "succeeded"
    assert [body["model"] for body in fake_llm_server.stats.bodies] == ["my-model"]


async def test_events_yield_the_run_as_it_happens(project: Path) -> None:
    stream = openprose.events(
        'let a = session "One"\nlet b = session "Two"\n', provider="scripted:rules.yaml"
    )
    seen = [event async for event in stream]
    assert isinstance(seen[0], RunStarted) and isinstance(seen[-1], RunFinished)
    finished = [e for e in seen if isinstance(e, SessionFinished)]
    assert [e.response["text"] for e in finished] == ["ok", "ok"]
    assert stream.result is not None and stream.result.status == "succeeded"
    assert seen[-1].status == "succeeded" and seen[-1].step == ""


async def test_events_include_the_pieces_of_a_streaming_answer(
    project: Path, fake_llm_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm_server.openai_base_url)
    stream = openprose.events(
        'session "Tell me a long story about seven small ducks"\n', provider="openai"
    )
    seen = [event async for event in stream]
    pieces = [e for e in seen if isinstance(e, Streamed)]
    finished = next(e for e in seen if isinstance(e, SessionFinished))
    assert len(pieces) > 1 and "".join(p.text for p in pieces) == finished.response["text"]
    assert {p.step for p in pieces} == {finished.step}
    assert seen.index(pieces[-1]) < seen.index(finished)  # pieces come before the whole
    assert fake_llm_server.stats.bodies[0]["stream"] is True
    journal = (stream.result.run_dir / "journal.jsonl").read_text() if stream.result else ""
    assert journal.count("seven small ducks") == 2  # the request and the whole answer only


def test_resume_continues_a_failed_run(project: Path) -> None:
    (project / "p.prose").write_text('let a = session "One"\nlet b = session "Fail now"\n')
    first = openprose.run("p.prose", provider="scripted:rules.yaml")
    assert first.status == "failed"
    # the rule failed once; a resume serves "One" from the journal and retries "Fail now"
    (project / "rules.yaml").write_text('default: "ok"\n')
    again = openprose.resume(first.run_id[:15])
    assert again.run_id == first.run_id and again.status == "succeeded"
    assert again.usage["requests_served_from_journal"] == 1
    with pytest.raises(openprose.RunError, match="no run"):
        openprose.resume("no-such-run")


def test_batch_from_python(project: Path) -> None:
    (project / "p.prose").write_text('input topic: "what"\noutput o = session "On {topic}"\n')
    (project / "in.jsonl").write_text('{"topic": "a"}\n{"nope": 1}\n')
    result = openprose.batch("p.prose", "in.jsonl", provider="scripted:rules.yaml")
    assert result.status == "invalid_lines"  # the one run succeeded; a line was invalid
    assert (result.stats.succeeded, result.stats.invalid) == (1, 1)
    rows = [json.loads(x) for x in result.output.read_text().splitlines()]
    assert {r["line"]: r["status"] for r in rows} == {1: "succeeded", 2: "invalid"}
    again = openprose.batch(resume=result.batch_id)
    assert again.stats.done_before == 2 and again.stats.done == 0


def test_sync_run_inside_a_running_loop_is_refused_clearly(project: Path) -> None:
    async def inside() -> None:
        with pytest.raises(RuntimeError, match="arun"):
            openprose.run('session "x"', provider="scripted:rules.yaml")

    asyncio.run(inside())

"""`prose run`, `prose resume`, `prose runs`, `prose show` end to end on a scripted provider."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openprose.cli import main

RULES = """default: "ok"
rules:
  - match: "^Condition: the list is long"
    answer: '{"verdict": true, "reason": "three items"}'
  - match: "^Fail"
    answer: "x"
    failures: [error]
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PROSE_PROVIDER", raising=False)
    (tmp_path / "rules.yaml").write_text(RULES)
    return tmp_path


def prose(*args: str) -> int:
    return main(list(args))


def test_run_json_with_typed_inputs(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "p.prose").write_text(
        'input topics: "list"\ninput tone: "style"\n'
        'let out = topics | map:\n  session "Write about {item} in {tone}"\n'
        'if **the list is long**:\n  output n = session "Count"\n    context: out\n'
    )
    (project / "in.json").write_text(json.dumps({"topics": ["a", "b", "c"]}))
    code = prose(
        "run",
        "p.prose",
        "--inputs",
        "in.json",
        "--input",
        "tone=dry",
        "--provider",
        "scripted:rules.yaml",
        "--json",
    )
    out = capsys.readouterr().out
    assert code == 0
    result = json.loads(out)
    assert set(result) == {"run_id", "status", "outputs", "usage"}
    assert result["status"] == "succeeded" and result["outputs"] == {"n": "ok"}
    assert result["usage"]["requests_sent"] == 5  # three map items, one judgment, one session


def test_program_failure_exits_1_with_location(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "f.prose").write_text('session "fine"\nsession "Fail now"\n')
    code = prose("run", "f.prose", "--provider", "scripted:rules.yaml")
    captured = capsys.readouterr()
    assert code == 1
    assert "f.prose:2:1" in captured.err and "Traceback" not in captured.err
    assert "failed" in captured.out


def test_compile_errors_exit_2_and_never_run(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "bad.prose").write_text("session: ghost\n")
    code = prose("run", "bad.prose", "--provider", "scripted:rules.yaml")
    captured = capsys.readouterr()
    assert code == 2
    assert "bad.prose:1:" in captured.out and "E007" in captured.out
    assert not (project / ".prose" / "runs").exists()


def test_usage_errors_exit_2(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "p.prose").write_text('input topic: "t"\nsession "x {topic}"\n')
    assert prose("run", "p.prose", "--provider", "scripted:rules.yaml") == 2
    assert "E026 missing required input 'topic'" in capsys.readouterr().out
    assert (
        prose(
            "run",
            "p.prose",
            "--input",
            "topic=a",
            "--input",
            "extra=b",
            "--provider",
            "scripted:rules.yaml",
        )
        == 2
    )
    assert "E027" in capsys.readouterr().out
    assert prose("run", "p.prose", "--input", "topic=a", "--provider", "nosuch") == 2
    assert "unknown provider" in capsys.readouterr().err
    assert prose("run", "missing.prose") == 2
    assert prose("run", "p.prose", "--input", "oops") == 2


def test_resume_runs_and_show(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "r.prose").write_text(
        'let a = session "First"\noutput b = session "Fail or not"\n  context: a\n'
    )
    assert prose("run", "r.prose", "--provider", "scripted:rules.yaml") == 1
    run_id = next((project / ".prose" / "runs").iterdir()).name
    capsys.readouterr()
    (project / "rules.yaml").write_text('default: "fixed"\nrules: []\n')
    elsewhere = project / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # resume by folder from another directory
    assert prose("resume", str(project / ".prose" / "runs" / run_id), "--json") == 0
    monkeypatch.chdir(project)
    result = json.loads(capsys.readouterr().out)
    assert result["status"] == "succeeded" and result["outputs"] == {"b": "fixed"}
    assert result["usage"]["requests_served_from_journal"] == 1
    assert prose("runs") == 0
    assert f"{run_id}  succeeded" in capsys.readouterr().out
    assert prose("show", run_id) == 0
    shown = capsys.readouterr().out
    assert "steps (2):" in shown and "b: fixed" in shown
    assert prose("show", run_id, "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert [s["step"] for s in data["steps"]] == ["1", "2"] and data["outputs"] == {"b": "fixed"}
    assert prose("resume", "nope") == 2
    # The journal serves as a replay source: the same program replays without any rules.
    assert prose("show", run_id, "--cassette", "tape.jsonl", "--json") == 0
    capsys.readouterr()
    assert prose("run", "r.prose", "--provider", "replay:tape.jsonl", "--json") == 0
    assert json.loads(capsys.readouterr().out)["outputs"] == {"b": "fixed"}


def test_record_writes_a_replayable_cassette(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "c.prose").write_text('output a = session "Hello"\n')
    assert (
        prose("run", "c.prose", "--provider", "scripted:rules.yaml", "--record", "tape.jsonl") == 0
    )
    capsys.readouterr()
    assert prose("run", "c.prose", "--provider", "replay:tape.jsonl", "--json") == 0
    assert json.loads(capsys.readouterr().out)["outputs"] == {"a": "ok"}


def test_run_over_real_http_with_a_429(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The OpenAI SDK path end to end: loopback server, a rate limit with retry-after, echo."""
    from tests.support.fake_llm_server import Fault, fetch_stats, script_faults, start_in_subprocess

    base_url, stop = start_in_subprocess(latency_ms=5)
    try:
        script_faults(base_url, Fault("429", retry_after=0.05))
        monkeypatch.setenv("OPENAI_BASE_URL", f"{base_url}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        (project / "h.prose").write_text(
            'let a = session "Hello there"\noutput b = session "Again"\n  context: []\n'
        )
        assert prose("run", "h.prose", "--provider", "openai", "--json") == 0
        result = json.loads(capsys.readouterr().out)
        assert result["outputs"] == {"b": "echo: Again"}
        assert fetch_stats(base_url)["attempts"] == 3
    finally:
        stop()


def test_unusable_model_route_aborts_with_exit_2(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    (project / "m.prose").write_text('session "x"\n  model: opus\n')
    code = prose(
        "run", "m.prose", "--provider", "openai", "--model", "opus=anthropic:claude-opus-4-1"
    )
    assert code == 2
    assert "ANTHROPIC_API_KEY" in capsys.readouterr().err


def test_resume_uses_the_imported_text_the_run_recorded(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "lib.prose").write_text('input x: "x"\noutput y = session "Lib {x}"\n')
    (project / "main.prose").write_text(
        'use "lib.prose"\nlet r = lib(x: "a")\noutput z = session "Fail {r.y}"\n'
    )
    assert prose("run", "main.prose", "--provider", "scripted:rules.yaml") == 1
    run_id = next((project / ".prose" / "runs").iterdir()).name
    (project / "lib.prose").write_text('input other: "changed"\noutput w = session "New"\n')
    (project / "rules.yaml").write_text('default: "fine"\nrules: []\n')
    capsys.readouterr()
    assert prose("resume", run_id, "--json") == 0
    result = json.loads(capsys.readouterr().out)
    assert result["outputs"] == {"z": "fine"}
    assert result["usage"]["requests_served_from_journal"] == 1


def test_vm_settings_from_prose_toml(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "prose.toml").write_text('[vm]\ncontext_budget = 50\nevaluator_model = "judge"\n')
    (project / "rules.yaml").write_text(
        'default: "%s"\nrules:\n  - match: "^Condition"\n    answer: \'{"verdict": true}\'\n'
        % ("x" * 200)
    )
    (project / "t.prose").write_text(
        'let a = session "Long"\nif **a is long enough**:\n  output b = session "Use"\n    context: a\n'
    )
    assert prose("run", "t.prose", "--provider", "scripted:rules.yaml", "--json") == 0
    run_dir = next((project / ".prose" / "runs").iterdir())
    assert "context:trimmed a -150 chars" in (run_dir / "state.md").read_text()
    assert json.loads((run_dir / "run.json").read_text())["config"]["evaluator_model"] == "judge"
    (project / "prose.toml").write_text("[vm]\nnope = 1\n")
    capsys.readouterr()
    assert prose("run", "t.prose", "--provider", "scripted:rules.yaml") == 2
    assert "unknown [vm] setting(s): nope" in capsys.readouterr().err


def test_internal_errors_never_show_a_traceback(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from openprose.vm.interpreter import Interpreter

    async def broken(self: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(Interpreter, "run", broken)
    (project / "x.prose").write_text('session "x"\n')
    assert prose("run", "x.prose", "--provider", "scripted:rules.yaml") == 1
    err = capsys.readouterr().err
    assert "internal error: RuntimeError: boom" in err and "Traceback" not in err

"""`prose run`, `prose resume`, `prose runs`, `prose show` end to end on a scripted provider."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
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


def test_the_resume_command_is_offered_only_where_resuming_can_end_otherwise(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = ("--provider", "scripted:rules.yaml", "-q")
    same_way = "would fail the same way (every answer it got is replayed from its journal)"
    # A `throw` after answered sessions: a resume replays them and throws again.
    (project / "t.prose").write_text('session "fine"\nthrow "stop here"\n')
    assert prose("run", "t.prose", *run) == 1
    err = capsys.readouterr().err
    assert "t.prose:2:1: stop here" in err and same_way in err and "prose resume" not in err
    run_id = next((project / ".prose" / "runs").iterdir()).name
    assert prose("resume", run_id, *run) == 1  # the claim holds: the same error again
    err = capsys.readouterr().err
    assert "t.prose:2:1: stop here" in err and same_way in err
    # An evaluator's unusable answers are asked again on resume (perhaps of another one).
    (project / "rules.yaml").write_text('default: "ok"\n')
    (project / "j.prose").write_text('if **it rains**:\n  session "Umbrella"\n')
    assert prose("run", "j.prose", *run) == 1
    err = capsys.readouterr().err
    assert "--evaluator" in err and "continue it with: prose resume " in err
    # A model call that failed is asked again: there the resume command is what helps.
    (project / "rules.yaml").write_text(RULES)
    (project / "f.prose").write_text('session "fine"\nsession "Fail now"\n')
    assert prose("run", "f.prose", *run) == 1
    err = capsys.readouterr().err
    assert "continue it with: prose resume " in err and same_way not in err
    # ...also when a `catch` that gave up on it threw: the failure is released, not served.
    (project / "c.prose").write_text('try:\n  session "Fail now"\ncatch:\n  throw "gave up"\n')
    assert prose("run", "c.prose", *run) == 1
    err = capsys.readouterr().err
    assert "c.prose:4:3: gave up" in err and "continue it with: prose resume " in err


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


def test_json_mode_keeps_stdout_one_object_when_nothing_runs(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "bad.prose").write_text("session: ghost\n")
    assert prose("run", "bad.prose", "--provider", "scripted:rules.yaml", "--json") == 2
    captured = capsys.readouterr()
    shown = json.loads(captured.out)  # nothing else on stdout
    assert shown["status"] == "not_run" and shown["run_id"] is None
    assert [(d["code"], d["line"]) for d in shown["diagnostics"]] == [("E007", 1)]
    assert "bad.prose:1:" in captured.err and "E007" in captured.err  # as `prose check` prints
    (project / "p.prose").write_text('input topic: "t"\nsession "x {topic}"\n')
    assert prose("run", "p.prose", "--provider", "scripted:rules.yaml", "--json") == 2
    captured = capsys.readouterr()
    shown = json.loads(captured.out)
    assert [(d["code"], d["line"], d["column"]) for d in shown["diagnostics"]] == [("E026", 1, 1)]
    assert "p.prose:1:1: E026 missing required input 'topic'" in captured.err
    assert prose("run", "p.prose", "--input", "topic=a", "--provider", "nosuch", "--json") == 2
    shown = json.loads(capsys.readouterr().out)
    assert shown["status"] == "not_run" and "unknown provider" in shown["error"]
    assert not (project / ".prose" / "runs").exists()


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
    assert "context:trimmed a -153 chars" in (run_dir / "state.md").read_text()  # 50 - "Use"
    assert json.loads((run_dir / "run.json").read_text())["config"]["evaluator_model"] == "judge"
    (project / "prose.toml").write_text("# settings\n[vm]\n\nnope = 1\n")
    capsys.readouterr()
    assert prose("run", "t.prose", "--provider", "scripted:rules.yaml") == 2
    err = capsys.readouterr().err  # the place of the key, as for a TOML syntax error
    assert err.startswith(f"prose: {project / 'prose.toml'}:4: unknown [vm] setting(s): nope")
    for bad, message in (
        ('max_depth = "deep"', "[vm] max_depth must be an integer, got 'deep'"),
        ("context_budget = 0", "[vm] context_budget must be positive"),
        ("history_items = 2.5", "[vm] history_items must be an integer"),
        ("default_model = 3", "[vm] default_model must be a non-empty string"),
    ):
        (project / "prose.toml").write_text(f"[vm]\n{bad}\n")
        assert prose("run", "t.prose", "--provider", "scripted:rules.yaml") == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err and "prose.toml:2: [vm]" in err


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


@pytest.fixture
def web() -> Iterator[tuple[str, dict[str, str], list[str]]]:
    """A loopback HTTP server: yields (base URL, {path: text} it serves, paths requested)."""
    pages: dict[str, str] = {}
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            if self.path not in pages:
                self.send_error(404)
                return
            body = pages[self.path].encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return None

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", pages, hits
    server.shutdown()
    server.server_close()


def test_use_from_configured_registry_and_url_then_offline(
    project: Path,
    web: tuple[str, dict[str, str], list[str]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base, pages, hits = web
    monkeypatch.delenv("PROSE_REGISTRY", raising=False)
    pages["/@alice/research"] = 'input topic: "t"\noutput findings = session "Research {topic}"\n'
    pages["/lib/bob/critique.prose"] = 'input text: "t"\noutput verdict = session "Judge {text}"\n'
    (project / "prose.toml").write_text(f'registry = "{base}"\n')
    (project / "main.prose").write_text(
        'use "@alice/research"\n'
        f'use "{base}/lib/bob/critique.prose" as critique\n'
        'let r = research(topic: "owls")\n'
        "output v = critique(text: r.findings)\n"
    )
    assert prose("run", "main.prose", "--provider", "scripted:rules.yaml", "--json") == 0
    assert json.loads(capsys.readouterr().out)["outputs"] == {"v": {"verdict": "ok"}}
    assert sorted(hits) == ["/@alice/research", "/lib/bob/critique.prose"]
    run_dir = next((project / ".prose" / "runs").iterdir())
    meta = json.loads((run_dir / "run.json").read_text())
    cached = project / ".prose" / "imports"
    for spec, page in (
        ("@alice/research", "/@alice/research"),
        (f"{base}/lib/bob/critique.prose", "/lib/bob/critique.prose"),
    ):
        digest = meta["import_pins"][spec]
        assert (cached / f"{digest}.prose").read_text() == pages[page]
    assert sorted(p.name for p in (run_dir / "imports").iterdir()) == [
        "alice--research",
        "bob--critique",
    ]
    # The server goes away: a re-run uses the cached texts.
    pages.clear()
    assert prose("run", "main.prose", "--provider", "scripted:rules.yaml", "--json") == 0
    assert json.loads(capsys.readouterr().out)["status"] == "succeeded"
    (project / "prose.toml").write_text('registry = "ftp://nowhere"\n')
    assert prose("run", "main.prose", "--provider", "scripted:rules.yaml") == 2
    assert "registry must be an http(s):// URL" in capsys.readouterr().err


def test_a_reused_pid_does_not_keep_a_run_running(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import os

    from openprose.record.runstore import process_started

    (project / "x.prose").write_text('session "x"\n')
    assert prose("run", "x.prose", "--provider", "scripted:rules.yaml") == 0
    run_dir = next((project / ".prose" / "runs").iterdir())
    meta_path = run_dir / "run.json"
    meta = json.loads(meta_path.read_text())
    assert meta["pid_started"] == process_started(os.getpid()) is not None
    # Pretend the run is still going in this (live) process...
    meta.update(status="running", pid=os.getpid())
    meta_path.write_text(json.dumps(meta))
    capsys.readouterr()
    assert prose("runs") == 0 and " running " in capsys.readouterr().out
    assert prose("resume", run_dir.name) == 2
    assert "is still running" in capsys.readouterr().err
    # ...then that its pid now belongs to a process started at another time.
    meta["pid_started"] += 1
    meta_path.write_text(json.dumps(meta))
    assert prose("runs") == 0 and " interrupted " in capsys.readouterr().out
    assert prose("resume", run_dir.name, "--json") == 0
    assert json.loads(capsys.readouterr().out)["usage"]["requests_served_from_journal"] == 1


def test_show_lists_cancelled_losers_and_the_final_result(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "rules.yaml").write_text(
        'default: "ok"\nrules:\n  - match: "^Slow"\n    latency_ms: 5000\n    answer: "late"\n'
    )
    (project / "f.prose").write_text(
        'parallel ("first"):\n  a = session "Slow way"\n  b = session "Quick way"\n'
        'session "Wrap up"\n  context: b\n'
    )
    assert prose("run", "f.prose", "--provider", "scripted:rules.yaml") == 0
    run_id = next((project / ".prose" / "runs").iterdir()).name
    capsys.readouterr()
    assert prose("show", run_id) == 0
    text = capsys.readouterr().out
    assert "cancelled (1): 1|1" in text and "result: ok" in text
    assert prose("show", run_id, "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["cancelled"] == ["1|1"] and data["result"] == "ok"


# --- docs walkthrough defects -------------------------------------------------------------


def _one_run(project: Path) -> str:
    (project / "p.prose").write_text('session "hi"\n')
    assert prose("run", "p.prose", "--provider", "scripted:rules.yaml") == 0
    return max((project / ".prose" / "runs").iterdir()).name


def test_max_concurrency_in_vm_table_is_a_clear_usage_error(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "p.prose").write_text('session "hi"\n')
    (project / "prose.toml").write_text("[vm]\nmax_concurrency = 4\n")
    assert prose("run", "p.prose", "--provider", "scripted:rules.yaml") == 2
    err = capsys.readouterr().err
    assert "internal error" not in err and "Traceback" not in err
    assert "max_concurrency is not a [vm] setting" in err and len(err.splitlines()) == 1
    (project / "prose.toml").write_text("[vm]\nbogus = 1\n")
    assert prose("run", "p.prose", "--provider", "scripted:rules.yaml") == 2
    known = capsys.readouterr().err.split("known:")[1]
    assert "max_concurrency" not in known and "context_budget" in known
    (project / "prose.toml").write_text("max_concurrency = 4\n")  # the one place for it
    assert prose("run", "p.prose", "--provider", "scripted:rules.yaml") == 0


def test_show_cassette_to_a_folder_is_a_usage_error(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = _one_run(project)
    capsys.readouterr()
    (project / "some_dir").mkdir()
    assert prose("show", run_id, "--cassette", "some_dir") == 2
    err = capsys.readouterr().err
    assert err.startswith("prose: --cassette some_dir:") and len(err.splitlines()) == 1
    assert prose("show", run_id, "--cassette", "c.jsonl") == 0
    assert "wrote 1 exchange to c.jsonl" in capsys.readouterr().err


def test_record_refuses_a_file_that_is_not_a_cassette_and_appends_to_one(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = 'session "hi"\n'
    (project / "p.prose").write_text(program)
    run = ("run", "p.prose", "--provider", "scripted:rules.yaml", "-q")
    assert prose(*run, "--record", "p.prose") == 2  # the program itself, named by mistake
    err = capsys.readouterr().err
    assert err.startswith("prose: --record p.prose: it is not a cassette") and "new file" in err
    assert (project / "p.prose").read_text() == program  # untouched
    assert prose(*run, "--record", "tape.jsonl") == 0
    assert prose(*run, "--record", "tape.jsonl") == 0  # a cassette: appended to
    assert len((project / "tape.jsonl").read_text().splitlines()) == 2
    journal = next((project / ".prose" / "runs").glob("*/journal.jsonl"))
    before = journal.read_bytes()
    assert prose(*run, "--record", str(journal)) == 2
    assert "it is a run's journal (journal.jsonl)" in capsys.readouterr().err
    assert journal.read_bytes() == before


def test_cassette_problem_tells_cassettes_from_other_files(tmp_path: Path) -> None:
    from openprose.providers.replay import cassette_problem

    def problem(text: str) -> str | None:
        (tmp_path / "f").write_text(text)
        return cassette_problem(tmp_path / "f")

    assert cassette_problem(tmp_path / "missing.jsonl") is None
    assert problem("") is None and problem("\n\n") is None
    assert problem('{"key": "ab') is None  # our record, torn by a killed run
    assert problem('\n{"request": {}, "response": {}}\n') is None  # written by hand
    assert problem('{"ev": "run_started"}\n') is not None
    assert problem("session 'x'\n") is not None
    assert problem('{"request": {}}\n') is not None and problem("[1]\n") is not None


def test_record_to_a_folder_and_bad_inputs_files_are_usage_errors(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "p.prose").write_text('session "hi"\n')
    (project / "some_dir").mkdir()
    run = ("run", "p.prose", "--provider", "scripted:rules.yaml")
    assert prose(*run, "--record", "some_dir") == 2
    assert (
        capsys.readouterr().err == "prose: --record some_dir: is a folder; give a cassette file\n"
    )
    assert prose(*run, "--inputs", "missing.json") == 2
    assert capsys.readouterr().err == "prose: --inputs missing.json: no such file\n"
    (project / "bad.json").write_text('{"a": 1,\n  oops}\n')
    assert prose(*run, "--inputs", "bad.json") == 2
    err = capsys.readouterr().err
    assert err.startswith("prose: --inputs bad.json:2:3: invalid JSON") and "Errno" not in err


def test_a_damaged_run_json_is_reported_by_show_resume_and_runs(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = _one_run(project)
    capsys.readouterr()
    meta = project / ".prose" / "runs" / run_id / "run.json"
    meta.write_text("{bad")
    capsys.readouterr()
    for command in ("show", "resume"):
        assert prose(command, run_id) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"prose: {meta}: damaged, not valid JSON"), err
        assert len(err.splitlines()) == 1 and "internal error" not in err
    assert prose("runs", "--json") == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["run_id"], r["status"]) for r in rows] == [(run_id, "damaged")]


def test_a_torn_last_journal_line_is_still_tolerated(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = _one_run(project)
    capsys.readouterr()
    with (project / ".prose" / "runs" / run_id / "journal.jsonl").open("a") as journal:
        journal.write('{"ev": "session_fini')
    capsys.readouterr()
    assert prose("show", run_id, "--json") == 0
    assert len(json.loads(capsys.readouterr().out)["steps"]) == 1


def test_input_errors_in_json_have_the_check_diagnostic_shape(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "q.prose").write_text('input x: "thing"\nsession "hi {x}"\n')
    assert (
        prose("run", "q.prose", "--provider", "scripted:rules.yaml", "--json", "--input", "y=1")
        == 2
    )
    diagnostics = json.loads(capsys.readouterr().out)["diagnostics"]
    keys = {"path", "line", "column", "end_line", "end_column", "code", "severity", "message"}
    assert [set(d) for d in diagnostics] == [keys, keys]
    e026 = next(d for d in diagnostics if d["code"] == "E026")
    assert (e026["line"], e026["column"], e026["end_line"]) == (1, 1, 1)
    assert e026["end_column"] > e026["column"]


def test_ambiguous_run_prefix_lists_candidates_for_resume_and_show(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = project / ".prose" / "runs"
    first = _one_run(project)
    second = runs / (first[:-6] + ("000000" if first[-6:] != "000000" else "111111"))
    (runs / first).rename(second)
    _one_run(project)
    names = sorted(p.name for p in runs.iterdir())
    prefix = names[0][:4]
    capsys.readouterr()
    for command in ("resume", "show"):
        assert prose(command, prefix) == 2
        err = capsys.readouterr().err
        assert f"'{prefix}' is ambiguous, it matches {len(names)} runs" in err
        assert all(name in err for name in names) and len(err.splitlines()) == 1


def test_a_run_that_may_use_the_local_model_caps_the_context_budget(tmp_path: Path) -> None:
    from openprose.providers import ProviderSettings
    from openprose.providers.settings import LOCAL_CONTEXT_BUDGET
    from openprose.session.opening import local_budget, vm_config
    from openprose.vm.runner import VMConfig

    default = VMConfig().context_budget
    assert LOCAL_CONTEXT_BUDGET < default
    local = ProviderSettings(provider="local")
    judged_locally = ProviderSettings(provider="openai", aliases={"haiku": "local"})
    hosted = ProviderSettings(provider="openai")
    assert local_budget(local) == local_budget(judged_locally) == LOCAL_CONTEXT_BUDGET
    assert local_budget(hosted) is None
    capped = vm_config(tmp_path, 4, None, local_budget(judged_locally))
    assert capped.context_budget == LOCAL_CONTEXT_BUDGET
    assert vm_config(tmp_path, 4, None, local_budget(hosted)).context_budget == default
    # A budget the user wrote down wins: they may run a bigger local window themselves.
    (tmp_path / "prose.toml").write_text("[vm]\ncontext_budget = 50000\n")
    assert vm_config(tmp_path, 4, None, LOCAL_CONTEXT_BUDGET).context_budget == 50000


def test_a_run_collects_garbage_less_often_and_restores_the_collector() -> None:
    import gc

    from openprose.cli.run import YOUNG_COLLECTION_EVERY, lean_collector

    before = gc.get_threshold()
    with lean_collector():
        assert gc.get_threshold() == (YOUNG_COLLECTION_EVERY, *before[1:])
        assert gc.get_freeze_count() > 0  # start-up's objects are out of the collector's way
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


class _Terminal:
    """A stdin or stderr that says it is a terminal."""

    def __init__(self, text: str = "") -> None:
        import io

        self.buffer_text = io.StringIO(text)
        self.written: list[str] = []

    def isatty(self) -> bool:
        return True

    def readline(self) -> str:
        return self.buffer_text.readline()

    def write(self, text: str) -> int:
        self.written.append(text)
        return len(text)

    def flush(self) -> None:
        return None

    @property
    def encoding(self) -> str:
        return "utf-8"


def test_a_missing_input_is_asked_for_at_a_terminal(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # prose.md, Input Binding Semantics: "No value available: pause execution, prompt user
    # for input"; top-level inputs "if missing, prompt before execution begins".
    import sys

    (project / "p.prose").write_text(
        'input topic: "The subject"\ninput tone: "The style"\noutput o = session "On {topic} {tone}"\n'
    )
    stdin, stderr = _Terminal("quantum\n"), _Terminal()
    monkeypatch.setattr(sys, "stdin", stdin)
    monkeypatch.setattr(sys, "stderr", stderr)
    assert prose("run", "p.prose", "--input", "tone=dry", "--provider", "scripted:rules.yaml") == 0
    assert "input topic (The subject): " in stderr.written  # tone was given: not asked
    assert not any("input tone" in w for w in stderr.written)
    (run,) = (project / ".prose" / "runs").iterdir()
    assert json.loads((run / "run.json").read_text())["inputs"] == {
        "topic": "quantum",
        "tone": "dry",
    }
    # An empty answer leaves it missing: E026 as without a terminal.
    monkeypatch.setattr(sys, "stdin", _Terminal("\n"))
    assert prose("run", "p.prose", "--input", "tone=dry", "--provider", "scripted:rules.yaml") == 2
    assert "E026 missing required input 'topic'" in capsys.readouterr().out
    # A discretion prompt (prose.md, Input Prompt Formats) is asked and reported by its text.
    (project / "d.prose").write_text('input go: **Proceed with deployment?**\nsession "x {go}"\n')
    monkeypatch.setattr(sys, "stdin", _Terminal("\n"))
    assert prose("run", "d.prose", "--provider", "scripted:rules.yaml") == 2
    assert "E026 missing required input 'go' (Proceed with deployment?)" in capsys.readouterr().out
    assert any("input go (Proceed with deployment?): " in w for w in stderr.written)


def test_json_report_is_the_one_line_json_dumps_gave(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--json` is streamed now (json.dump): the same text, byte for byte, as one line."""
    from openprose.cli.run import report
    from openprose.vm.runner import RunResult

    outputs = {"results": [f'réponse {i} "q"\n✓' for i in range(2000)], "n": 1.5}
    result = RunResult("r1", tmp_path, "failed", outputs, {"calls": 2}, "boom", None)
    report(result, as_json=True)
    assert capsys.readouterr().out == json.dumps(result.to_json(), ensure_ascii=False) + "\n"

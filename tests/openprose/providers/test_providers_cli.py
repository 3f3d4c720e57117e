"""`prose run` through the real SDKs against the loopback fake, in a separate process.

What a user sees end to end: the provider picked from the environment, the retry policy
from prose.toml, transient failures retried, broken answers reported without a traceback,
API keys kept out of everything the run writes, and a finished run replayed from its
journal with no server at all.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from openprose.cli import main
from tests.support.fake_llm_server import (
    Fault,
    fetch_stats,
    reset_server,
    script_faults,
    start_in_subprocess,
)

SECRET = "sk-test-DO-NOT-LEAK-4242"
PROGRAM = 'let a = session "Name a colour"\noutput b = session "Describe it"\n  context: a\n'
# The fake echoes the last user message; the VM puts `a` under "## Context" in it.
ANSWER = {"b": "echo: Describe it\n\n## Context\n### a\necho: Name a colour"}
PROSE_TOML = "[retry]\nmax_attempts = 2\nbase_delay = 0.01\nmax_delay = 0.02\n"


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    base_url, stop = start_in_subprocess()
    try:
        yield base_url
    finally:
        stop()


@pytest.fixture(params=["anthropic", "openai"])
def project(
    request: pytest.FixtureRequest,
    server: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Path:
    """A project whose environment selects `api` on the fake server, with a secret key."""
    reset_server(server)
    for name in ("PROSE_PROVIDER", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    if request.param == "anthropic":
        monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server)
    else:
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        monkeypatch.setenv("OPENAI_BASE_URL", server + "/v1")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.prose").write_text(PROGRAM)
    (tmp_path / "prose.toml").write_text(PROSE_TOML)
    return tmp_path


def run_json(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, object], str]:
    code = main(["run", "p.prose", "--json", *args])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def test_run_retries_a_429_and_keeps_the_key_out_of_every_file(
    project: Path, server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    script_faults(server, Fault("429", retry_after=0.05))
    code, result, _ = run_json("--record", "tape.jsonl", capsys=capsys)
    assert code == 0, result
    assert result["outputs"] == ANSWER
    assert fetch_stats(server)["attempts"] == 3  # two sessions, one of them retried once
    assert result["usage"]["requests_sent"] == 2 and result["usage"]["requests_failed"] == 1
    written = [p for p in project.rglob("*") if p.is_file()]
    assert any(p.name == "journal.jsonl" for p in written) and (project / "tape.jsonl").exists()
    for path in written:
        assert SECRET not in path.read_text(errors="replace"), f"key leaked into {path}"


def test_retry_policy_comes_from_prose_toml_and_sdk_retries_stay_off(
    project: Path, server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    script_faults(server, *[Fault("500")] * 5)
    code, result, _ = run_json(capsys=capsys)
    assert code == 1 and result["status"] == "failed"
    assert "HTTP 500: internal error" in str(result["error"])
    assert "p.prose:1:" in str(result["error"])  # the failing statement's location
    assert fetch_stats(server)["attempts"] == 2  # max_attempts = 2, and nothing more
    assert result["usage"]["requests_failed"] == 2  # what the server got: no answer
    assert "(gave up after 2 attempts over " in str(result["error"])
    assert "[retry] max_attempts = 2 in prose.toml" in str(result["error"])


def test_a_rate_limit_that_outlasts_the_retries_names_what_to_change(
    project: Path, server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    script_faults(server, *[Fault("429", retry_after=0.01)] * 2)
    code = main(["run", "p.prose", "--max-concurrency", "3"])
    out, err = capsys.readouterr()
    assert code == 1 and fetch_stats(server)["attempts"] == 2
    assert "requests: 2 sent (2 failed)" in out  # what the server got, not "0 sent"
    assert "HTTP 429" in err and "gave up after 2 attempts" in err
    assert "lower --max-concurrency (now 3)" in err


def test_a_program_retry_sends_one_request_per_attempt(
    project: Path, server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # retry: 2 owns the session's retries: 3 requests in all, not 3 x max_attempts (2).
    (project / "p.prose").write_text('output b = session "Describe it"\n  retry: 2\n')
    script_faults(server, *[Fault("500")] * 6)
    code, result, _ = run_json(capsys=capsys)
    assert code == 1 and "HTTP 500: internal error" in str(result["error"])
    assert "(gave up after 3 attempts, the session's `retry: 2`)" in str(result["error"])
    assert fetch_stats(server)["attempts"] == 3 == result["usage"]["requests_failed"]


@pytest.mark.parametrize(
    ("fault", "message"),
    [("bad_usage", "malformed response: usage.")],
)
def test_a_broken_answer_fails_the_run_cleanly(
    project: Path, server: str, capsys: pytest.CaptureFixture[str], fault: str, message: str
) -> None:
    script_faults(server, Fault(fault))
    code = main(["run", "p.prose"])
    out, err = capsys.readouterr()
    assert code == 1
    assert message in err and "p.prose:1:" in err
    assert "Traceback" not in out + err
    assert fetch_stats(server)["attempts"] == 1  # not retried: the same answer would come


def test_a_refused_key_stops_the_run_with_exit_2_naming_the_variable(
    project: Path, server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    script_faults(server, Fault("401"))
    code = main(["run", "p.prose"])
    err = capsys.readouterr().err
    assert code == 2
    assert "HTTP 401" in err and ("ANTHROPIC_API_KEY" in err or "OPENAI_API_KEY" in err)
    assert SECRET not in err and "Traceback" not in err


def test_a_finished_run_replays_from_its_journal_without_the_server(
    project: Path, server: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, first, _ = run_json(capsys=capsys)
    assert code == 0
    run_id = str(first["run_id"])
    for name in ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")  # nothing listens: replay must not call
    attempts = fetch_stats(server)["attempts"]
    for source in (
        None,  # a unique prefix, taken when used: each replay run adds a run folder
        run_id,
        f".prose/runs/{run_id}",
        f".prose/runs/{run_id}/journal.jsonl",
        None,
    ):
        source = source or unique_prefix(project, run_id)
        code, again, _ = run_json("--provider", f"replay:{source}", capsys=capsys)
        assert code == 0, again
        assert again["outputs"] == first["outputs"] == ANSWER
    assert fetch_stats(server)["attempts"] == attempts


def unique_prefix(project: Path, run_id: str) -> str:
    """The shortest prefix of `run_id` (past the date) that no other run folder starts with:
    a run id prefix names one run only if no other run shares it, and runs started in the
    same second share 16 characters and, one time in 16, the 17th."""
    others = [p.name for p in (project / ".prose" / "runs").iterdir() if p.name != run_id]
    for size in range(9, len(run_id)):
        if not any(other.startswith(run_id[:size]) for other in others):
            return run_id[:size]
    return run_id


def test_a_replay_run_resumes_from_the_journal_it_replayed(
    project: Path, server: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, first, _ = run_json(capsys=capsys)
    assert code == 0
    source = str(first["run_id"])
    for name in ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")  # nothing listens: replay must not call
    code, replayed, _ = run_json("--provider", f"replay:{source[:9]}", capsys=capsys)
    assert code == 0, replayed
    run_id = str(replayed["run_id"])
    # recorded as the journal the prefix named, not as the prefix (which now names both runs)
    meta = json.loads((project / ".prose" / "runs" / run_id / "run.json").read_text())
    journal = (project / ".prose" / "runs" / source / "journal.jsonl").resolve()
    assert meta["launch"]["provider"] == f"replay:{journal}"
    shared = os.path.commonprefix([source, run_id])
    assert shared  # the same century at least
    run_json_path = project / ".prose" / "runs" / run_id / "run.json"
    for extra in ([], ["--provider", f"replay:{shared}"]):  # the resumed run is no candidate
        # as if it had failed: a succeeded run has nothing to resume
        run_json_path.write_text(
            json.dumps({**json.loads(run_json_path.read_text()), "status": "failed"})
        )
        code = main(["resume", run_id, "--json", *extra])
        resumed = json.loads(capsys.readouterr().out)
        assert code == 0, resumed
        assert resumed["outputs"] == ANSWER
    # a new run finds the prefix ambiguous, and says which runs it matches
    code, refused, err = run_json("--provider", f"replay:{shared}", capsys=capsys)
    assert code == 2 and refused["status"] == "not_run"
    assert f"replay: '{shared}' is ambiguous, it matches 2 runs: " in err
    assert source in err and run_id in err
    assert fetch_stats(server)["attempts"] == 2  # the first run's two sessions, no more


def test_max_concurrency_limits_each_provider_separately(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--max-concurrency 2` with sonnet on anthropic and haiku on openai: two requests in
    flight per provider (four in all), not two shared by both."""
    base_url, stop = start_in_subprocess(latency_ms=150)
    try:
        for name in ("PROSE_PROVIDER", "OPENAI_API_KEY"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", base_url)
        monkeypatch.setenv("OPENAI_BASE_URL", base_url + "/v1")
        monkeypatch.chdir(tmp_path)
        branches = [f'  session "S{i}"\n    model: sonnet\n' for i in range(6)]
        branches += [f'  session "H{i}"\n    model: haiku\n' for i in range(6)]
        (tmp_path / "p.prose").write_text("parallel:\n" + "".join(branches))
        code = main(
            ["run", "p.prose", "--json", "--max-concurrency", "2", "--model", "haiku=openai:h"]
        )
        result = json.loads(capsys.readouterr().out)
        stats = fetch_stats(base_url)
    finally:
        stop()
    assert code == 0, result
    assert stats["attempts"] == 12
    assert (stats["max_in_flight_anthropic"], stats["max_in_flight_openai"]) == (2, 2)
    assert stats["max_in_flight"] == 4


def test_on_a_terminal_the_live_view_gets_each_answer_as_it_streams(
    project: Path, server: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`prose run` on a terminal streams: the live view sees every answer in pieces that add
    up to the answer the journal records whole."""
    import io
    import sys

    from openprose.vm import progress

    seen: dict[str, list[str]] = {}

    class RecordingView(progress.LiveView):
        def answer_text(self, step: str, text: str) -> None:
            seen.setdefault(step, []).append(text)
            super().answer_text(step, text)

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(progress, "LiveView", RecordingView)
    monkeypatch.setattr(sys, "stderr", Terminal())
    monkeypatch.setenv("TERM", "xterm")
    assert main(["run", "p.prose"]) == 0
    out = capsys.readouterr().out
    assert "output b: echo: Describe it" in out
    assert len(seen) == 2 and all(len(pieces) > 1 for pieces in seen.values())
    run_dir = next((project / ".prose" / "runs").iterdir())
    events = [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines()]
    answers = {e["step"]: e["response"]["text"] for e in events if e["ev"] == "session_finished"}
    assert {step: "".join(pieces) for step, pieces in seen.items()} == answers


def test_a_hosted_run_imports_only_what_it_uses(project: Path) -> None:
    """`prose run --json` on a hosted provider loads no SDK, no Rich (no live view), no YAML
    (no scripted rules), no pydantic and no aiohttp (the providers speak HTTP/1.1 themselves):
    start-up is the interpreter and prose."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from openprose.cli import main\n"
        "status = main(['run', 'p.prose', '--json'])\n"
        "unused = ('openai', 'anthropic', 'httpx', 'pydantic', 'rich', 'yaml', 'llama_cpp',"
        " 'aiohttp')\n"
        "print(status, sorted(m for m in unused if m in sys.modules), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=project, capture_output=True, text=True, check=True
    )
    assert done.stderr.strip().splitlines()[-1] == "0 []", done.stderr
    assert json.loads(done.stdout)["outputs"] == ANSWER

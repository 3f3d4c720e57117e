"""`prose run` through the real SDKs against the loopback fake, in a separate process.

What a user sees end to end: the provider picked from the environment, the retry policy
from prose.toml, transient failures retried, broken answers reported without a traceback,
API keys kept out of everything the run writes, and a finished run replayed from its
journal with no server at all.
"""

from __future__ import annotations

import json
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


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ("html", "malformed response: the server sent a non-JSON body"),
        ("malformed", "malformed response: the body is not valid JSON"),
        ("bad_usage", "malformed response: usage."),
    ],
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
    # the prefix first: each replay run adds a run folder that could share a longer prefix
    for source in (
        run_id[:17],
        run_id,
        f".prose/runs/{run_id}",
        f".prose/runs/{run_id}/journal.jsonl",
    ):
        code, again, _ = run_json("--provider", f"replay:{source}", capsys=capsys)
        assert code == 0, again
        assert again["outputs"] == first["outputs"] == ANSWER
    assert fetch_stats(server)["attempts"] == attempts

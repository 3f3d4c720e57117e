"""`prose run` / `prose resume` budgets and prices from the command line and prose.toml."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from openprose.cli import main

FOREVER = 'loop:\n  session "Work"\n'


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PROSE_PROVIDER", raising=False)
    (tmp_path / "rules.yaml").write_text('default: "ok"\n')
    (tmp_path / "forever.prose").write_text(FOREVER)
    return tmp_path


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, object], str]:
    code = main([*args, "--provider", "scripted:rules.yaml", "--json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err


def test_max_sessions_stops_the_run_and_resume_goes_on_with_more(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, result, _ = _run(capsys, "run", "forever.prose", "--max-sessions", "3", "--yes")
    assert code == 3 and result["status"] == "stopped"
    assert str(result["error"]).startswith("stopped: budget")
    run_id = str(result["run_id"])
    code, again, _ = _run(capsys, "resume", run_id, "--max-sessions", "5")
    assert code == 3 and again["usage"]["requests_sent"] == 2  # type: ignore[index]
    assert again["usage"]["requests_served_from_journal"] == 3  # type: ignore[index]


def test_vm_table_keys_set_budgets_and_flags_win(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "prose.toml").write_text("[vm]\nmax_sessions = 2\nmax_run_tokens = 100000\n")
    code, result, _ = _run(capsys, "run", "forever.prose")
    assert code == 3 and result["usage"]["requests_sent"] == 2  # type: ignore[index]
    code, result, _ = _run(capsys, "run", "forever.prose", "--max-sessions", "4", "--yes")
    assert code == 3 and result["usage"]["requests_sent"] == 4  # type: ignore[index]
    code, result, _ = _run(
        capsys, "run", "forever.prose", "--max-sessions", "none", "--max-tokens", "60"
    )
    assert code == 3 and "--max-tokens" in str(result["error"])


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("max_sessions = 0", "[vm] max_sessions must be positive"),
        ("max_sessions = 2.5", "[vm] max_sessions must be an integer"),
        ('max_cost = "lots"', "[vm] max_cost must be a number"),
    ],
)
def test_bad_budget_settings_are_usage_errors(
    project: Path, capsys: pytest.CaptureFixture[str], table: str, message: str
) -> None:
    (project / "prose.toml").write_text(f"[vm]\n{table}\n")
    code, _, err = _run(capsys, "run", "forever.prose")
    assert code == 2 and message in err


def test_max_cost_without_a_price_is_refused_before_anything_runs(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, result, err = _run(capsys, "run", "forever.prose", "--max-cost", "1")
    assert code == 2 and result["status"] == "not_run"
    assert "--max-cost cannot be kept: no price for scripted:sonnet" in err
    assert "haiku" not in err  # nothing is judged: the evaluator is not needed
    assert '[prices."sonnet"]' in err
    assert not (project / ".prose" / "runs").exists()


def test_max_cost_with_a_price_from_prose_toml(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "prose.toml").write_text('[prices."sonnet"]\ninput = 100000.0\noutput = 100000.0\n')
    code, result, _ = _run(capsys, "run", "forever.prose", "--max-cost", "5", "--yes")
    assert code == 3 and "--max-cost" in str(result["error"])
    assert result["usage"]["cost_usd"] >= 5  # type: ignore[index,operator]


def test_a_bad_prices_table_is_a_usage_error(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "prose.toml").write_text('[prices."sonnet"]\ninput = 1\n')
    code, _, err = _run(capsys, "run", "forever.prose")
    assert code == 2 and "`output` (USD per million tokens) is missing" in err


def test_the_summary_says_when_a_price_is_unknown(
    fake_server: str,
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_server + "/v1")
    (project / "once.prose").write_text('session "Work"\n')
    unpriced = ["run", "once.prose", "--provider", "openai", "--model", "sonnet=openai:my-own"]
    code = main(unpriced)
    out = capsys.readouterr().out
    assert code == 0 and "cost: unknown — no price for my-own" in out
    assert "$0.0000" not in out and "priced calls" not in out  # no call had a price
    (project / "prose.toml").write_text('[prices."my-own"]\ninput = 1.0\noutput = 1.0\n')
    main(unpriced)
    out = capsys.readouterr().out
    assert "cost: under $0.0001" in out and "unknown" not in out
    (project / "prose.toml").write_text('[prices."my-own"]\ninput = 0\noutput = 0\n')
    main(unpriced)
    out = capsys.readouterr().out
    assert "cost: free (priced at $0: my-own)" in out and "$0.0000" not in out


def test_scripted_and_replay_runs_show_no_cost(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "once.prose").write_text('session "Work"\n')
    assert main(["run", "once.prose", "--provider", "scripted:rules.yaml"]) == 0
    out = capsys.readouterr().out
    assert "answered by the scripted rules" in out and "cost" not in out


DEFAULTS = """let a = session "Name a colour"
let b = session "Describe it"
  model: opus
session "Thank you"
  model: haiku
"""


@pytest.fixture(scope="module")
def fake_server() -> Iterator[str]:
    from tests.support.fake_llm_server import start_in_subprocess

    base_url, stop = start_in_subprocess()
    try:
        yield base_url
    finally:
        stop()


@pytest.mark.parametrize("api", ["anthropic", "openai"])
def test_a_run_on_the_default_models_is_priced(
    api: str,
    fake_server: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The fake server answers with the model it was asked for: the default aliases' ids.
    for name in ("PROSE_PROVIDER", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    if api == "anthropic":
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_server)
    else:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", fake_server + "/v1")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.prose").write_text(DEFAULTS)
    code = main(["run", "p.prose", "--json", "--max-cost", "5"])
    result = json.loads(capsys.readouterr().out)
    assert code == 0, result
    usage = result["usage"]
    assert len(usage["by_model"]) == 3  # the ids behind sonnet, opus and haiku
    assert usage["unpriced_models"] == {} and usage["cost_usd"] > 0

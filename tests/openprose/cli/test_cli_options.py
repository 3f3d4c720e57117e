"""Option values a user mistypes: refused or warned about before anything runs, with the fix,
never an internal error (session 13, first hour)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openprose.cli import main


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in ("PROSE_PROVIDER", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    # "nothing configured" must not depend on whether the [local] extra is installed here
    monkeypatch.setattr("openprose.providers.settings.local_model_installed", lambda: False)
    (tmp_path / "p.prose").write_text('session "x"\n')
    (tmp_path / "rules.yaml").write_text('default: "ok"\n')
    return tmp_path


def prose(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err, err
    return code, out, err


@pytest.mark.parametrize("value", ["nan", "inf", "1e400", "0", "-2"])
def test_a_budget_that_is_not_a_positive_number_is_a_usage_error(
    value: str, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = prose(
        capsys, "run", "p.prose", "--provider", "scripted:rules.yaml", "--max-cost", value
    )
    assert code == 2
    assert f"argument --max-cost: must be a positive number (or none), got '{value}'" in err
    assert not (project / ".prose").exists()


def test_a_mistyped_provider_names_the_likely_one(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = prose(capsys, "run", "p.prose", "--provider", "anthropc")
    assert code == 2
    assert "unknown provider 'anthropc' (from --provider) (did you mean `anthropic`?)" in err
    code, _, err = prose(capsys, "config", "--provider", "opnai")
    assert code == 2 and "(did you mean `openai`?)" in err


@pytest.mark.parametrize(
    ("alias", "warned"),
    [("sonet", True), ("fast", False)],  # an alias of its own is no typo
)
def test_a_mistyped_model_alias_is_warned_about_and_the_run_goes_on(
    alias: str, warned: bool, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = f"{alias}=openai:x"
    code, _, err = prose(
        capsys, "run", "p.prose", "--provider", "scripted:rules.yaml", "--model", model
    )
    assert code == 0
    warning = (
        f"prose: warning: --model {alias}=...: no model alias `{alias}` (did you mean `sonnet`?)"
    )
    assert (warning in err) is warned, err


def test_a_base_url_python_cannot_parse_is_a_configuration_error(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-options")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://[::1/v1")
    code, out, err = prose(capsys, "run", "p.prose", "--json")
    assert code == 2
    assert (
        "the base URL must be an http:// or https:// URL with a host, got 'http://[::1/v1'" in err
    )
    assert json.loads(out)["status"] == "not_run"


def test_config_of_a_program_that_is_not_a_file_is_a_usage_error(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "folder").mkdir()
    assert prose(capsys, "config", "missing.prose")[0:3:2] == (
        2,
        "prose: missing.prose: no such file\n",
    )
    assert prose(capsys, "config", "folder")[0:3:2] == (
        2,
        "prose: folder: is a folder, not a file\n",
    )
    # nothing configured is 2 as well (README, "Exit status"), with the ways to configure one
    code, out, err = prose(capsys, "config", "p.prose")
    assert code == 2 and "provider:  none" in out and "Configure one of" in err


def test_config_shows_where_requests_go_and_whether_a_key_is_set(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first thing to check after `export OPENAI_BASE_URL=...`; the key is never shown."""
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")
    code, out, _ = prose(capsys, "config")
    assert code == 0
    assert "base_url:  http://127.0.0.1:11434/v1  (API key not set)" in out
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value-123")
    code, out, _ = prose(capsys, "config", "--json")
    shown = json.loads(out)
    assert (shown["base_url"], shown["api_key"]) == ("http://127.0.0.1:11434/v1", "set")
    assert "sk-secret" not in out


def test_help_takes_a_command_as_git_and_cargo_do(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = prose(capsys, "help", "run")
    assert code == 0 and out.startswith("usage: prose run ")
    code, out, _ = prose(capsys, "help")
    assert code == 0 and "commands:" in out
    code, _, err = prose(capsys, "help", "rn")
    assert code == 2 and "unknown command 'rn' (did you mean 'run'?)" in err

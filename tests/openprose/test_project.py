"""Settings are found as ruff finds its own: the nearest prose.toml, or pyproject.toml with a
[tool.prose] table, walking up from the program's folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openprose.cli import main
from openprose.project import find_project


def test_nearest_settings_file_walking_up(tmp_path: Path) -> None:
    (tmp_path / "prose.toml").write_text('provider = "local"\n')
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "pyproject.toml").write_text("[project]\nname = 'x'\n")  # no [tool.prose]
    found = find_project(tmp_path / "a" / "b", cwd=tmp_path / "a")
    assert found.root == tmp_path and found.settings_file == tmp_path / "prose.toml"
    (tmp_path / "a" / "pyproject.toml").write_text("[tool.prose]\nprovider = 'openai'\n")
    found = find_project(tmp_path / "a" / "b", cwd=tmp_path)
    assert found.settings_file == tmp_path / "a" / "pyproject.toml"
    assert "[tool.prose] in" in found.explain()


def test_without_settings_the_working_directory_is_the_project(tmp_path: Path) -> None:
    (tmp_path / "prog").mkdir()
    found = find_project(tmp_path / "prog", cwd=tmp_path)
    assert found.root == tmp_path.resolve() and found.settings_file is None
    assert "no prose.toml" in found.explain()


def test_run_from_a_subfolder_uses_the_project_settings_and_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("PROSE_PROVIDER", raising=False)
    (tmp_path / "prose.toml").write_text('provider = "scripted:rules.yaml"\n')
    (tmp_path / "rules.yaml").write_text('default: "ok"\n')
    (tmp_path / "u.prose").write_text('session "Hello"\n')
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    assert main(["run", "../u.prose", "--json"]) == 0
    run_id = json.loads(capsys.readouterr().out)["run_id"]
    assert (tmp_path / ".prose" / "runs" / run_id / "run.json").exists()
    assert not (tmp_path / "sub" / ".prose").exists()
    assert main(["runs", "--json"]) == 0  # found from the subfolder too
    assert [r["run_id"] for r in json.loads(capsys.readouterr().out)] == [run_id]


def test_unconfigured_run_says_where_it_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("PROSE_PROVIDER", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("openprose.providers.settings.local_model_installed", lambda: False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "u.prose").write_text('session "Hello"\n')
    assert main(["run", "u.prose"]) == 2
    err = capsys.readouterr().err
    assert "No model provider is configured" in err
    assert f"no prose.toml or pyproject.toml with [tool.prose] in {tmp_path.resolve()}" in err


def test_prose_config_shows_file_provider_and_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("PROSE_PROVIDER", raising=False)
    (tmp_path / "prose.toml").write_text(
        'provider = "openai"\n[providers.openai]\nbase_url = "http://127.0.0.1:9/v1"\n'
        '[providers.openai.models]\nopus = "gpt-4.1"\n'
    )
    (tmp_path / "deep").mkdir()
    monkeypatch.chdir(tmp_path / "deep")
    assert main(["config", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["settings_file"] == str(tmp_path / "prose.toml")
    assert shown["provider"] == "openai" and shown["provider_source"].endswith("prose.toml")
    assert shown["models"]["opus"] == "openai:gpt-4.1"
    assert main(["config"]) == 0
    out = capsys.readouterr().out
    assert "provider:  openai" in out and "the nearest found walking up from" in out

"""`prose config`: its exit status when no provider would be used."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openprose.cli import main

KEYS = ("PROSE_PROVIDER", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL")


@pytest.fixture
def unconfigured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("openprose.providers.settings.local_model_installed", lambda: False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_no_provider_found_is_exit_2_as_prose_run(
    unconfigured: Path, capsys: pytest.CaptureFixture[str], json_flag: list[str]
) -> None:
    assert main(["config", *json_flag]) == 2
    captured = capsys.readouterr()
    if json_flag:
        shown = json.loads(captured.out)
        assert shown["provider"] is None
        assert "No model provider is configured" in shown["provider_error"]
    else:
        assert "provider:  none" in captured.out
        assert captured.err.startswith("prose: No model provider is configured")
    (unconfigured / "u.prose").write_text('session "Hello"\n')
    assert main(["run", "u.prose"]) == 2  # the same status the run itself gives


def test_a_configured_provider_is_exit_0(
    unconfigured: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert main(["config"]) == 0
    assert "provider:  openai" in capsys.readouterr().out

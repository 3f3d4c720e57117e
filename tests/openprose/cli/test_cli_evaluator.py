"""`--evaluator` is checked before a run starts: an alias of the run or PROVIDER:MODEL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openprose.cli import main

RULES = 'default: "ok"\nrules:\n  - match: "^Condition"\n    answer: \'{"verdict": true}\'\n'


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in ("PROSE_PROVIDER", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "rules.yaml").write_text(RULES)
    (tmp_path / "p.prose").write_text('session "Hello"\nif **it went well**:\n  session "Good"\n')
    return tmp_path


def test_an_unknown_evaluator_is_a_usage_error_before_any_session(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "p.prose", "--provider", "scripted:rules.yaml", "--evaluator", "gpt4"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "prose: --evaluator 'gpt4' is not a model alias of this run (aliases: haiku, opus, sonnet)"
    )
    assert "--evaluator openai:gpt4" in err and "--model judge=openai:gpt4 --evaluator judge" in err
    assert not (project / ".prose" / "runs").exists()  # nothing started, nothing paid


def test_a_near_miss_gets_did_you_mean(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["run", "p.prose", "--provider", "scripted:rules.yaml", "--evaluator", "haiko"]) == 2
    )
    assert "(did you mean 'haiku'? aliases: haiku, opus, sonnet)" in capsys.readouterr().err


@pytest.mark.parametrize(
    "evaluator",
    [
        ["--evaluator", "sonnet"],
        ["--evaluator", "openai:gpt-4.1-nano"],
        ["--model", "judge=openai:x", "--evaluator", "judge"],
    ],
)
def test_aliases_and_provider_models_are_accepted(
    project: Path, capsys: pytest.CaptureFixture[str], evaluator: list[str]
) -> None:
    assert main(["run", "p.prose", "--provider", "scripted:rules.yaml", "--json", *evaluator]) == 0
    run_json = next((project / ".prose" / "runs").glob("*/run.json"))
    assert json.loads(run_json.read_text())["config"]["evaluator_model"] == evaluator[-1]


def test_resume_checks_it_too(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "failing.yaml").write_text(
        'default: "ok"\nrules:\n  - match: "^Hello"\n    answer: "x"\n'
        "    failures: [error, error, error, error, error, error]\n"
    )
    assert main(["run", "p.prose", "--provider", "scripted:failing.yaml", "--json"]) == 1
    run_id = json.loads(capsys.readouterr().out)["run_id"]
    assert main(["resume", run_id, "--evaluator", "gpt4"]) == 2
    assert "prose: --evaluator 'gpt4' is not a model alias" in capsys.readouterr().err

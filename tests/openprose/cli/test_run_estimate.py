"""`prose run --estimate`, `prose check --estimate`, and the refusal of a run whose upper
bound is over `--max-sessions` / `--max-cost` (unless `--yes`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openprose.cli import main

THREE = 'session "a"\nsession "b"\nsession "c"\n'
UNTIL = 'loop until **the work is finished**:\n  session "Work"\n'
OVER_ITEMS = 'input items: "things"\nfor x in items:\n  session "Study {x}"\n'


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PROSE_PROVIDER", raising=False)
    (tmp_path / "rules.yaml").write_text('default: "ok"\n')
    (tmp_path / "three.prose").write_text(THREE)
    (tmp_path / "until.prose").write_text(UNTIL)
    (tmp_path / "items.prose").write_text(OVER_ITEMS)
    return tmp_path


def runs(project: Path) -> list[Path]:
    folder = project / ".prose" / "runs"
    return list(folder.iterdir()) if folder.is_dir() else []


def test_run_estimate_prints_a_table_and_runs_nothing(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "three.prose", "--estimate"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("estimate for three.prose")
    total = next(line for line in out.splitlines() if line.startswith("total"))
    assert total.split()[1:3] == ["3", "3"]  # sessions, requests: exactly three
    assert runs(project) == []


def test_run_estimate_json_says_why_a_bound_is_missing(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "until.prose", "--estimate", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["sessions"] == {"low": 1, "high": None}
    assert shown["unbounded"] == ["until.prose:1: `loop until` without `max:`"]
    assert [m["alias"] for m in shown["models"]] == ["haiku", "sonnet"]  # evaluator, default


def test_the_inputs_given_bound_a_for_loop(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "in.json").write_text('{"items": ["a", "b", "c", "d"]}')
    assert main(["run", "items.prose", "--estimate", "--json", "--inputs", "in.json"]) == 0
    assert json.loads(capsys.readouterr().out)["sessions"] == {"low": 4, "high": 4}


def test_a_run_over_max_sessions_by_its_estimate_is_refused_before_any_call(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "three.prose", "--provider", "scripted:rules.yaml", "--max-sessions", "2"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip().splitlines() == [
        (
            "prose: refused before any call: the run may make up to 3 model calls, over "
            "--max-sessions 2; pass --yes to run anyway"
        )
    ]
    assert runs(project) == []


def test_yes_runs_it_anyway_and_the_budget_stops_it(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["run", "three.prose", "--provider", "scripted:rules.yaml", "--json"]
    assert main([*args, "--max-sessions", "2", "--yes"]) == 3  # stopped at the budget
    assert json.loads(capsys.readouterr().out)["usage"]["requests_sent"] == 2


def test_a_run_within_its_budget_runs(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["run", "three.prose", "--provider", "scripted:rules.yaml", "--json"]
    assert main([*args, "--max-sessions", "3"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "succeeded"


def test_an_unbounded_run_is_refused_naming_the_loop(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "until.prose", "--provider", "scripted:rules.yaml", "--max-sessions", "50"])
    err = capsys.readouterr().err
    assert code == 2
    assert "unbounded model calls (until.prose:1: `loop until` without `max:`)" in err
    assert "--max-sessions 50" in err and "--yes" in err


def test_a_run_over_max_cost_by_its_estimate_is_refused(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a dollar per token: three answers of up to 1024 tokens may cost thousands
    (project / "prose.toml").write_text('[prices."sonnet"]\ninput = 1e6\noutput = 1e6\n')
    code = main(["run", "three.prose", "--provider", "scripted:rules.yaml", "--max-cost", "5"])
    err = capsys.readouterr().err
    assert code == 2 and "may cost up to $" in err and "over --max-cost 5" in err
    assert runs(project) == []


def test_check_estimate_prints_each_program_without_errors(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "broken.prose").write_text("session\n")
    assert main(["check", "--estimate", "three.prose", "broken.prose"]) == 1
    out = capsys.readouterr().out
    assert "estimate for three.prose" in out and "estimate for broken.prose" not in out


def test_check_estimate_json_is_an_object_of_diagnostics_and_estimates(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "--estimate", "--format", "json", "until.prose"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["diagnostics"] == []
    assert shown["estimates"][0]["unbounded"] == ["until.prose:1: `loop until` without `max:`"]


def test_check_json_without_estimate_stays_an_array(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "--format", "json", "three.prose"]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_run_estimate_without_the_inputs_says_what_they_leave_open(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "items.prose", "--estimate"]) == 0
    out = capsys.readouterr().out
    assert "unbounded: items.prose:2: `for` over input `items`, not given" in out


def test_an_estimate_reads_imports_and_writes_nothing(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "helper.prose").write_text('session "one"\nsession "two"\n')
    (project / "main.prose").write_text('use "./helper.prose"\nlet r = helper()\n')
    assert main(["check", "--estimate", "--format", "json", "main.prose"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["estimates"][0]["sessions"] == {"low": 2, "high": 2}
    assert not (project / ".prose").exists()

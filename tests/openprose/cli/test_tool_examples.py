"""The shipped tool examples run end to end through `prose run` on their scripted answers:
the reviewer really reads the project and writes its report; the skill example loads the
skill shipped in examples/skills/."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from openprose.cli import main

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PROSE_PROVIDER", raising=False)
    return tmp_path


def _run(program: str, rules: str, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    code = main(["run", program, "--provider", f"scripted:{rules}", "--json"])
    out = capsys.readouterr().out
    result = json.loads(out)
    assert code == 0, result
    return result


def test_review_example_reads_code_and_writes_report(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text(
        "def average(values):\n    return sum(values) / len(values)\n"
    )
    (project / "secret.env").write_text("KEY=1\n")
    result = _run(
        "examples/review-with-tools.prose", "examples/scripted/review-with-tools.yaml", capsys
    )
    report = (project / "output" / "code-review.md").read_text()
    assert "ZeroDivisionError" in report
    journal = [
        json.loads(line)
        for line in (project / ".prose" / "runs" / str(result["run_id"]) / "journal.jsonl")
        .read_text()
        .splitlines()
    ]
    results = [e["content"] for e in journal if e["ev"] == "tool_result"]
    assert results[0] == "src/app.py"  # listing shows only readable files
    assert "return sum(values) / len(values)" in results[1]  # it really read the file
    code = main(["show", str(result["run_id"])])
    shown = capsys.readouterr().out
    assert code == 0
    assert "tool calls (3)" in shown and "write_file" in shown and "allowed" in shown


def test_skill_example_loads_the_shipped_skill(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "CHANGELOG.md").write_text("## 0.2.0\n- tools for agents\n")
    result = _run("examples/release-notes.prose", "examples/scripted/release-notes.yaml", capsys)
    notes = (project / "output" / "release-notes.md").read_text()
    assert notes.startswith("# Release 0.2.0")
    run_dir = project / ".prose" / "runs" / str(result["run_id"])
    events = [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines()]
    first = next(e for e in events if e["ev"] == "session_finished")
    assert "release-notes: Turn a changelog into short release notes" in first["request"]["system"]
    skill = next(e for e in events if e["ev"] == "tool_result")
    assert "# Writing release notes" in skill["content"] and "template.md" in skill["content"]
    reads = [e for e in events if e["ev"] == "tool_result"][1:3]
    assert "tools for agents" in reads[0]["content"]
    assert "Release {version}" in reads[1]["content"]

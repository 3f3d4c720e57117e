"""`--permission-mode plan`: read-only whatever the agents' permissions — every write,
command and network call refused, told to the model and journaled."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import openprose
from openprose.cli import main
from openprose.providers.base import ToolCall
from openprose.vm.tools import Permissions, Toolbox

ALL = {"read": "allow", "write": "allow", "bash": "allow", "network": "allow"}


@pytest.mark.parametrize(
    ("tool", "arguments", "kind"),
    [
        ("write_file", {"path": "n.md", "content": "x"}, "write"),
        ("edit_file", {"path": "a.txt", "old_text": "a", "new_text": "b"}, "write"),
        ("run_command", {"command": "echo x > n.md"}, "bash"),
        ("fetch_url", {"url": "http://127.0.0.1:9/"}, "network"),
    ],
)
async def test_plan_mode_refuses_every_change(
    tmp_path: Path, tool: str, arguments: dict[str, Any], kind: str
) -> None:
    (tmp_path / "a.txt").write_text("a")
    decisions: list[dict[str, Any]] = []
    box = Toolbox(tmp_path, Permissions.from_mapping(ALL), plan=True, on_decision=decisions.append)
    assert tool in {spec.name for spec in box.specs}  # offered: the model learns it is refused
    outcome = await box.call(ToolCall("c", tool, arguments))
    assert outcome.is_error and "plan mode" in outcome.content
    assert [(d["kind"], d["decision"]) for d in decisions] == [(kind, "refused")]
    assert (tmp_path / "a.txt").read_text() == "a" and not (tmp_path / "n.md").exists()


async def test_plan_mode_refuses_execute_patterns_too(tmp_path: Path) -> None:
    (tmp_path / "s.sh").write_text("#!/bin/sh\ntouch ran\n")
    (tmp_path / "s.sh").chmod(0o755)
    box = Toolbox(tmp_path, Permissions.from_mapping({"execute": ["*.sh"]}), plan=True)
    outcome = await box.call(ToolCall("c", "run_command", {"command": "s.sh"}))
    assert outcome.is_error and "plan mode" in outcome.content
    assert not (tmp_path / "ran").exists()


async def test_plan_mode_still_reads(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello")
    box = Toolbox(tmp_path, Permissions.from_mapping(ALL), plan=True)
    read = await box.call(ToolCall("c", "read_file", {"path": "a.txt"}))
    assert read.content == "hello"
    listed = await box.call(ToolCall("c", "list_files", {}))
    assert listed.content == "a.txt"


PROGRAM = """\
agent writer:
  prompt: "You write notes"
  permissions:
    read: allow
    write: {write}
    bash: allow

session: writer
  prompt: "Write a note"
"""
RULES = {
    "rules": [
        {
            "match": "Write a note",
            "turns": [
                {
                    "tool_calls": [
                        {"name": "write_file", "arguments": {"path": "a.md", "content": "A"}},
                        {"name": "run_command", "arguments": {"command": "touch b.md"}},
                    ]
                },
                {"text": "done"},
            ],
        }
    ]
}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PROSE_PROVIDER", raising=False)
    (tmp_path / "rules.json").write_text(json.dumps(RULES))
    return tmp_path


def _refusals(run_id: str, capsys: pytest.CaptureFixture[str]) -> list[tuple[str, str]]:
    assert main(["show", run_id, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    return [(p["kind"], p["reason"]) for p in shown["permissions"] if p["decision"] == "refused"]


def test_prose_run_in_plan_mode_changes_nothing(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "main.prose").write_text(PROGRAM.format(write="allow"))
    argv = ["run", "main.prose", "--provider", "scripted:rules.json", "--json"]
    assert main([*argv, "--permission-mode", "plan"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["status"] == "succeeded"
    assert not (project / "a.md").exists() and not (project / "b.md").exists()
    refused = _refusals(str(result["run_id"]), capsys)
    assert [kind for kind, _ in refused] == ["write", "bash"]
    assert all("plan" in reason for _, reason in refused)


def test_prose_resume_in_plan_mode_changes_nothing(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "main.prose").write_text(PROGRAM.format(write="prompt"))
    assert main(["run", "main.prose", "--provider", "scripted:rules.json", "--json"]) == 4
    run_id = str(json.loads(capsys.readouterr().out)["run_id"])
    assert main(["approve", run_id]) == 0
    capsys.readouterr()
    assert main(["resume", run_id, "--permission-mode", "plan", "--json"]) == 0
    capsys.readouterr()
    assert not (project / "a.md").exists() and not (project / "b.md").exists()


def test_unknown_permission_mode_is_a_usage_error(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "main.prose").write_text(PROGRAM.format(write="allow"))
    assert main(["run", "main.prose", "--permission-mode", "yolo"]) == 2
    assert "invalid choice: 'yolo'" in capsys.readouterr().err


def test_api_plan_mode(project: Path) -> None:
    (project / "main.prose").write_text(PROGRAM.format(write="allow"))
    result = openprose.run("main.prose", provider="scripted:rules.json", permission_mode="plan")
    assert result.status == "succeeded"
    assert not (project / "a.md").exists()
    with pytest.raises(openprose.RunError, match="unknown permission mode 'yolo'"):
        openprose.run("main.prose", provider="scripted:rules.json", permission_mode="yolo")

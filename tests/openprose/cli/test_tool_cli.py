"""`prose run` / `approve` / `deny` / `resume` / `show` with tools, on a scripted provider
(stdin is not a terminal under pytest, so `prompt` makes the run wait)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openprose.cli import main

PROGRAM = """\
agent writer:
  prompt: "You write notes"
  permissions:
    write: prompt

session: writer
  prompt: "Write two notes"
"""

RULES = {
    "rules": [
        {
            "match": "Write two notes",
            "turns": [
                {
                    "tool_calls": [
                        {"name": "write_file", "arguments": {"path": "a.md", "content": "A"}},
                        {"name": "write_file", "arguments": {"path": "b.md", "content": "B"}},
                    ]
                },
                {"text": "wrote what I could"},
            ],
        }
    ]
}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PROSE_PROVIDER", raising=False)
    (tmp_path / "main.prose").write_text(PROGRAM)
    (tmp_path / "rules.json").write_text(json.dumps(RULES))
    return tmp_path


def _json(capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    out = capsys.readouterr().out
    return json.loads(out)  # type: ignore[no-any-return]


def test_waiting_run_approved_one_by_one_then_resumed(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "main.prose", "--provider", "scripted:rules.json", "--json"]) == 4
    first = _json(capsys)
    run_id = str(first["run_id"])
    assert first["status"] == "waiting" and "a.md" in str(first["error"])
    assert main(["runs"]) == 0
    assert "waiting" in capsys.readouterr().out
    assert main(["show", run_id, "--json"]) == 0
    pending = _json(capsys)["pending_approvals"]
    assert [p["action"] for p in pending] == ["a.md"]  # type: ignore[index]
    assert main(["approve", run_id]) == 0
    assert "approved: write_file write a.md" in capsys.readouterr().out
    # the second write asks next: the run waits again, a.md written, nothing twice
    assert main(["resume", run_id, "--json"]) == 4
    out, err = capsys.readouterr()
    assert json.loads(out)["status"] == "waiting"
    # `prose resume` names the recorded answer it applies
    assert "prose: applying the answer approved once (by cli) to write_file write a.md" in err
    assert (project / "a.md").read_text() == "A" and not (project / "b.md").exists()
    assert main(["deny", run_id, "--all"]) == 0
    capsys.readouterr()
    assert main(["resume", run_id, "--json"]) == 0
    assert _json(capsys)["status"] == "succeeded"
    assert not (project / "b.md").exists()
    assert main(["show", run_id, "--json"]) == 0
    shown = _json(capsys)
    decisions = [(p["action"], p["decision"]) for p in shown["permissions"]]  # type: ignore[union-attr]
    assert ("a.md", "approved") in decisions and ("b.md", "denied") in decisions
    assert [a["answer"] for a in shown["approvals"]] == ["once", "deny"]  # type: ignore[union-attr]
    assert shown["pending_approvals"] == []


def test_approve_and_deny_find_the_run_from_a_subfolder_of_the_project(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """As `prose resume` and `show` do: the project of the working directory (its
    prose.toml's folder), not the working directory itself."""
    (project / "prose.toml").write_text('provider = "scripted:rules.json"\n')
    assert main(["run", "main.prose", "--json"]) == 4
    run_id = str(_json(capsys)["run_id"])
    (project / "notes").mkdir()
    monkeypatch.chdir(project / "notes")
    assert main(["approve", run_id]) == 0
    assert "approved: write_file write a.md" in capsys.readouterr().out
    assert main(["resume", run_id, "--json"]) == 4
    capsys.readouterr()
    assert main(["deny", run_id, "--all"]) == 0


def test_approve_without_a_run_names_only_what_is_missing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for command in ("approve", "deny"):
        assert main([command]) == 2  # IDs are optional (--all, or the first pending one)
        err = capsys.readouterr().err
        assert err.rstrip().endswith("the following arguments are required: RUN"), err


def test_yes_runs_unattended(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "main.prose", "--provider", "scripted:rules.json", "--yes", "--json"]) == 0
    assert (project / "a.md").read_text() == "A" and (project / "b.md").read_text() == "B"


def test_approve_without_pending_requests_says_so(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["run", "main.prose", "--provider", "scripted:rules.json", "--yes", "--json"])
    run_id = str(_json(capsys)["run_id"])
    assert main(["approve", run_id]) == 2
    assert "no pending approval request" in capsys.readouterr().err


def test_project_default_permissions_from_prose_toml(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "prose.toml").write_text('[permissions]\nwrite = ["a.md"]\n')
    (project / "main.prose").write_text(PROGRAM.replace("write: prompt", "bash: deny"))
    assert main(["run", "main.prose", "--provider", "scripted:rules.json", "--json"]) == 0
    assert (project / "a.md").read_text() == "A" and not (project / "b.md").exists()


def test_bad_project_default_is_a_usage_error(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "prose.toml").write_text('[permissions]\nbash = "sometimes"\n')
    assert main(["run", "main.prose", "--provider", "scripted:rules.json"]) == 2
    assert "[permissions] bash must be allow, deny, prompt" in capsys.readouterr().err


TOOL_MACHINERY = (
    "openprose.vm.toolloop",
    "openprose.vm.tools.toolbox",
    "openprose.vm.tools.sandbox",
    "openprose.vm.tools.web",
    "openprose.vm.tools.permissions",
    "openprose.vm.tools.skills",
    "openprose.record.runlog",  # a batch's run log: never for `prose run`
)


def _loaded_tool_modules(project: Path, program: str, rules: str) -> tuple[int, list[str]]:
    """`prose run PROGRAM` in a fresh interpreter: its status and which of the tool loop's
    modules it loaded."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from openprose.cli import main\n"
        f"status = main(['run', {program!r}, '--provider', 'scripted:{rules}', '--json'])\n"
        f"print(status, sorted(m for m in {TOOL_MACHINERY!r} if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=project, capture_output=True, text=True, check=True
    )
    status, _, loaded = done.stdout.strip().splitlines()[-1].partition(" ")
    return int(status), json.loads(loaded.replace("'", '"'))


def test_a_program_without_tools_never_loads_the_tool_loop(project: Path) -> None:
    (project / "plain.prose").write_text('session "Say hello"\n')
    (project / "plain.json").write_text(json.dumps({"rules": [{"match": "hello", "answer": "hi"}]}))
    assert _loaded_tool_modules(project, "plain.prose", "plain.json") == (0, [])
    # The same check sees the modules when an agent does have tools (it waits for approval).
    status, loaded = _loaded_tool_modules(project, "main.prose", "rules.json")
    assert status == 4 and "openprose.vm.toolloop" in loaded


def test_a_command_refused_for_want_of_a_sandbox_is_journaled_and_shown(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from openprose.vm.tools import sandbox

    monkeypatch.setattr(sandbox, "_probe_result", "bubblewrap (bwrap) is not installed; fix")
    (project / "main.prose").write_text(
        'agent runner:\n  prompt: "You run"\n  permissions:\n    bash: allow\n\n'
        'session: runner\n  prompt: "Run it"\n'
    )
    command = {"name": "run_command", "arguments": {"command": "touch ran.txt"}}
    rules = {"rules": [{"match": "Run it", "turns": [{"tool_calls": [command]}, "could not"]}]}
    (project / "rules.json").write_text(json.dumps(rules))
    assert main(["run", "main.prose", "--provider", "scripted:rules.json", "--json"]) == 0
    run_id = str(_json(capsys)["run_id"])
    assert not (project / "ran.txt").exists()
    assert main(["show", run_id, "--json"]) == 0
    shown = _json(capsys)["permissions"]
    decisions = [(p["kind"], p["decision"]) for p in shown]  # type: ignore[union-attr]
    assert decisions == [("bash", "allowed"), ("sandbox", "refused")]  # allowed, then refused
    assert "bwrap" in json.dumps(shown[1])  # type: ignore[index]
    assert main(["show", run_id]) == 0
    assert "refused" in capsys.readouterr().out

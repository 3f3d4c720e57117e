"""kill -9 while an MCP tool call is running, then `prose resume`: no completed MCP call is
made again; only the one in flight at the kill may be. The stdio test server logs every
call it receives to out/calls.log, so the log counts what the server really did."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from openprose.vm.tools import sandbox_problem

SERVER = Path(__file__).parents[2] / "support" / "mcp" / "notes_server.py"

PROGRAM = """\
agent counter:
  prompt: "You count with tools"
  permissions:
    write: ["out/"]
    mcp: ["notes"]

session: counter
  prompt: "Add the numbers"
"""


def _settings() -> str:
    readable = json.dumps(sorted({sys.base_prefix, sys.prefix}))
    return (
        "[mcp.servers.notes]\n"
        f"command = {json.dumps(sys.executable)}\n"
        'args = ["notes_server.py"]\n'
        f"readable = {readable}\n"
    )


def _rules() -> str:
    def call(name: str, **arguments: object) -> dict[str, object]:
        return {"tool_calls": [{"name": f"mcp__notes__{name}", "arguments": arguments}]}

    turns = [call("add", a=n, b=0) for n in (1, 2, 3)]
    turns += [call("slow", seconds=3), call("add", a=5, b=0), {"text": "counted"}]
    return json.dumps({"latency_ms": 100, "rules": [{"match": "Add", "turns": turns}]})


def _events(project: Path) -> list[dict[str, object]]:
    runs = list((project / ".prose" / "runs").glob("*/journal.jsonl"))
    events = []
    for line in runs[0].read_text().splitlines() if runs else []:
        try:
            events.append(json.loads(line))
        except ValueError:
            pass
    return events


def _log(project: Path) -> list[str]:
    log = project / "out" / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


@pytest.mark.skipif(sandbox_problem() is not None, reason=f"no sandbox: {sandbox_problem()}")
def test_kill_9_during_an_mcp_call_then_resume_repeats_no_completed_call(tmp_path: Path) -> None:
    project = tmp_path
    (project / "out").mkdir()
    shutil.copy(SERVER, project / "notes_server.py")
    (project / "prose.toml").write_text(_settings())
    (project / "main.prose").write_text(PROGRAM)
    (project / "rules.json").write_text(_rules())
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("PROSE_PROVIDER", None)
    command = [sys.executable, "-m", "openprose.cli"]
    child = subprocess.Popen(
        [*command, "run", "main.prose", "--provider", "scripted:rules.json"],
        cwd=project,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # the server is inside `slow`: kill the VM
            if "slow 3.0" in _log(project):
                break
            time.sleep(0.02)
        else:
            raise AssertionError(f"the run never reached the slow call: {_log(project)}")
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert [e["ev"] for e in _events(project)].count("tool_result") == 3
    run_id = next((project / ".prose" / "runs").iterdir()).name
    resumed = subprocess.run(
        [*command, "resume", run_id, "--json"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["status"] == "succeeded"
    # the three completed adds were served from the journal; `slow`, in flight, ran again
    assert _log(project) == ["add 1 0", "add 2 0", "add 3 0", "slow 3.0", "slow 3.0", "add 5 0"]
    assert [e["ev"] for e in _events(project)].count("tool_result") == 5


def test_a_bad_server_table_is_a_usage_error_of_one_line(tmp_path: Path) -> None:
    from tests.support.commands import run_tool

    (tmp_path / "prose.toml").write_text('[mcp.servers.notes]\nurl = "ftp://x"\n')
    (tmp_path / "main.prose").write_text(PROGRAM)
    (tmp_path / "rules.json").write_text('{"rules": []}')
    done = run_tool("prose", "run", "main.prose", "--provider", "scripted:rules.json", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "prose: prose.toml [mcp.servers.notes] url must be an http:// or https:// URL"
    ]

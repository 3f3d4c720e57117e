"""kill -9 in the middle of a tool loop, then `prose resume`: no completed tool call runs
twice. Each call appends a line to a file (edit_file replaces END with "N\\nEND"), so a
call run twice would leave its line twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

PROGRAM = """\
agent scribe:
  prompt: "You keep a log"
  permissions:
    read: ["log/"]
    write: ["log/"]

session: scribe
  prompt: "Append the numbers one to six to log/lines.txt"
"""

CALLS = 6


def _rules() -> str:
    turns = [
        {
            "tool_calls": [
                {
                    "name": "edit_file",
                    "arguments": {
                        "path": "log/lines.txt",
                        "old_text": "END",
                        "new_text": f"line {n}\nEND",
                    },
                }
            ]
        }
        for n in range(1, CALLS + 1)
    ]
    turns.append({"text": "appended six lines"})
    return json.dumps({"latency_ms": 150, "rules": [{"match": "Append", "turns": turns}]})


def _events(project: Path) -> list[dict[str, object]]:
    runs = list((project / ".prose" / "runs").glob("*/journal.jsonl"))
    if not runs:
        return []
    events = []
    for line in runs[0].read_text().splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            pass
    return events


def test_kill_9_mid_loop_then_resume_runs_each_call_once(tmp_path: Path) -> None:
    project = tmp_path
    (project / "log").mkdir()
    (project / "log" / "lines.txt").write_text("END\n")
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
        deadline = time.monotonic() + 60
        # Kill while the model is thinking after the third result: three calls are done.
        while time.monotonic() < deadline:
            kinds = [e["ev"] for e in _events(project)]
            if kinds.count("tool_result") >= 3 and kinds[-1] == "session_started":
                break
            time.sleep(0.01)
        else:
            raise AssertionError("the run never reached its third tool result")
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    done_before = [e["ev"] for e in _events(project)].count("tool_result")
    assert 3 <= done_before < CALLS
    run_id = next((project / ".prose" / "runs").iterdir()).name
    resumed = subprocess.run(
        [*command, "resume", run_id, "--json"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["status"] == "succeeded"
    lines = (project / "log" / "lines.txt").read_text().splitlines()
    assert lines == [f"line {n}" for n in range(1, CALLS + 1)] + ["END"]
    events = _events(project)
    assert [e["ev"] for e in events].count("tool_result") == CALLS

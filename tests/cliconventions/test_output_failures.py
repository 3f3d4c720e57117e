"""Output that cannot be written never ends in a traceback, in any of the four command
lines: a reader that closed the pipe (`| head`) ends the command quietly, a full disk
(/dev/full) says so on stderr with exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
TESTS = HERE.parent


def _big_inputs(tmp: Path) -> dict[str, list[str]]:
    """A command per tool whose output is far larger than a pipe's buffer."""
    (tmp / "t.txt").write_text("User: !<q>\nAssistant: nope\n" * 3000)
    (tmp / "m.ndjson").write_text('{"a": 1}\n' * 20000)
    (tmp / "p.prose").write_text("".join(f'let x{i} = session "a" extra\n' for i in range(300)))
    (tmp / "r.jsonl").write_text(
        "".join(json.dumps({"role": "user", "content": "!<q>"}) + "\n" for _ in range(3000))
    )
    # a run: its project is tmp (the prose.toml there), so its run folder lands there too
    (tmp / "prose.toml").write_text('provider = "scripted:rules.yaml"\n')
    (tmp / "rules.yaml").write_text('default: "' + "an answer " * 20000 + '"\n')
    (tmp / "run.prose").write_text('session "x"\n')
    return {
        "prose run": ["openprose.cli", "run", str(tmp / "run.prose"), "-q"],
        "prose run --json": ["openprose.cli", "run", str(tmp / "run.prose"), "-q", "--json"],
        "vpp check": ["vpp.cli", "check", str(tmp / "t.txt")],
        "vpp check --json": ["vpp.cli", "check", "--json", str(tmp / "r.jsonl")],
        "vpp repair": ["vpp.cli", "repair", str(tmp / "t.txt")],
        "vlp validate": ["vlp.cli", "validate", str(tmp / "m.ndjson")],
        "vlp validate --json": ["vlp.cli", "validate", "--json", str(tmp / "m.ndjson")],
        "vlp show": ["vlp.cli", "show", str(TESTS / "vlp" / "transcripts" / "audit_thread.ndjson")],
        "plsp parse": [
            "plsp.cli",
            "parse",
            "S{" + "$a:1;" * 1 + ">" + ",".join(['"x"'] * 20000) + ";}S",
        ],
        "prose check": ["openprose.cli", "check", str(tmp / "p.prose")],
    }


COMMANDS = [
    "prose run",
    "prose run --json",
    "vpp check",
    "vpp check --json",
    "vpp repair",
    "vlp validate",
    "vlp validate --json",
    "vlp show",
    "plsp parse",
    "prose check",
]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
@pytest.mark.parametrize("command", COMMANDS)
def test_a_full_disk_is_a_message_not_a_traceback(command: str, tmp_path: Path) -> None:
    argv = _big_inputs(tmp_path)[command]
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", *argv],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    assert "Traceback" not in done.stderr, done.stderr
    tool = argv[0].split(".")[0].replace("openprose", "prose")
    assert done.stderr.strip().endswith(
        f"{tool}: error: cannot write the output: No space left on device"
    )
    assert done.returncode == 2


@pytest.mark.parametrize("command", [c for c in COMMANDS if c != "vlp show"])
def test_a_closed_pipe_ends_the_command_quietly(command: str, tmp_path: Path) -> None:
    argv = _big_inputs(tmp_path)[command]
    process = subprocess.Popen(
        [sys.executable, "-m", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.read(10)
    process.stdout.close()  # the reader goes away, as `| head -c 10` does
    stderr = process.stderr.read().decode()
    process.wait(timeout=120)
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
    assert "cannot read" not in stderr, stderr  # a write failure is not a read failure

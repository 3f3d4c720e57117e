"""Ctrl-C and SIGTERM in the four command lines: one line on stderr, exit 130 / 143, never a
traceback; `prose run` killed with SIGTERM closes its journal as Ctrl-C does and says how to
continue, and the resumed run sends nothing that had finished."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.commands import run_tool
from tests.support.fake_llm_server import start_in_subprocess


@pytest.fixture(scope="module")
def slow_server() -> Iterator[str]:
    base_url, stop = start_in_subprocess(latency_ms=150)
    yield base_url
    stop()


def _env(base_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROSE_", "OPENAI_"))}
    env.update(OPENAI_BASE_URL=f"{base_url}/v1", OPENAI_API_KEY="sk-test-signals", TERM="dumb")
    env.pop("ANTHROPIC_API_KEY", None)
    return env


def _start(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", *argv],
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(process: subprocess.Popen[str], text: str, timeout: float = 60) -> str:
    """stderr lines until one holds `text` (the process keeps running)."""
    assert process.stderr is not None
    seen = ""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line:
            break
        seen += line
        if text in line:
            return seen
    raise AssertionError(f"{text!r} never came; stderr so far:\n{seen}")


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_run_says_how_to_continue_and_resumes_without_resending(
    how: signal.Signals, slow_server: str, tmp_path: Path
) -> None:
    program = "".join(f'session "step {i}"\n  context: []\n' for i in range(1, 9))
    (tmp_path / "long.prose").write_text(program)
    env = _env(slow_server)
    process = _start(["openprose.cli", "run", "long.prose"], tmp_path, env)
    _wait_for(process, "✓ 2 ")  # two sessions finished, the third in flight
    process.send_signal(how)
    _, err = process.communicate(timeout=60)
    word, status = ("terminated", 143) if how == signal.SIGTERM else ("interrupted", 130)
    assert process.returncode == status, err
    assert "Traceback" not in err
    run_id = next((tmp_path / ".prose" / "runs").iterdir()).name
    assert f"prose: {word}; run {run_id} keeps what it finished. " in err
    assert err.rstrip().endswith(f"Continue it with: prose resume {run_id}")

    done = run_tool("prose", "resume", run_id, "--json", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    usage = json.loads(done.stdout)["usage"]
    assert usage["requests_served_from_journal"] >= 2  # finished sessions are not sent again
    assert usage["requests_served_from_journal"] + usage["requests_sent"] == 8


def test_sigterm_during_a_long_model_call_ends_the_run_at_once(tmp_path: Path) -> None:
    """The handler runs between two waits of the event loop's selector; unless it wakes the
    selector, the cancellation waits for the next I/O — here a call answering in 30 s."""
    from tests.support.fake_llm_server import Fault, script_faults

    base_url, stop = start_in_subprocess()
    try:
        script_faults(base_url, Fault("hang", hang_seconds=30))
        (tmp_path / "p.prose").write_text('session "answer slowly"\n')
        process = _start(["openprose.cli", "run", "p.prose"], tmp_path, _env(base_url))
        _wait_for(process, "prose: run ")  # started; its only call is out
        time.sleep(0.5)
        sent = time.monotonic()
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        stop()
    assert process.returncode == 143, err
    assert took < 10, f"SIGTERM took {took:.1f} s to end the run"
    assert "prose: terminated; run " in err and "Traceback" not in err


def test_a_terminated_batch_says_how_to_continue(slow_server: str, tmp_path: Path) -> None:
    (tmp_path / "p.prose").write_text('input x: "x"\nsession "a {x}"\nsession "b"\nsession "c"\n')
    (tmp_path / "cases.jsonl").write_text("".join(f'{{"x": "{i}"}}\n' for i in range(4)))
    process = _start(
        ["openprose.cli", "batch", "p.prose", "cases.jsonl", "--max-runs", "1"],
        tmp_path,
        _env(slow_server),
    )
    seen = _wait_for(process, "prose batch: batch ")
    batch_id = seen.split("prose batch: batch ")[1].split()[0]
    time.sleep(0.4)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 143, err
    assert "Traceback" not in err
    assert f"prose batch: terminated; continue with: prose batch --resume {batch_id}" in err


def _wait_until_reading(pid: int, timeout: float = 60) -> None:
    """Until the process sleeps in a pipe read (the interpreter is up, the handlers are in
    place): a signal sent earlier would meet Python's defaults, not the command's."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            waiting = Path(f"/proc/{pid}/wchan").read_text()
        except OSError:
            break  # no /proc: fall back to a generous pause
        if "pipe" in waiting:
            return
        time.sleep(0.05)
    time.sleep(3)


# A command reading stdin that never ends, in each tool: stopped while it waits.
READING_STDIN = {
    "prose": ["openprose.cli", "check", "-"],
    "vlp": ["vlp.cli", "validate", "-"],
    "vpp": ["vpp.cli", "check", "-"],
    "plsp": ["plsp.cli", "check", "-"],
}


@pytest.mark.parametrize("tool", sorted(READING_STDIN))
@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT])
def test_every_tool_stopped_while_reading_ends_with_one_line(
    tool: str, how: signal.Signals, tmp_path: Path
) -> None:
    process = _start(READING_STDIN[tool], tmp_path)
    assert process.stdin is not None
    process.stdin.write("x" * 100)  # started reading, the rest never comes
    process.stdin.flush()
    _wait_until_reading(process.pid)
    process.send_signal(how)
    _, err = process.communicate(timeout=30)
    word, status = ("terminated", 143) if how == signal.SIGTERM else ("interrupted", 130)
    assert "Traceback" not in err, err
    assert process.returncode == status, err
    assert err.strip().splitlines()[-1] == f"{tool}: {word}"

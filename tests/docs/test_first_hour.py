"""The first hour, as written: README's command list and every Python block of docs/api.md
are RUN (not only parsed) with the installed console scripts, in a fresh folder holding a
copy of examples/, with the provider configured the way a user does it — OPENAI_BASE_URL and
OPENAI_API_KEY in the environment — pointing at the loopback fake server.

The files the README assumes the reader has (prog.prose taking `topic`, cases.jsonl, a VPP
transcript, a VLP stream) are made first; a run id in the README is replaced by a real one."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs.doc_blocks import ROOT, blocks_of, prepare_project
from tests.support.fake_llm_server import start_in_subprocess

SCRIPTS = Path(sys.executable).parent
PLACEHOLDER_RUN = "20261122-080731-e76733"
# Lines not run here, and why (each is tested where it lives).
NOT_RUN = {
    "prose lsp": "a language server on stdio (tests/openprose/lsp)",
    "prose ui": "serves until stopped: test_prose_ui_prints_its_url_first_and_stops_on_sigterm",
}

pytestmark = pytest.mark.skipif(
    not (SCRIPTS / "prose").exists(), reason=f"the console scripts are not installed in {SCRIPTS}"
)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    base_url, stop = start_in_subprocess()
    yield base_url
    stop()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    prepare_project(tmp_path)
    (tmp_path / "prog.prose").write_text(
        'input topic: "what to write about"\noutput answer = session "Write about {topic}"\n'
    )
    (tmp_path / "cases.jsonl").write_text('{"topic": "owls"}\n{"topic": "tides"}\n')
    shutil.copy(
        ROOT / "tests" / "vpp" / "transcripts" / "caching_1_5.txt", tmp_path / "transcript.txt"
    )
    (tmp_path / "home").mkdir()
    return tmp_path


def _env(folder: Path, base_url: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PROSE_", "OPENAI_", "ANTHROPIC_", "OTEL_"))
    }
    env.update(
        PATH=f"{SCRIPTS}{os.pathsep}{env.get('PATH', '')}",
        HOME=str(folder / "home"),
        OPENAI_BASE_URL=f"{base_url}/v1",
        OPENAI_API_KEY="sk-first-hour-test",
        PROSE_REGISTRY="http://127.0.0.1:9",  # no network
        OTEL_EXPORTER_OTLP_ENDPOINT=f"{base_url}/otlp",  # --trace: anywhere that answers
        NO_COLOR="1",
    )
    return env


def _shell(line: str, folder: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", line],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def _readme_command_lines() -> list[str]:
    block = next(
        b
        for b in blocks_of(ROOT / "README.md")
        if b.language == "sh" and "prose check examples/" in b.text
    )
    lines = [re.sub(r"\s+#.*$", "", line).strip() for line in block.text.splitlines()]
    return [line for line in lines if line]


def test_readme_command_list_runs_as_written(folder: Path, server: str) -> None:
    env = _env(folder, server)
    problems: list[str] = []
    run_id = ""
    for line in _readme_command_lines():
        if line in NOT_RUN:
            continue
        if PLACEHOLDER_RUN in line:
            assert run_id, f"{line!r} comes before any run"
            line = line.replace(PLACEHOLDER_RUN, run_id)
        if line.startswith("vlp validate stream.ndjson"):  # the audit trail of a run
            shutil.copy(
                folder / ".prose" / "runs" / run_id / "audit.ndjson", folder / "stream.ndjson"
            )
        done = _shell(line, folder, env)
        said = done.stdout + done.stderr
        if done.returncode != 0 or "Traceback" in said:
            problems.append(f"$ {line}\nexit {done.returncode}\n{said}")
        if found := re.search(r"run (\d{8}-\d{6}-[0-9a-f]{6})", said):
            run_id = found.group(1)
    assert not problems, "\n\n".join(problems)
    assert (folder / "rows.jsonl").read_text().count('"succeeded"') == 2
    completion = folder / "home" / ".local/share/bash-completion/completions/prose"
    assert "complete" in completion.read_text()


def test_prose_ui_prints_its_url_first_and_stops_on_sigterm(folder: Path, server: str) -> None:
    process = subprocess.Popen(
        ["prose", "ui", "--port", "0"],
        cwd=folder,
        env=_env(folder, server),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    first = process.stdout.readline()
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/\?token=\S+\n", first), first
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 0 and "Traceback" not in err, err


def test_api_blocks_run_as_written(folder: Path, server: str) -> None:
    """docs/api.md's Python blocks, in order, as one script (later blocks use `result`)."""
    blocks = [b for b in blocks_of(ROOT / "docs" / "api.md") if b.language == "python"]
    (folder / "review.prose").write_text((folder / "prog.prose").read_text())
    script = "\n".join(b.text for b in blocks)
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=folder,
        env=_env(folder, server),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "succeeded {'haiku': 'echo: Write a haiku about owls'}" in out
    # the ask block: waiting, answered through the API, resumed with the answer
    assert "q1 How should the new login page be rolled out? -> canary first" in out
    assert (
        "succeeded {'rollout': \"echo: Write the rollout steps for the new login page: canary"
        in out
    )
    assert "run_started" in out and "run_finished" in out  # the events block
    assert "http://127.0.0.1:" in out  # serve_ui
    assert (folder / "cassette.jsonl").stat().st_size > 0  # record=

"""A run can always be found again: its id is printed when it starts, and the command that
continues it when it is interrupted or fails. Plus the small promises around starting and
resuming runs (issue 21)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from openprose.cli import main

FAILING = 'default: "ok"\nrules:\n  - match: "^Fail"\n    answer: "x"\n    failures: [error, error, error, error, error, error]\n'


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in ("PROSE_PROVIDER", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "rules.yaml").write_text(FAILING)
    (tmp_path / "p.prose").write_text('session "Hello"\nsession "Fail now"\n')
    (tmp_path / "ok.prose").write_text('session "Hello"\n')
    return tmp_path


def test_the_run_id_comes_first_and_failure_says_how_to_resume(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "p.prose", "--provider", "scripted:rules.yaml"]) == 1
    err = capsys.readouterr().err
    first = err.splitlines()[0]
    run_id = first.split()[2]
    assert first == f"prose: run {run_id} started ({project / '.prose' / 'runs' / run_id})"
    assert err.rstrip().endswith(f"continue it with: prose resume {run_id}")


def test_with_json_the_id_line_is_on_stderr_and_q_drops_it(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "ok.prose", "--provider", "scripted:rules.yaml", "--json"]) == 0
    captured = capsys.readouterr()
    run_id = json.loads(captured.out)["run_id"]
    assert captured.err == f"prose: run {run_id} started ({project / '.prose' / 'runs' / run_id})\n"
    assert main(["-q", "run", "ok.prose", "--provider", "scripted:rules.yaml", "--json"]) == 0
    assert capsys.readouterr().err == ""


def test_from_another_folder_the_resume_command_names_the_run_folder(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "prose.toml").write_text('provider = "scripted:rules.yaml"\n')
    (project / "sub").mkdir()
    monkeypatch.chdir(project / "sub")
    assert main(["run", "../p.prose"]) == 1
    err = capsys.readouterr().err
    run_id = err.split()[2]
    command = f"prose resume {(project / '.prose' / 'runs' / run_id).resolve()}"
    assert err.rstrip().endswith(command)
    assert main(command.split()[1:]) == 1  # the command works as printed (and fails again)


def test_interrupt_prints_the_resume_command(project: Path) -> None:
    (project / "slow.yaml").write_text('default: "ok"\nlatency_ms: 20000\n')
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "openprose.cli",
            "run",
            "ok.prose",
            "--provider",
            "scripted:slow.yaml",
        ],
        cwd=project,
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert child.stderr is not None
    first = child.stderr.readline()  # printed before any model call
    run_id = first.split()[2]
    child.send_signal(signal.SIGINT)
    _, rest = child.communicate(timeout=60)
    assert child.returncode == 130
    assert f"run {run_id} keeps what it finished. Continue it with: prose resume {run_id}" in rest
    assert "Traceback" not in rest


def test_resuming_a_finished_run_has_nothing_to_do(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "ok.prose", "--provider", "scripted:rules.yaml", "--json"]) == 0
    run_id = json.loads(capsys.readouterr().out)["run_id"]
    journal = project / ".prose" / "runs" / run_id / "journal.jsonl"
    before = journal.read_bytes()
    assert main(["resume", run_id, "--json"]) == 0
    captured = capsys.readouterr()
    assert f"run {run_id} already succeeded; nothing to resume" in captured.err
    shown = json.loads(captured.out)
    assert shown["resumed"] is False and shown["status"] == "succeeded"
    assert journal.read_bytes() == before  # nothing ran


def test_a_replayed_run_sends_nothing_and_costs_nothing(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "ok.prose", "--provider", "scripted:rules.yaml", "--json"]) == 0
    run_id = json.loads(capsys.readouterr().out)["run_id"]
    assert main(["run", "ok.prose", "--provider", f"replay:{run_id}"]) == 0
    out = capsys.readouterr().out
    assert "requests: 1 answered by the replay cassette, 0 served" in out
    assert "sent" not in out and "cost" not in out


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--max-concurrency", "99999999999999999999"], "must be between 1 and 100000"),
        (["--max-concurrency", "0"], "must be between 1 and 100000"),
        (["--provider", ""], "empty provider name"),
        (["--provider", " "], "empty provider name"),
    ],
)
def test_bad_option_values_are_usage_errors_leaving_no_run_folder(
    project: Path, capsys: pytest.CaptureFixture[str], options: list[str], message: str
) -> None:
    assert main(["run", "ok.prose", *options]) == 2
    assert message in capsys.readouterr().err
    assert not (project / ".prose").exists()


def test_a_keyless_model_override_is_refused_before_the_run_starts(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # never reached
    code = main(["run", "ok.prose", "--provider", "openai", "--model", "sonnet=anthropic:claude-x"])
    assert code == 2
    assert "anthropic: no API key" in capsys.readouterr().err
    assert not (project / ".prose").exists()


def test_install_hint_inside_a_checkout_is_an_editable_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from openprose.install import install_command

    checkout = Path(__file__).resolve().parents[3]
    monkeypatch.chdir(checkout)
    assert install_command("local") == "pip install -e '.[local]'"
    monkeypatch.chdir(tmp_path)
    assert install_command("local") == f"pip install -e '{checkout}[local]'"


def test_program_or_inputs_from_stdin(project: Path) -> None:
    def prose(*args: str, stdin: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "openprose.cli", "-q", *args],
            input=stdin,
            capture_output=True,
            text=True,
            cwd=project,
            check=False,
        )

    program = 'input topic: "t"\noutput o = session "About {topic}"\n'
    done = prose(
        "run",
        "-",
        "--input",
        "topic=x",
        "--provider",
        "scripted:rules.yaml",
        "--json",
        stdin=program,
    )
    assert done.returncode == 0 and json.loads(done.stdout)["outputs"] == {"o": "ok"}
    (project / "t.prose").write_text(program)
    done = prose(
        "run",
        "t.prose",
        "--inputs",
        "-",
        "--provider",
        "scripted:rules.yaml",
        "--json",
        stdin='{"topic": "y"}',
    )
    assert done.returncode == 0, done.stderr
    both = prose("run", "-", "--inputs", "-", stdin=program)
    assert both.returncode == 2 and "cannot both be read from stdin" in both.stderr

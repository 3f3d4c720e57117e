"""examples/: every program has a test file and cassettes; `prose test examples` passes with
no network, and a prompt changed in one program fails with a diff of its request."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"


def _prose_test(*args: str, cwd: Path, scratch: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["TMPDIR"] = str(scratch)  # the cases' folders (a failed case's is kept)
    env.pop("PROSE_PROVIDER", None)
    env["PROSE_REGISTRY"] = "http://127.0.0.1:9"  # nothing listens: no fetch can succeed
    env["PYTHONPATH"] = str(ROOT / "src")
    return subprocess.run(
        [sys.executable, "-m", "openprose.cli", "test", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_every_example_has_a_test_file_and_cassettes() -> None:
    programs = sorted(p.name.removesuffix(".prose") for p in EXAMPLES.glob("*.prose"))
    tested = sorted(p.name.removesuffix(".test.toml") for p in EXAMPLES.glob("*.test.toml"))
    assert programs == tested
    for name in tested:
        assert list((EXAMPLES / "cassettes" / name).glob("*.jsonl")), name


def test_prose_test_examples_passes_offline(tmp_path: Path) -> None:
    done = _prose_test("examples", cwd=ROOT, scratch=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert " passed in " in done.stdout and "failed" not in done.stdout


def test_one_changed_prompt_fails_with_a_readable_diff(tmp_path: Path) -> None:
    copy = tmp_path / "examples"
    shutil.copytree(EXAMPLES, copy)
    program = copy / "code-review.prose"
    text = program.read_text()
    program.write_text(text.replace("Suggest fixes for each bug found", "Suggest a fix per bug"))
    (tmp_path / "scratch").mkdir()
    done = _prose_test("examples", cwd=tmp_path, scratch=tmp_path / "scratch")
    assert done.returncode == 1
    assert "examples/code-review.test.toml F" in done.stdout
    assert "1 failed, " in done.stdout
    assert (
        "the cassette no longer matches the program (a request changed); "
        "`prose test --update` records it again:\n"
        "--- recorded (three-reviewer-sessions.jsonl)\n"
        "+++ sent now\n"
    ) in done.stdout
    assert "-user: Suggest fixes for each bug found\n+user: Suggest a fix per bug\n" in (
        done.stdout
    )

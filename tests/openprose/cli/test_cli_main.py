"""The `prose` dispatcher (`openprose.cli.main`): what holds for every subcommand."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_a_terminal_that_cannot_show_an_answer_gets_escapes_not_a_crash(tmp_path: Path) -> None:
    # `prose run` used to finish the run, then fail on printing the summary (exit 1,
    # "internal error"), and `prose show` ended in a UnicodeEncodeError traceback.
    (tmp_path / "rules.yaml").write_text('default: "caf\u00e9 \u2713"\n', encoding="utf-8")
    (tmp_path / "p.prose").write_text('session "Hello"\n', encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PROSE_PROVIDER"}
    env["PYTHONIOENCODING"] = "ascii"

    def prose(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "openprose.cli", *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            encoding="ascii",
            check=False,
            timeout=120,
        )

    ran = prose("run", "p.prose", "--provider", "scripted:rules.yaml")
    assert ran.returncode == 0, ran.stderr
    assert "result: caf\\xe9 \\u2713\n" in ran.stdout
    run_id = ran.stdout.split()[1].rstrip(":")
    shown = prose("show", run_id)
    assert shown.returncode == 0 and "Traceback" not in shown.stderr, shown.stderr
    assert "result: caf\\xe9 \\u2713\n" in shown.stdout

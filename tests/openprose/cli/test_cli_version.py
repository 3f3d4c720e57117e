"""`prose --version` answers before anything else is imported: completion scripts and editors
call it constantly (issue 35: <= 0.03 s CPU, bench/cli_startup.py)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import cliconventions
from openprose import cli

# As the console script runs it: `main()` reading sys.argv.
_PROBE = """
import sys
sys.argv = ["prose", *{args!r}]
from openprose.cli import main
code = main()
sys.stderr.write(repr((code, [m for m in ("argparse", "cliconventions", "openprose.vm")
                              if m in sys.modules])))
"""


def run_probe(args: list[str]) -> tuple[str, object, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(args=args)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    code, loaded = ast.literal_eval(done.stderr)
    return done.stdout, code, loaded


@pytest.mark.parametrize("args", [["--version"], ["-q", "--version"], ["-v", "--version"]])
def test_version_prints_the_distribution_version_as_before(args: list[str]) -> None:
    printed, code, _ = run_probe(args)
    assert (printed, code) == (f"{cliconventions.version_line('prose')}\n", 0)


def test_version_imports_neither_argparse_nor_cliconventions() -> None:
    assert run_probe(["--version"])[1:] == (0, [])


def test_the_version_read_from_the_source_is_the_imported_one() -> None:
    assert cli.version_line() == f"prose {cliconventions.__version__}"


def test_without_the_source_beside_it_the_version_is_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An install that keeps only bytecode, or lays packages out elsewhere, still answers."""
    monkeypatch.setattr(cli, "__file__", str(tmp_path / "openprose" / "cli" / "__init__.py"))
    assert cli.version_line() == f"prose {cliconventions.__version__}"


def test_a_source_without_the_version_line_falls_back_to_the_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "cliconventions").mkdir()
    (tmp_path / "cliconventions" / "__init__.py").write_text("VERSION = '9.9.9'\n")
    monkeypatch.setattr(cli, "__file__", str(tmp_path / "openprose" / "cli" / "__init__.py"))
    assert cli.version_line() == f"prose {cliconventions.__version__}"

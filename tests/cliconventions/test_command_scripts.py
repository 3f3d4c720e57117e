"""The four commands are installed from script files (pyproject's script-files), not from
entry points: pip's entry-point wrapper imports `re` before our code, which alone put `prose
--version` over its 0.03 s CPU goal (issue 35). These tests check what pip is given, run the
scripts as an install runs them, and, where a wheel can be built offline, install the project
and run the installed commands."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

import cliconventions

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"
TOOLS = {"prose": "openprose.cli", "vlp": "vlp.cli", "vpp": "vpp.cli", "plsp": "plsp.cli"}
# What each script calls, and its last line: vlp's ends through `run()`, which skips the
# interpreter's teardown once the report is out (docs/decisions.md, vlp35h).
CALLS = {tool: ("main", "sys.exit(main())") for tool in TOOLS} | {"vlp": ("run", "run()")}
# What pip's entry-point wrapper loaded before our code (re and what it imports), and what
# `--version` of prose skips on purpose.
NOT_FOR_PROSE_VERSION = {"re", "enum", "functools", "argparse", "cliconventions"}


def _child_env(**extra: str) -> dict[str, str]:
    """This tree's src first on the path, whatever the parent was started with."""
    return {**os.environ, "PYTHONPATH": str(ROOT / "src"), **extra}


def test_pyproject_installs_the_four_script_files_and_no_entry_point() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert config["tool"]["setuptools"]["script-files"] == [f"scripts/{t}" for t in TOOLS]
    # an entry point of the same name would be a second `prose` in bin/ (pip's wrapper)
    assert "scripts" not in config["project"]


@pytest.mark.parametrize("tool", TOOLS)
def test_each_script_is_the_line_pip_rewrites_then_its_cli(tool: str) -> None:
    script = SCRIPTS / tool
    lines = script.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "#!python"  # pip replaces exactly this with the environment's python
    name, last = CALLS[tool]
    assert f"from {TOOLS[tool]} import {name}" in lines
    assert lines[-1] == last
    assert os.access(script, os.X_OK)


@pytest.mark.parametrize("tool", TOOLS)
def test_each_script_prints_the_version(tool: str) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPTS / tool), "--version"],
        capture_output=True,
        text=True,
        env=_child_env(),
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, f"{tool} {cliconventions.__version__}\n")


def _imported(argv: list[str]) -> set[str]:
    """Every module a fresh interpreter imported running ``argv`` (``-X importtime``)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *argv],
        capture_output=True,
        text=True,
        env=_child_env(),
        timeout=60,
        check=True,
    )
    rows = (line.rpartition("|")[2] for line in done.stderr.splitlines())
    return {row.strip() for row in rows if row.startswith(" ")}


def test_prose_version_imports_nothing_the_wrapper_did() -> None:
    """Beyond what the interpreter loads for `pass`, `scripts/prose --version` loads only our
    package and its cli."""
    extra = _imported([str(SCRIPTS / "prose"), "--version"]) - _imported(["-c", "pass"])
    assert {"openprose", "openprose.cli"} <= extra
    assert extra & NOT_FOR_PROSE_VERSION == set()


def _can_build_a_wheel_offline() -> bool:
    """setuptools builds wheels itself from 70.1; before that it needs the `wheel` package."""
    if importlib.util.find_spec("setuptools") is None:
        return False
    has_own = importlib.util.find_spec("setuptools.command.bdist_wheel") is not None
    return has_own or importlib.util.find_spec("wheel") is not None


@pytest.mark.skipif(
    not _can_build_a_wheel_offline(), reason="no offline wheel builder (setuptools<70.1, no wheel)"
)
def test_a_pip_install_gives_commands_that_run(tmp_path: Path) -> None:
    """pip installs a copy of the project (so the tree gets no build/ or egg-info) offline into
    a prefix; its bin/prose starts with this python and answers `--version`. `--ignore-installed`:
    without it pip first uninstalls the project from the environment running the tests."""
    project = tmp_path / "project"
    project.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, project / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(ROOT / "src", project / "src", ignore=ignore)
    shutil.copytree(SCRIPTS, project / "scripts")
    prefix = tmp_path / "prefix"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
         "--no-index", "--ignore-installed", "--prefix", str(prefix), str(project)],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    # the environment running the tests keeps its own install of the project
    assert importlib.metadata.distribution("openprose").name == "openprose"
    purelib = sysconfig.get_path("purelib", vars={"base": str(prefix)})
    bin_dir = Path(sysconfig.get_path("scripts", vars={"base": str(prefix)}))
    first_line = (bin_dir / "prose").read_text(encoding="utf-8").splitlines()[0]
    assert first_line.startswith("#!") and "python" in first_line and first_line != "#!python"
    for tool in TOOLS:
        done = subprocess.run(
            [str(bin_dir / tool), "--version"],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": purelib},
            timeout=60,
            check=False,
        )
        assert (done.returncode, done.stdout) == (0, f"{tool} {cliconventions.__version__}\n")


def test_python_dash_m_openprose_is_the_prose_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "openprose", "--version"],
        capture_output=True,
        text=True,
        env=_child_env(),
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, f"prose {cliconventions.__version__}\n")

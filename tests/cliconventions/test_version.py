"""The distribution's version is written once, as ``cliconventions.__version__``: setuptools
reads it from there, the four packages give it as their ``__version__`` and the four commands
print it."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import pytest

import cliconventions
import openprose
import plsp
import vlp
import vpp

ROOT = Path(__file__).resolve().parents[2]
TOOLS = {"prose": "openprose.cli", "vlp": "vlp.cli", "vpp": "vpp.cli", "plsp": "plsp.cli"}


def setuptools_version(project: Path) -> str:
    """The version setuptools gives the distribution built from ``project``."""
    from setuptools.config.pyprojecttoml import read_configuration

    with warnings.catch_warnings():  # "[tool.setuptools] is still beta"
        warnings.simplefilter("ignore")
        configuration = read_configuration(project / "pyproject.toml", expand=True)
    version: str = configuration["project"]["version"]
    return version


def test_the_packages_give_the_one_written_version() -> None:
    version = cliconventions.__version__
    assert version[0].isdigit()
    for package in (openprose, vlp, vpp, plsp):
        assert package.__version__ is version, package.__name__


def test_pyproject_takes_the_version_from_the_source() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"]
    assert "version" in project["project"]["dynamic"]
    attr = project["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "cliconventions.__version__"
    assert setuptools_version(ROOT) == cliconventions.__version__


def test_setuptools_reads_the_source_file_itself(tmp_path: Path) -> None:
    """A different number in a copy of the source is the copy's version: setuptools reads the
    file (without importing it: this process has the real module loaded)."""
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    package = tmp_path / "src" / "cliconventions"
    package.mkdir(parents=True)
    source = (ROOT / "src" / "cliconventions" / "__init__.py").read_text()
    written = f'__version__ = "{cliconventions.__version__}"'
    assert source.count(written) == 1
    (package / "__init__.py").write_text(source.replace(written, '__version__ = "9.8.7"'))
    assert setuptools_version(tmp_path) == "9.8.7"


@pytest.mark.parametrize("tool", TOOLS)
def test_each_command_prints_it(tool: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", TOOLS[tool], "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout == f"{tool} {cliconventions.__version__}\n"

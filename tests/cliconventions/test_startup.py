"""Start-up of the four command lines stays cheap: `--version` and `--help` load only what
they print, so a heavy import added at the top of a CLI or package fails here rather than
silently costing every completion script and editor call (bench/cli_startup.py measures it).

Each case runs in a fresh interpreter, as the console script starts it, and lists the heavy
modules left in ``sys.modules`` afterwards."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

TOOLS = {"prose": "openprose.cli", "vlp": "vlp.cli", "vpp": "vpp.cli", "plsp": "plsp.cli"}

# Each costs `--version` milliseconds to tens of milliseconds of CPU; none is needed to print
# a version number.
NOT_FOR_VERSION = (
    "aiohttp",
    "pydantic",
    "msgspec",
    "orjson",
    "rich",
    "yaml",
    "importlib.metadata",
    "typing",
    "dataclasses",
    "asyncio",
    "pathlib",
)
# `--help` builds every command's options; even so, no network stack, models or settings files.
NOT_FOR_HELP = ("aiohttp", "pydantic", "rich", "yaml", "importlib.metadata")

_PROBE = """
import sys
from {module} import main
try:
    code = main({args!r})
except SystemExit as exit_:
    code = exit_.code
heavy = [name for name in {heavy!r} if name in sys.modules]
sys.stderr.write(repr((code, heavy)))
"""


def loaded_after(module: str, args: list[str], heavy: tuple[str, ...]) -> tuple[object, list[str]]:
    """Exit code of ``main(args)`` in a fresh interpreter and which of ``heavy`` it loaded."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(module=module, args=args, heavy=heavy)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    code, loaded = ast.literal_eval(done.stderr)
    return code, loaded


@pytest.mark.parametrize("tool", TOOLS)
def test_version_loads_none_of_the_heavy_modules(tool: str) -> None:
    assert loaded_after(TOOLS[tool], ["--version"], NOT_FOR_VERSION) == (0, [])


@pytest.mark.parametrize("tool", TOOLS)
def test_help_loads_no_network_stack_or_models(tool: str) -> None:
    assert loaded_after(TOOLS[tool], ["--help"], NOT_FOR_HELP) == (0, [])


@pytest.mark.parametrize("package", ["vlp", "vpp", "plsp"])
def test_importing_a_protocol_package_loads_none_of_its_modules(package: str) -> None:
    probe = (
        f"import sys, {package}\n"
        f"print(sorted(m for m in sys.modules if m.startswith('{package}.')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"


def test_parse_with_plsp_loads_no_aiohttp() -> None:
    """aiohttp (0.2 s of start-up) is for webhooks and URL fetches only."""
    code, loaded = loaded_after("plsp.cli", ["parse", "S{$t:75;}S"], ("aiohttp",))
    assert (code, loaded) == (0, [])

"""One conventions test for the four command lines: prose, vlp, vpp, plsp. Each is started as
a real process, as the console script starts it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cliconventions import subcommands
from vpp.footer import build_footer

TOOLS = {"prose": "openprose.cli", "vlp": "vlp.cli", "vpp": "vpp.cli", "plsp": "plsp.cli"}
ESCAPE = "\x1b["


def run(
    tool: str, *args: str, stdin: str | None = None, cwd: Path | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    environment.update(env)
    return subprocess.run(
        [sys.executable, "-m", TOOLS[tool], *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=environment,
        timeout=60,
        check=False,
    )


@pytest.fixture
def samples(tmp_path: Path) -> dict[str, tuple[list[str], Path]]:
    """Per tool: a command that reads a file, and a file for it (one with findings)."""
    program = tmp_path / "p.prose"
    program.write_text('sesion "Hello"\n')
    message = tmp_path / "m.ndjson"
    message.write_text('{"id": "MSG-1", "protocol": "VLP/1.1"}\n')
    transcript = tmp_path / "t.txt"
    transcript.write_text(
        f"User: !<q>\nAssistant: <o>\nbody\n"
        f"{build_footer('q', 1, cycle=1, locus='default', version='1.4')}\n"
    )
    trace = tmp_path / "trace.ndjson"
    trace.write_text('{"cycle": 1}\n')
    return {
        "prose": (["check"], program),
        "vlp": (["validate"], message),
        "vpp": (["check"], transcript),
        "plsp": (["check"], trace),
    }


@pytest.mark.parametrize("tool", TOOLS)
def test_version(tool: str) -> None:
    done = run(tool, "--version")
    assert done.returncode == 0 and done.stderr == ""
    name, version = done.stdout.split()
    assert name == tool and version[0].isdigit()


@pytest.mark.parametrize("tool", TOOLS)
def test_a_mistyped_subcommand_is_a_usage_error_naming_the_likely_one(tool: str) -> None:
    typo = {"prose": "chek", "vlp": "valdate", "vpp": "chek", "plsp": "chek"}[tool]
    done = run(tool, typo)
    assert done.returncode == 2 and done.stdout == ""
    intended = {"prose": "check", "vlp": "validate", "vpp": "check", "plsp": "check"}[tool]
    assert f"did you mean '{intended}'?" in done.stderr


@pytest.mark.parametrize("tool", TOOLS)
def test_dash_reads_stdin_like_a_file(
    tool: str, samples: dict[str, tuple[list[str], Path]]
) -> None:
    command, path = samples[tool]
    from_file = run(tool, *command, str(path))
    from_stdin = run(tool, *command, "-", stdin=path.read_text())
    assert from_file.returncode == from_stdin.returncode != 0  # the samples have findings
    shown = {"prose": "<stdin>", "vlp": "<stdin>", "vpp": "-", "plsp": "-"}[tool]
    assert from_stdin.stdout + from_stdin.stderr == (from_file.stdout + from_file.stderr).replace(
        str(path), shown
    )


JSON_COMMANDS = {"prose": ["check"], "vlp": ["validate"], "vpp": ["check"]}


@pytest.mark.parametrize("tool", JSON_COMMANDS)
def test_json_is_format_json(tool: str, samples: dict[str, tuple[list[str], Path]]) -> None:
    command, path = samples[tool]
    spelled_out = run(tool, *command, "--format", "json", str(path))
    short = run(tool, *command, "--json", str(path))
    assert short.returncode == spelled_out.returncode == 1
    assert json.loads(short.stdout) == json.loads(spelled_out.stdout)


def _parsers() -> list[tuple[str, str, object]]:
    from openprose.cli import COMMANDS, command_parser
    from plsp.cli import build_parser as plsp_parser
    from vlp.cli import build_parser as vlp_parser
    from vpp.cli import _parser as vpp_parser

    found: list[tuple[str, str, object]] = [
        ("prose", name, command_parser(name)) for name in COMMANDS
    ]
    for tool, build in (("vlp", vlp_parser), ("vpp", vpp_parser), ("plsp", plsp_parser)):
        found += [(tool, name, sub) for name, sub in subcommands(build()).items()]
    return found


def test_every_subcommand_takes_q_v_and_json_beside_format() -> None:
    for tool, name, parser in _parsers():
        options = parser._option_string_actions  # type: ignore[attr-defined]
        assert {"-q", "-v"} <= set(options), f"{tool} {name}"
        fmt = options.get("--format")
        if fmt is not None and "json" in (fmt.choices or ()):
            assert "--json" in options, f"{tool} {name} has --format json but no --json"


@pytest.mark.parametrize("tool", TOOLS)
def test_quiet_prints_less(tool: str, samples: dict[str, tuple[list[str], Path]]) -> None:
    command, path = samples[tool]
    normal = run(tool, *command, str(path))
    quiet = run(tool, *command, "-q", str(path))
    verbose = run(tool, *command, "-v", str(path))
    assert normal.returncode == quiet.returncode == verbose.returncode
    assert len(quiet.stdout) <= len(normal.stdout) <= len(verbose.stdout)
    if tool != "plsp":  # plsp check has no summary to leave out
        assert len(quiet.stdout) < len(normal.stdout)


@pytest.mark.parametrize("tool", TOOLS)
def test_no_color_wins_over_force_color(
    tool: str, samples: dict[str, tuple[list[str], Path]]
) -> None:
    command, path = samples[tool]
    done = run(tool, *command, str(path), NO_COLOR="1", FORCE_COLOR="1")
    assert ESCAPE not in done.stdout + done.stderr


def test_force_color_colours_diagnostics_even_in_a_pipe(
    samples: dict[str, tuple[list[str], Path]],
) -> None:
    command, path = samples["prose"]
    assert ESCAPE not in run("prose", *command, str(path)).stdout  # a pipe: plain
    coloured = run("prose", *command, str(path), FORCE_COLOR="1").stdout
    assert f"{ESCAPE}31mE004{ESCAPE}0m" in coloured


@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts(tool: str, shell: str) -> None:
    done = run(tool, "--completion", shell)
    assert done.returncode == 0, done.stderr
    script = done.stdout
    first = {"prose": "check", "vlp": "validate", "vpp": "check", "plsp": "parse"}[tool]
    assert first in script
    assert tool == "plsp" or ("-l json" if shell == "fish" else "--json") in script
    if shell == "fish":
        assert f"complete -c {tool} -n '__fish_use_subcommand' -a {first}" in script
        return
    assert f"complete -o default -F _{tool}_completion {tool}" in script
    if shell == "bash" and shutil.which("bash"):
        completed = subprocess.run(
            [
                "bash",
                "-c",
                (
                    f"{script}\nCOMP_WORDS=({tool} {first[:3]}); COMP_CWORD=1; "
                    f"_{tool}_completion; echo ${{COMPREPLY[@]}}"
                ),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        assert completed.stdout.split() == [first]

"""Random command lines for the four CLIs: a subcommand (or a random word), options drawn from
the command's own argparse tree (so the fuzzer reaches past the option parser), and values
from a pool of hostile ones — missing files, folders, binary and empty files, `-`, numbers
that are not numbers, NUL, escapes, huge values — plus good files, in random order. Every
command must end with a documented exit status (README, "Exit status") and never print a
traceback or "internal error".

Commands that wait for a person or serve until stopped (`prose lsp`, `prose ui`, `vpp chat`,
`vlp ask`) are left out; stdin is empty. No provider is configured but `scripted:`."""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cliconventions.completion import tree_of
from tests.fuzz.prose_corpus import FUZZ, ROOT, in_folder

DOCUMENTED = {0, 1, 2, 3, 4}  # 3/4: vlp gate's hold and halt, prose run's budget and waiting
LEFT_OUT = {"prose": {"lsp", "ui"}, "vpp": {"chat"}, "vlp": {"ask"}, "plsp": set()}


def _mains() -> dict[str, tuple[Callable[[list[str]], int], dict[str, list[str]]]]:
    """Each tool: its entry point and, per subcommand, the long options it takes."""
    from openprose.cli import full_parser
    from openprose.cli import main as prose_main
    from plsp.cli import build_parser as plsp_parser
    from plsp.cli import main as plsp_main
    from vlp.cli import build_parser as vlp_parser
    from vlp.cli import main as vlp_main
    from vpp.cli import _parser as vpp_parser
    from vpp.cli import main as vpp_main

    found = {}
    for tool, main, parser in [
        ("prose", prose_main, full_parser()),
        ("vlp", vlp_main, vlp_parser()),
        ("vpp", vpp_main, vpp_parser()),
        ("plsp", plsp_main, plsp_parser()),
    ]:
        tree = tree_of(parser)
        commands = {
            name: [word for word, _ in words]
            for name, words in tree.items()
            if name and name not in LEFT_OUT[tool]
        }
        found[tool] = (main, commands)
    return found


MAINS = _mains()

# Relative to the fuzzing folder (made by the fixture below).
GOOD_FILES = [
    "ok.prose",
    "rules.yaml",
    "in.json",
    "cases.jsonl",
    "audit.ndjson",
    "transcript.txt",
    "thermostat.yaml",
    "\udcff.prose",
]
BAD_FILES = ["missing.prose", "folder", "binary.bin", "empty.txt", "folder/", "/dev/null", "-"]
VALUES = [
    "", "0", "-1", "1", "2", "65536", "99999999999999999999", "nan", "inf", "-inf", "1e400",
    "0.5", "none", "x", "json", "text", "bash", "1.5", "v1.5", "1.4", "E024", "e999",
    "topic=owls", "=", "a=", "sonnet=openai:gpt-4.1", "sonnet", "scripted:rules.yaml",
    "scripted:", "replay:missing.jsonl", "anthropic", "openai:", "local", "nope",
    "claim", "--", "-q", "-v", "--json", "--help-me", "\x1b[2J", "\u202e",
    "\udcff", "é🦉", "a" * 5000, "../../..", "~", "http://[::1", "S{$a:1;}S", "!<q>",
    "INSTR: x", "{}", "[]", '{"a": 1}',
]  # fmt: skip


@pytest.fixture(scope="module")
def playground(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("argv")
    (folder / "ok.prose").write_text('input topic: "t"\noutput a = session "About {topic}"\n')
    (folder / "rules.yaml").write_text('default: "ok"\n')
    (folder / "in.json").write_text('{"topic": "owls"}')
    (folder / "cases.jsonl").write_text('{"topic": "a"}\n{"nope": 1}\nnot json\n')
    (folder / "audit.ndjson").write_text(
        (ROOT / "tests" / "vlp" / "transcripts" / "audit_thread.ndjson").read_text()
    )
    (folder / "transcript.txt").write_text(
        (ROOT / "tests" / "vpp" / "transcripts" / "caching_1_5.txt").read_text()
    )
    (folder / "thermostat.yaml").write_text(
        (ROOT / "examples" / "plsp" / "thermostat.yaml").read_text()
    )
    (folder / "\udcff.prose").write_text('session "x"\n')  # a name that is not UTF-8
    (folder / "folder").mkdir()
    (folder / "binary.bin").write_bytes(b"\xff\xfe\x00\x9c\x1b[2J" * 50)
    (folder / "empty.txt").write_bytes(b"")
    return folder


@st.composite
def command_lines(draw: st.DrawFn) -> tuple[str, list[str]]:
    tool = draw(st.sampled_from(sorted(MAINS)))
    commands = MAINS[tool][1]
    argv: list[str] = []
    if draw(st.integers(0, 9)):
        command = draw(st.sampled_from(sorted(commands)))
        argv.append(command)
        options = commands[command]
    else:  # a mistyped command, or options alone
        argv.append(draw(st.sampled_from(["", "chek", "--version", "-q", "x"])))
        options = []
    words = st.one_of(
        st.sampled_from(options or ["--json"]),
        st.sampled_from(GOOD_FILES + BAD_FILES),
        st.sampled_from(VALUES),
        # as argv can be: no NUL, surrogates only as escapes of undecodable bytes (VALUES)
        st.text(
            st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=12
        ),
    )
    argv += draw(st.lists(words, max_size=7))
    return tool, argv


def _run(tool: str, argv: list[str]) -> tuple[int, str]:
    main = MAINS[tool][0]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit_:  # argparse in vlp, vpp and plsp exits on usage errors
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 2)
    return code, out.getvalue() + err.getvalue()


@FUZZ
@given(line=command_lines())
def test_any_command_line_ends_with_a_documented_status(
    playground: Path, line: tuple[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    tool, argv = line
    for name in list(os.environ):
        if name.startswith(("PROSE_", "OPENAI_", "ANTHROPIC_", "OTEL_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("PROSE_REGISTRY", "http://127.0.0.1:9")  # no network
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"")))
    with in_folder(playground):
        code, said = _run(tool, argv)
    assert "Traceback (most recent call last)" not in said, (tool, argv, said[-3000:])
    assert "internal error" not in said, (tool, argv, said[-3000:])
    assert code in DOCUMENTED, (tool, argv, code, said[-3000:])

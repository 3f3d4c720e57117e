"""A mistyped option name gets "did you mean" in all four commands, among the options of
the subcommand given (`cliconventions.ConventionalParser.parse_args`)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

import pytest

from cliconventions import ConventionalParser
from openprose.cli import main as prose_main
from plsp.cli import main as plsp_main
from vlp.cli import main as vlp_main
from vpp.cli import main as vpp_main

MAINS: dict[str, Callable[[Sequence[str]], int]] = {
    "prose": prose_main,  # type: ignore[dict-item]
    "vlp": vlp_main,
    "vpp": vpp_main,
    "plsp": plsp_main,
}


@pytest.mark.parametrize(
    ("tool", "argv", "hint"),
    [
        (
            "prose",
            ["run", "x.prose", "--provder", "local"],
            "did you mean '--provider' for '--provder'?",
        ),
        ("prose", ["check", "--fromat=json", "x.prose"], "did you mean '--format' for '--fromat'?"),
        ("vlp", ["validate", "--lenght-limit", "x"], None),
        (
            "vlp",
            ["new", "claim", "--sendr", "a", "--content", "x"],
            "did you mean '--sender' for '--sendr'?",
        ),
        ("vpp", ["check", "--lenent", "t.txt"], "did you mean '--lenient' for '--lenent'?"),
        ("plsp", ["run", "l.yaml", "--dryrun"], "did you mean '--dry-run' for '--dryrun'?"),
    ],
)
def test_a_mistyped_option_names_the_likely_one(
    tool: str,
    argv: list[str],
    hint: str | None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    try:
        code = MAINS[tool](argv)
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    assert code == 2
    err = capsys.readouterr().err
    # An unknown option, or a required one missing because it was mistyped (`vlp new`).
    assert "unrecognized arguments: " in err or "arguments are required: " in err
    if hint is None:
        assert "did you mean" not in err  # nothing close: no guess
    else:
        assert f"({hint})" in err


def test_only_the_given_subcommands_options_are_guessed() -> None:
    parser = ConventionalParser(prog="tool")
    commands = parser.add_subparsers(dest="command", parser_class=ConventionalParser)
    commands.add_parser("one").add_argument("--colour")
    commands.add_parser("two").add_argument("--provider")
    messages: list[str] = []

    def record(message: str) -> None:
        messages.append(message)
        raise SystemExit(2)

    parser.error = record  # type: ignore[method-assign]
    with pytest.raises(SystemExit):
        parser.parse_args(["one", "--provder"])
    assert messages == ["unrecognized arguments: --provder"]  # `--provider` is two's
    with pytest.raises(SystemExit):
        parser.parse_args(["two", "--provder", "--zzz"])
    assert messages[1] == (
        "unrecognized arguments: --provder --zzz (did you mean '--provider' for '--provder'?)"
    )


def test_a_parse_without_unknown_options_is_argparses() -> None:
    parser = ConventionalParser(prog="tool")
    parser.add_argument("--provider")
    assert parser.parse_args(["--provider", "x"]) == argparse.Namespace(provider="x")

"""`prose run` and `prose resume` read their flags once, into one `RunOptions`."""

from __future__ import annotations

import pytest

from openprose.cli import command_parser
from openprose.cli.run import run_options
from openprose.session.options import DEFAULT_OPTIONS, RunOptions

FLAGS = [
    "--provider", "replay:run.jsonl",
    "--model", "sonnet=openai:gpt-4.1",
    "--model", "haiku=local:small",
    "--max-concurrency", "3",
    "--evaluator", "haiku",
    "--record", "out.jsonl",
    "--max-sessions", "4",
    "--max-cost", "none",
    "--yes",
    "--permission-mode", "plan",
    "--offline",
]  # fmt: skip


@pytest.mark.parametrize(("command", "first"), [("run", "main.prose"), ("resume", "RUN")])
def test_every_flag_lands_in_the_options(command: str, first: str) -> None:
    args = command_parser(command).parse_args([first, *FLAGS])
    assert run_options(args) == RunOptions(
        provider="replay:run.jsonl",
        models=("sonnet=openai:gpt-4.1", "haiku=local:small"),
        max_concurrency=3,
        evaluator="haiku",
        record="out.jsonl",
        budgets={"max_sessions": 4, "max_cost": None},
        yes=True,
        permission_mode="plan",
        offline=True,
        interactive=True,
    )


def test_without_flags_only_the_terminal_differs_from_the_library_defaults() -> None:
    args = command_parser("run").parse_args(["main.prose"])
    assert run_options(args) == RunOptions(interactive=True)
    assert not DEFAULT_OPTIONS.interactive  # the Python API and batches never ask at a terminal

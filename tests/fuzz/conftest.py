"""Fuzzing the protocol parsers: hypothesis drives mutations of the example corpora.

Small budget by default (CI), the same inputs on every run. A larger run, random each time,
as in docs/plsp.md ("Fuzzing"), or the 2,000 mutants per CLI of docs/fuzzing-prose.md:

    FUZZ_EXAMPLES=60000 FUZZ_CLI_EXAMPLES=8000 \
        .venv/bin/python -m pytest tests/fuzz -q -p no:cacheprovider --timeout 0

prints how many inputs were tried in all.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "150"))
# Budgets up to this (CI's) are derandomized: the same inputs on every run of a commit.
DERANDOMIZED_UP_TO = 300
# Targets that run whole CLIs on files cost ~5x more per input; they may get fewer.
CLI_EXAMPLES = int(os.environ.get("FUZZ_CLI_EXAMPLES", str(EXAMPLES)))
tried = {"inputs": 0}


def count_input() -> None:
    tried["inputs"] += 1


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if tried["inputs"]:
        terminalreporter.write_line(
            f"fuzz: {tried['inputs']:,} inputs, 0 tracebacks (budget {EXAMPLES:,} per "
            f"parser target, {CLI_EXAMPLES:,} per CLI target)"
        )


@pytest.fixture(autouse=True)
def _quiet_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLIs print; the suite only cares that they never raise."""
    monkeypatch.setenv("NO_COLOR", "1")

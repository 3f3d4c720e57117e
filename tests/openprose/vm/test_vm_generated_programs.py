"""Every program the grammar admits runs: random syntax trees (the printer round trip's
strategy) that check without error are run on the scripted provider, with a small session
budget. Whatever they do, the run ends as a run does — succeeded, failed with the program's
own error, or stopped by the budget — and never with an exception out of the VM or a hang."""

from __future__ import annotations

import os
import tempfile
from dataclasses import replace
from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings

from openprose import nodes as n
from openprose.checker import check
from openprose.parser import parse_text
from openprose.printer import print_program
from tests.openprose.test_roundtrip_props import programs
from tests.openprose.vm.conftest import FAST, run, spy

RUNS = settings(
    max_examples=int(os.environ.get("PROSE_FUZZ_EXAMPLES", "60")) // 2,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)


@RUNS
@given(programs)
def test_a_program_that_checks_clean_runs_to_an_end(program: n.Program) -> None:
    text = print_program(program)
    parsed = parse_text(text)
    assume(parsed.ok and not [d for d in check(parsed) if d.is_error])
    with tempfile.TemporaryDirectory() as folder:
        result = run(Path(folder), text, spy(default="ok"), config=replace(FAST, max_sessions=40))
    assert result.status in ("succeeded", "failed", "stopped"), (text, result)
    if result.status == "failed":
        assert result.error and "internal error" not in result.error, (text, result.error)

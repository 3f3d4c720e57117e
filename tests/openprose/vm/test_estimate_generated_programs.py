"""Random programs (the printer round trip's syntax trees) that check clean are estimated and
run on the scripted provider: the model calls the run made lie within the estimate's bounds
(the lower one when the run ended well)."""

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
from openprose.vm.estimates import estimate_program
from tests.openprose.test_roundtrip_props import programs
from tests.openprose.vm.conftest import FAST, run, spy

RUNS = settings(
    max_examples=int(os.environ.get("PROSE_FUZZ_EXAMPLES", "60")) // 4,  # each one is a run
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
# The evaluator's answers, so that conditions, choices and filters are decided, not failed.
EVALUATOR = [
    {"match": "Pick exactly one option", "answer": '{"option": 1, "reason": "scripted"}'},
    {"match": "Condition:|Filter verdict", "answer": '{"verdict": true, "reason": "scripted"}'},
]


@RUNS
@given(programs)
def test_a_generated_run_makes_as_many_calls_as_its_estimate_allows(program: n.Program) -> None:
    text = print_program(program)
    parsed = parse_text(text)
    assume(parsed.ok and not [d for d in check(parsed) if d.is_error])
    config = replace(FAST, max_sessions=60)
    found = estimate_program(parsed.program, config=config)
    with tempfile.TemporaryDirectory() as folder:
        result = run(Path(folder), text, spy(EVALUATOR, default="ok"), config=config)
    made = result.usage.get("requests_sent", 0)
    high = found.sessions.high
    assert high is None or made <= high, (text, made, found.sessions)
    if result.status == "succeeded":
        assert made >= found.sessions.low, (text, made, found.sessions)

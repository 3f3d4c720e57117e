"""How a suite's outcomes are shown: pytest's terminal summary, JUnit XML for CI, and JSON."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import Any, TextIO

from openprose.testing.case import CaseOutcome
from openprose.testing.suite import SuiteResult

__all__ = ["FileLine", "json_report", "junit_xml", "summary"]

LETTER = {"passed": ".", "failed": "F", "error": "E"}
WORD = {"passed": "PASSED", "failed": "FAILED", "error": "ERROR"}
WIDTH = 80


class FileLine:
    """Prints each file's outcomes as they arrive: `path ..F` (or one line per case, `-v`)."""

    def __init__(self, out: TextIO, verbosity: int) -> None:
        self.out = out
        self.verbosity = verbosity

    def __call__(self, test_file: Any, outcomes: list[CaseOutcome]) -> None:
        if self.verbosity < 0:
            return
        if self.verbosity > 0:
            for outcome in outcomes:
                marks = " (cassette recorded)" if outcome.recorded else ""
                print(f"{outcome.id} {WORD[outcome.outcome]}{marks}", file=self.out)
        else:
            shown = outcomes[0].id.rpartition("::")[0] if outcomes else str(test_file.path)
            letters = "".join(LETTER[o.outcome] for o in outcomes)
            print(f"{shown} {letters}", file=self.out)
        self.out.flush()


def _rule(title: str, fill: str = "=") -> str:
    side = max(3, (WIDTH - len(title) - 2) // 2)
    return f"{fill * side} {title} {fill * side}"


def summary(result: SuiteResult, out: TextIO) -> None:
    """The failures in full, then one line of counts, as pytest ends."""
    bad = [o for o in result.outcomes if o.outcome != "passed"]
    if bad:
        print(_rule("FAILURES"), file=out)
        for outcome in bad:
            print(_rule(outcome.id, "_"), file=out)
            for failure in outcome.failures:
                print(failure, file=out)
            if outcome.kept_run is not None:
                print(f"the run is kept: prose show {outcome.kept_run}", file=out)
    counts = [
        f"{result.count(kind)} {kind if kind != 'error' else 'errors'}"
        for kind in ("failed", "passed", "error")
        if result.count(kind)
    ]
    recorded = sum(1 for o in result.outcomes if o.recorded)
    if recorded:
        counts.append(f"{recorded} cassette(s) recorded")
    if result.deselected:
        counts.append(f"{result.deselected} deselected")
    print(_rule(f"{', '.join(counts) or 'no cases'} in {result.seconds:.2f}s"), file=out)


def json_report(result: SuiteResult) -> dict[str, Any]:
    return {
        "summary": {
            "passed": result.count("passed"),
            "failed": result.count("failed"),
            "errors": result.count("error"),
            "deselected": result.deselected,
            "seconds": round(result.seconds, 3),
        },
        "cases": [_case_json(o) for o in result.outcomes],
    }


def _case_json(outcome: CaseOutcome) -> dict[str, Any]:
    return {
        "id": outcome.id,
        "file": str(outcome.file.path),
        "name": outcome.case.name,
        "line": outcome.case.line,
        "outcome": outcome.outcome,
        "seconds": round(outcome.seconds, 3),
        "failures": list(outcome.failures),
        "stale_cassette": outcome.stale,
        "recorded": outcome.recorded,
        "kept_run": None if outcome.kept_run is None else str(outcome.kept_run),
    }


def junit_xml(result: SuiteResult) -> bytes:
    """JUnit XML as CI systems read it: one testsuite, a testcase per case."""
    suite = ET.Element(
        "testsuite",
        name="prose test",
        tests=str(len(result.outcomes)),
        failures=str(result.count("failed")),
        errors=str(result.count("error")),
        skipped="0",
        time=f"{result.seconds:.3f}",
    )
    for outcome in result.outcomes:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=outcome.id.rpartition("::")[0],
            name=outcome.case.name,
            time=f"{outcome.seconds:.3f}",
        )
        if outcome.outcome != "passed":
            tag = "failure" if outcome.outcome == "failed" else "error"
            detail = ET.SubElement(case, tag, message=_first_line(outcome.failures))
            detail.text = "\n".join(outcome.failures)
    root = ET.Element("testsuites")
    root.append(suite)
    text: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return text + b"\n"


def _first_line(failures: Sequence[str]) -> str:
    return failures[0].splitlines()[0] if failures else ""


def json_text(result: SuiteResult) -> str:
    return json.dumps(json_report(result), indent=2, ensure_ascii=False) + "\n"

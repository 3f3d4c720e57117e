"""Every shipped example, and every program of the published-style conformance corpus, runs
on a scripted provider whose one answer fits every judgment."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.openprose.vm.conftest import EXAMPLES, run_example

NEEDS_REGISTRY = {"program-composition.prose"}
THROWS = {"error-handling.prose": "Precondition not met"}


def _run(vm: Any, folder: Path, name: str) -> Any:
    result = run_example(vm, folder, name)
    assert vm.events(result, "session_finished")
    return result


@pytest.mark.parametrize(
    "name", sorted(p.name for p in EXAMPLES.glob("*.prose") if p.name not in NEEDS_REGISTRY)
)
def test_example_runs(vm: Any, name: str) -> None:
    result = _run(vm, EXAMPLES, name)
    if name in THROWS:
        assert result.status == "failed" and THROWS[name] in (result.error or "")
    else:
        assert result.status == "succeeded", result.error


PUBLISHED = Path(__file__).resolve().parents[1] / "conformance" / "published_style"
# Programs that call registry programs (`use "@handle/…"`) need the network to run.
PUBLISHED_NEEDS_REGISTRY = {"02-use-input-output.prose", "13-program-calls.prose"}


@pytest.mark.parametrize(
    "name",
    sorted(p.name for p in PUBLISHED.glob("*.prose") if p.name not in PUBLISHED_NEEDS_REGISTRY),
)
def test_published_style_program_runs(vm: Any, name: str) -> None:
    result = _run(vm, PUBLISHED, name)
    assert result.status == "succeeded", result.error

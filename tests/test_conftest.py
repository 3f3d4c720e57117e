"""The suite's hypothesis profile: derandomized unless the random search is asked for."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.conftest import _profile

ROOT = Path(__file__).resolve().parents[1]


def test_this_run_is_derandomized_unless_the_search_was_asked_for(
    pytestconfig: pytest.Config,
) -> None:
    # pytest's --hypothesis-profile is loaded after the conftest: it wins, even under CI.
    asked = pytestconfig.getoption("hypothesis_profile") or _profile(os.environ)
    assert settings.default.derandomize == (asked == "suite")
    if asked == "suite":
        assert settings.default.database is None  # an old .hypothesis/ changes nothing
    # Timing decides nothing: no deadline, no "too slow" health check.
    assert settings.default.deadline is None
    assert HealthCheck.too_slow in settings.default.suppress_health_check


@pytest.mark.parametrize(
    ("environ", "profile"),
    [
        ({}, "suite"),
        ({"CI": "true"}, "suite"),
        ({"HYPOTHESIS_PROFILE": "search"}, "search"),
        ({"CI": "true", "HYPOTHESIS_PROFILE": "search"}, "suite"),  # CI is always the same
        ({"CI": "1", "HYPOTHESIS_PROFILE": "search"}, "suite"),
        ({"CI": "false", "HYPOTHESIS_PROFILE": "search"}, "search"),
    ],
)
def test_the_profile_each_environment_selects(environ: dict[str, str], profile: str) -> None:
    assert _profile(environ) == profile


def test_an_unknown_profile_is_a_usage_error_naming_the_choices() -> None:
    with pytest.raises(
        pytest.UsageError, match="HYPOTHESIS_PROFILE='serch': use one of suite, search"
    ):
        _profile({"HYPOTHESIS_PROFILE": "serch"})


def test_the_search_profile_draws_new_inputs() -> None:
    """A process loading the conftest with the search asked for is random and remembers."""
    code = (
        "import tests.conftest; from hypothesis import settings; "
        "print(settings.default.derandomize, settings.default.max_examples, "
        "settings.default.database is not None)"
    )
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["HYPOTHESIS_PROFILE"] = "search"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["False", "1000", "True"]

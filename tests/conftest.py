"""Settings for the whole suite: hypothesis profiles.

`suite` (the default, and what CI runs): derandomized, so the README's test command gives
the same result on every run of a commit, on every machine; no example database, so a
`.hypothesis/` folder left by an earlier run changes nothing. Every failure hypothesis ever
found is kept as an explicit `@example` on its test.

`search` (`HYPOTHESIS_PROFILE=search`, or pytest's `--hypothesis-profile=search`): random
inputs every run, ten times the default number of examples, failures remembered in
`.hypothesis/` and replayed first. docs/testing.md shows the command.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# No per-example deadline and no "too slow" health check: these machines are shared and a
# loaded core makes any input slow. Both are timing assertions, which a derandomized run
# would still fail or pass by chance; hangs are caught by pytest-timeout instead.
# Both profiles start from hypothesis's own defaults, not from the `ci` profile it loads by
# itself when it sees a CI variable: what a profile does is said here.
_defaults = settings.get_profile("default")
_untimed = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("suite", _defaults, derandomize=True, database=None, **_untimed)
settings.register_profile("search", _defaults, max_examples=1000, print_blob=True, **_untimed)
PROFILES = ("suite", "search")


def _profile(environ: dict[str, str] | os._Environ[str]) -> str:
    """CI=true always runs `suite`, whatever else the environment asks: a CI job that
    wants the random search says so on its command line (`--hypothesis-profile=search`)."""
    if environ.get("CI", "").strip().lower() in ("1", "true", "yes"):
        return "suite"
    name = environ.get("HYPOTHESIS_PROFILE") or "suite"
    if name not in PROFILES:
        raise pytest.UsageError(f"HYPOTHESIS_PROFILE={name!r}: use one of {', '.join(PROFILES)}")
    return name


settings.load_profile(_profile(os.environ))

# A suite started as a background job of a non-interactive shell (`.ci/run ... &`) inherits
# SIGINT ignored, and so would every command the tests start: the Ctrl-C tests would see
# commands that cannot be interrupted. A handled signal is reset to the default at exec.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True, scope="session")
def _approval_key_apart(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Approval answers are sealed with a per-user key ($XDG_STATE_HOME/openprose): the
    suite's lives in a temporary folder, never in the real ~/.local/state."""
    state: Path = tmp_path_factory.mktemp("xdg-state")
    os.environ["XDG_STATE_HOME"] = str(state)

"""Settings for the whole suite."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# No per-example deadline: these machines are shared and a loaded core makes any input slow.
# A deadline is a timing assertion; hangs are caught by pytest-timeout instead.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")


@pytest.fixture(autouse=True, scope="session")
def _approval_key_apart(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Approval answers are sealed with a per-user key ($XDG_STATE_HOME/openprose): the
    suite's lives in a temporary folder, never in the real ~/.local/state."""
    state: Path = tmp_path_factory.mktemp("xdg-state")
    os.environ["XDG_STATE_HOME"] = str(state)

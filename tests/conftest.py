"""Settings for the whole suite."""

from __future__ import annotations

from hypothesis import settings

# No per-example deadline: these machines are shared and a loaded core makes any input slow.
# A deadline is a timing assertion; hangs are caught by pytest-timeout instead.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")

"""Shared helpers: check .prose source text the way `prose check` does."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from openprose.checker import check
from openprose.diagnostics import Diagnostic
from openprose.parser import parse_text

Check = Callable[..., list[Diagnostic]]


def check_source(source: str, path: str = "<string>", **options: Any) -> list[Diagnostic]:
    return check(parse_text(source, path), **options)


@pytest.fixture
def checked() -> Check:
    return check_source


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty project directory (its own .prose/ is created by tests that need memory)."""
    return tmp_path

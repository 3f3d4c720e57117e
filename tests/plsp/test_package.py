"""The package's names load from their modules on first use (start-up stays cheap: no
aiohttp until an action needs it) and are the same objects an eager import gave."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import plsp
from plsp import _MODULES

_HOME = {name: module for module, names in _MODULES.items() for name in names}


@pytest.mark.parametrize("name", plsp.__all__)
def test_each_exported_name_is_its_modules_own(name: str) -> None:
    assert getattr(plsp, name) is getattr(importlib.import_module(f"plsp.{_HOME[name]}"), name)


def test_every_exported_name_has_a_home() -> None:
    assert sorted(_HOME) == sorted(plsp.__all__)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'verified'"):
        plsp.verified  # noqa: B018 - the attribute access is the test


def test_verify_stays_the_function_when_its_module_is_imported_first() -> None:
    """Importing the submodule plsp.verify binds it as `plsp.verify`; the function must win,
    as it did when the package imported it eagerly."""
    probe = (
        "import sys\n"
        "import plsp.verify\n"
        "import plsp\n"
        "print(plsp.verify is sys.modules['plsp.verify'].verify)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split() == ["True"]


def test_star_import_gives_every_name() -> None:
    namespace: dict[str, object] = {}
    exec("from plsp import *", namespace)  # noqa: S102 - a fixed statement
    assert set(plsp.__all__) <= set(namespace)

"""The package's names load from their modules on first use (start-up stays cheap) and are
the same objects an eager import gave."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import vlp
from vlp import _MODULES

_HOME = {name: module for module, names in _MODULES.items() for name in names}


@pytest.mark.parametrize("name", vlp.__all__)
def test_each_exported_name_is_its_modules_own(name: str) -> None:
    assert getattr(vlp, name) is getattr(importlib.import_module(f"vlp.{_HOME[name]}"), name)


def test_every_exported_name_has_a_home() -> None:
    assert sorted(_HOME) == sorted(vlp.__all__)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'gates'"):
        vlp.gates  # noqa: B018 - the attribute access is the test


def test_gate_stays_the_function_when_its_module_is_imported_first() -> None:
    """Importing the submodule vlp.gate binds it as `vlp.gate`; the function must win, as it
    did when the package imported it eagerly."""
    probe = (
        "import sys\n"
        "from vlp.gate import Verdict\n"
        "import vlp\n"
        "print(vlp.gate is sys.modules['vlp.gate'].gate, vlp.Verdict is Verdict)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split() == ["True", "True"]

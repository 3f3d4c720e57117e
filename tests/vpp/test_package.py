"""The package's names load from their modules on first use (start-up stays cheap) and are
the same objects an eager import gave."""

from __future__ import annotations

import importlib

import pytest

import vpp
from vpp import _MODULES

_HOME = {name: module for module, names in _MODULES.items() for name in names}


@pytest.mark.parametrize("name", vpp.__all__)
def test_each_exported_name_is_its_modules_own(name: str) -> None:
    assert getattr(vpp, name) is getattr(importlib.import_module(f"vpp.{_HOME[name]}"), name)


def test_every_exported_name_has_a_home() -> None:
    assert sorted(_HOME) == sorted(vpp.__all__)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'parse_commands'"):
        vpp.parse_commands  # noqa: B018 - the attribute access is the test

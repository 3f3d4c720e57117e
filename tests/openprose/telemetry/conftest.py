"""Traces are tested on runs of the VM: its `vm` fixture (a project folder and a scripted
provider) serves here too."""

from __future__ import annotations

from tests.openprose.vm.conftest import vm

__all__ = ["vm"]

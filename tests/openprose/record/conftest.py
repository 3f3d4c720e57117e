"""The run record's tests run programs as the VM's tests do (the `vm` fixture)."""

from tests.openprose.vm.conftest import vm

__all__ = ["vm"]

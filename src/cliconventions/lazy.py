"""A protocol package's names, each loaded from its submodule on first use: `import vlp`,
`vlp --version` and `vlp --help` load none of the submodules they do not use."""

from __future__ import annotations

import sys
from importlib import import_module
from types import ModuleType

TYPE_CHECKING = False  # `typing` costs start-up time that `--version` should not pay
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any


def lazy_names(
    package: str, modules: Mapping[str, tuple[str, ...]], *functions: str
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of `package`, which exports `modules`' names (module
    -> names). `functions`: names that are both a submodule and a function of it exported by
    the package; importing the submodule would bind the module over the function, so the
    function stays bound (`vlp.gate(thread)` works whatever was imported first)."""
    home = {name: module for module, names in modules.items() for name in names}
    namespace = vars(sys.modules[package])

    def getattr_(name: str) -> Any:
        if name == "__version__":  # the distribution's, written once
            from cliconventions import __version__

            return __version__
        module = home.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f"{package}.{module}"), name)
        namespace[name] = value  # once loaded, an ordinary attribute
        return value

    def dir_() -> list[str]:
        return sorted([*namespace, *home])

    if functions:

        class _Package(ModuleType):
            def __setattr__(self, name: str, value: object) -> None:
                if name in functions and isinstance(value, ModuleType):
                    value = getattr(value, name)
                super().__setattr__(name, value)

        sys.modules[package].__class__ = _Package
    return getattr_, dir_

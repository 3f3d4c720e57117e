"""What lets a session act: built-in tools, the permissions that bound them, the sandbox
for shell commands, approvals for `prompt`, and skills. The tool loop that drives them
lives in `openprose.vm.toolloop`."""

from importlib import import_module
from typing import Any

# Each name is looked up in these modules' `__all__`, loading them in order only when a name
# is first used: importing one light module of the package (approvals, permissions, skills)
# does not load the toolbox, the sandbox and the web tool.
_MODULES = ("approvals", "permissions", "skills", "sandbox", "toolbox")


def __getattr__(name: str) -> Any:
    for home in _MODULES:
        module = import_module(f"{__name__}.{home}")
        if name in module.__all__:
            return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

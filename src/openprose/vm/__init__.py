"""The OpenProse VM: a deterministic asyncio interpreter whose only AI judgments are model calls.

`run_program` and `resume_run` (in `openprose.vm.runner`) are the public entry points; they are
re-exported lazily here so `import openprose.vm` stays cheap.
"""

from __future__ import annotations

TYPE_CHECKING = False  # `typing` is the most of what the export helper imports with this
if TYPE_CHECKING:
    from typing import Any

__all__ = ["RunResult", "VMConfig", "resume_run", "run_program"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from openprose.vm import runner

        return getattr(runner, name)
    raise AttributeError(name)

"""The event loop a batch runs on: uvloop's, where it is installed (Linux and macOS).

A case of a batch is one model call and its run record; the event loop's own work (ready
callbacks, the selector, the sockets' reads and writes) is a tenth of its instructions on
asyncio's loop written in Python, and uvloop does it in C: 1.165 M -> 1.049 M instructions
a case (decisions.md, batch33d). Only `prose batch`, `openprose.batch()` and the batch's
worker processes use it: a `prose run` is a handful of calls, where the loop is not what
costs, and every other command keeps the loop the tests and the debuggers know.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["batch_loop_factory", "run_batch_loop"]

T = TypeVar("T")


def batch_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's loop maker; None (asyncio's own loop) where uvloop is not installed: it has
    no Windows build, and pyproject.toml installs it everywhere else."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def run_batch_loop(coroutine: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(coroutine)` on the batch's event loop."""
    with asyncio.Runner(loop_factory=batch_loop_factory()) as runner:
        return runner.run(coroutine)

"""How deep a program may nest, and the Python call depth every stage needs for that.

Blocks and brackets may nest ``MAX_NESTING`` levels; deeper input is E115 (the parser stops
there). Every stage that walks the tree — parser, checker, compiler and printer, the VM, the
language server's index — recurses once or more per level, so it runs inside
`deep_recursion`, which raises Python's recursion limit to what 1,000 levels need. The limit
is raised while any caller holds it and restored when the last one leaves: runs of a batch
interleave on one event loop, so one of them ending must not lower it under another.
"""

from __future__ import annotations

import sys
import threading
from contextlib import AbstractContextManager

MAX_NESTING = 1000
# Python frames per nesting level: ~10 in the parser, a few coroutines in the VM (a
# statement, its body, its handler); every statement kind runs at 1,000 levels under this.
RECURSION_LIMIT = 20 * MAX_NESTING + 2000

_lock = threading.Lock()
_holders = 0
_restore_to = 0


class _DeepRecursion:
    """The context manager `deep_recursion` returns: a class, not a generator, because a
    batch enters it once per run (~1 us against ~3.4 us a `contextmanager` costs)."""

    __slots__ = ()

    def __enter__(self) -> None:
        global _holders, _restore_to
        with _lock:
            if _holders == 0:
                _restore_to = sys.getrecursionlimit()
                sys.setrecursionlimit(max(_restore_to, RECURSION_LIMIT))
            _holders += 1

    def __exit__(self, *_: object) -> None:
        global _holders
        with _lock:
            _holders -= 1
            if _holders == 0:
                sys.setrecursionlimit(_restore_to)


_DEEP_RECURSION = _DeepRecursion()  # holds no state of its own: one for every caller


def deep_recursion() -> AbstractContextManager[None]:
    """Python's recursion limit at least `RECURSION_LIMIT` for the duration."""
    return _DEEP_RECURSION

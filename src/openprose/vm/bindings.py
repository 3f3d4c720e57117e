"""Every binding a program makes, written to the run's `bindings/` with the source that made it."""

from __future__ import annotations

import functools
from typing import Any

from openprose.record.runstore import RunStore
from openprose.vm.frame import Ctx
from openprose.vm.values import Value, render_chunks

_SOURCE_LINES = 12  # of the statement, shown with its binding


class Bindings:
    def __init__(self, store: RunStore, source_text: str) -> None:
        self.store = store
        self.text = source_text

    def write(self, name: str, kind: str, node: Any, value: Value, ctx: Ctx) -> None:
        if ctx.in_pipeline and kind == "let" and name.startswith("anon_"):
            return
        source = self._source_of(node)
        # an answer is written as it is; anything else in pieces, made on the writer thread
        text = value if isinstance(value, str) else render_chunks(value)
        self.store.write_binding(name, kind, source, text, ctx.execution_id or None)

    def _source_of(self, node: Any) -> str:
        span = getattr(node, "span", None)
        if span is None:
            return ""
        return _source(self.text, span.start, span.end)


@functools.lru_cache(maxsize=1024)
def _source(text: str, start: int, end: int) -> str:
    """A statement's source as its bindings show it; the same for every run of a program
    (a batch writes the same statement's bindings thousands of times)."""
    lines = text[start:end].splitlines()
    shown = lines[:_SOURCE_LINES]
    return "\n".join(shown + (["..."] if len(lines) > _SOURCE_LINES else []))

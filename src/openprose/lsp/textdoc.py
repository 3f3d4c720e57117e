"""The editor's text of an open document, changed in place of pygls's whole-text rewrite.

pygls applies an incremental change by splitting the whole text into lines and writing them
all out again: ~3 ms per keystroke on a 10,000-line program, on the event loop (a burst of 30
keystrokes: ~90 ms). `LineTableDocument` keeps a table of where each line starts and splices
the text once; the table is also the program's line table (`SourceFile.line_starts`), so an
analysis need not count the lines again.

The result is pygls's, character for character: pygls's position codec converts the change's
client positions (UTF-16 units...) against a view of the one line it reads, with all its
clamping. pygls splits lines at every character `str.splitlines` breaks at; the table knows
only ``\\n``, so a text holding any other (``\\r``, form feed, U+2028...) is changed by
pygls's own code — a rare, slower path, never a different result.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from typing import Any, overload

from lsprotocol import types as lsp
from pygls.workspace import TextDocument, Workspace

# Every line break of `str.splitlines` but "\n".
_OTHER_BREAKS = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def line_starts(text: str) -> list[int]:
    """Where each ``\\n``-separated line of ``text`` starts (`SourceFile.line_starts`)."""
    return [0, *(match.end() for match in re.finditer("\n", text))]


class LineTable:
    """Line starts, changed edit by edit without rewriting all those after each edit.

    The starts at index ``pivot`` and after are stored ``growth`` too small: a keystroke adds
    its growth to that one number (and to the few entries between the old pivot and its
    own), not to the thousands of lines after it. `snapshot` settles them all, once per
    analysis."""

    __slots__ = ("_growth", "_pivot", "_starts")

    def __init__(self, starts: list[int]) -> None:
        self._starts = starts
        self._pivot = len(starts)
        self._growth = 0

    def __len__(self) -> int:
        return len(self._starts)

    def start(self, line: int) -> int:
        found = self._starts[line]
        return found + self._growth if line >= self._pivot else found

    def count_at_or_before(self, offset: int) -> int:
        """How many lines start at or before ``offset``."""
        starts, pivot = self._starts, self._pivot
        found = bisect_right(starts, offset, 0, pivot)
        if found < pivot:
            return found
        return bisect_right(starts, offset - self._growth, pivot)

    def replace(self, head: int, tail: int, inserted: list[int], growth: int) -> None:
        """Lines ``head`` to ``tail`` (excluded) now start at ``inserted``; those after
        ``tail`` moved by ``growth``."""
        starts, pivot, pending = self._starts, self._pivot, self._growth
        if pending:
            if pivot < head:  # starts before the edit must be stored as they are
                starts[pivot:head] = [s + pending for s in starts[pivot:head]]
            elif pivot > tail:  # starts after it will carry the pending growth too
                starts[tail:pivot] = [s - pending for s in starts[tail:pivot]]
        starts[head:tail] = inserted
        self._pivot = head + len(inserted)
        self._growth = pending + growth

    def snapshot(self) -> tuple[int, ...]:
        """Every line start, settled."""
        if self._growth:
            pivot = self._pivot
            self._starts[pivot:] = map(self._growth.__add__, self._starts[pivot:])
            self._growth = 0
        self._pivot = len(self._starts)
        return tuple(self._starts)


class _LineView(Sequence[str]):
    """``text.splitlines(True)`` of a text breaking lines at ``\\n`` only, built one line
    at a time as the position codec asks for it."""

    def __init__(self, text: str, table: LineTable) -> None:
        self._text = text
        self._table = table
        # splitlines has no empty last line: none after a final "\n", none for "".
        self._count = len(table) - (1 if not text or text.endswith("\n") else 0)

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._count))]
        if index < 0:
            index += self._count
        if not 0 <= index < self._count:
            raise IndexError(index)
        return self._text[self._table.start(index) : self._end(index)]

    def offset(self, line: int, column: int) -> int:
        """The offset of ``column`` in ``line``; a column past the line (the codec may give
        one for the last line) is its end, as pygls's slicing of that line has it."""
        return min(self._table.start(line) + column, self._end(line))

    def _end(self, line: int) -> int:
        """Where ``line`` ends, its line break included."""
        return self._table.start(line + 1) if line + 1 < len(self._table) else len(self._text)


class LineTableDocument(TextDocument):
    """A `TextDocument` that keeps its line table and applies changes by one splice."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._table: LineTable | None = None  # None: not known (worked out on need)
        self._settled: tuple[int, ...] | None = None  # the last snapshot, while current
        self._plain: bool | None = None  # the text breaks lines at "\n" alone (None: not known)

    @property
    def line_starts(self) -> tuple[int, ...]:
        """Where each ``\\n``-separated line of the current text starts."""
        if self._settled is None:
            self._settled = self._line_table().snapshot()
        return self._settled

    def _line_table(self) -> LineTable:
        if self._table is None:
            self._table = LineTable(line_starts(self.source))
        return self._table

    def apply_change(self, change: lsp.TextDocumentContentChangeEvent) -> None:
        self._settled = None
        if (
            isinstance(change, lsp.TextDocumentContentChangePartial)
            and self._is_sync_kind_incremental
            and self._source is not None
            and _OTHER_BREAKS.search(change.text) is None
            and self._breaks_at_newlines_only()
        ):
            self._splice(change)
            return
        super().apply_change(change)  # pygls's way; the table is worked out again on need
        self._table = self._plain = None

    def _breaks_at_newlines_only(self) -> bool:
        if self._plain is None:
            self._plain = _OTHER_BREAKS.search(self.source) is None
        return self._plain

    def _splice(self, change: lsp.TextDocumentContentChangePartial) -> None:
        """pygls's ``_apply_incremental_change``, with its positions read from the table.
        Only called while the text breaks lines at ``\\n`` alone; the change adds no other
        break."""
        text = self._source or ""
        table = self._line_table()
        view = _LineView(text, table)
        if len(view) == 0:  # pygls: an edit "at the very end" of an empty document
            self._source = text + change.text
            self._table = None
            return
        found = self._position_codec.range_from_client_units(view, change.range)
        if found.end.line < found.start.line:
            return  # pygls writes every line unchanged and drops the new text
        start = view.offset(found.start.line, found.start.character)
        end = view.offset(found.end.line, found.end.character)
        self._source = text[:start] + change.text + text[end:]
        if end < start:  # on one line, the end before the start: pygls repeats text
            self._table = None
            return
        inserted = [start + m.end() for m in re.finditer("\n", change.text)]
        # Starts at or before the edit stay; those after it move (one at `end` was removed).
        table.replace(
            table.count_at_or_before(start),
            table.count_at_or_before(end),
            inserted,
            len(change.text) - (end - start),
        )


class ProseWorkspace(Workspace):
    """pygls's workspace whose text documents are `LineTableDocument`s."""

    def _create_text_document(
        self,
        doc_uri: str,
        source: str | None = None,
        version: int | None = None,
        language_id: str | None = None,
    ) -> TextDocument:
        return LineTableDocument(
            doc_uri,
            source=source,
            version=version,
            language_id=language_id,
            sync_kind=self._sync_kind,
            position_codec=self._position_codec,
        )

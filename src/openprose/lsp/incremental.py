"""Re-parsing only the top-level statements an edit touched.

On a 10,000-line program a full parse (scanner included) is ~75 % of an analysis; a keystroke
touches one statement. `reparse` finds the edit (the text the old and new versions do not
share), re-parses the top-level statements around it — with the one before and the one after,
so an edit that joins or splits statements is seen — and reuses every other statement of the
previous parse, its spans moved by the edit's length. The chunk is parsed after as many empty
lines as precede it, so its lines, and the line numbers some messages quote, are the file's.

It declines (returns None: parse it all) whenever reuse could differ from a full parse: the
chunk does not end cleanly (an unterminated string or bracket reaches its end), a reused
diagnostic after the edit would quote a moved line number, an error before the chunk (the
scanner may have been left inside a bracket or a string), or too many diagnostics.

The statements after the chunk are copied with their spans moved — or, given the previous
parse's `SpanTable` (its owner gives it up), kept as they are with their spans moved in place.
"""

from __future__ import annotations

import dataclasses
import gc
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from types import MemberDescriptorType
from typing import Any, TypeVar, cast

from openprose import nodes as n
from openprose.lsp._spanshift import move as _move  # in C, built with the package
from openprose.parser import ParseResult, parse
from openprose.scanner import MAX_DIAGNOSTICS
from openprose.source import SourceFile, Span

T = TypeVar("T")

_QUOTES_LINE = re.compile(r"\bline \d")
# Below this size a full parse is as quick as the bookkeeping.
_SMALL = 20_000


def reparse(
    previous: ParseResult, source: SourceFile, *, table: SpanTable | None = None
) -> ParseResult | None:
    """The parse of ``source``, reusing ``previous`` (a parse of an earlier version) outside
    the statements the edit touched; None when only a full parse is safe.

    With ``table`` (``previous``'s spans, `SpanTable.of` its statements), the statements
    after the edit are moved where they are instead of copied, and the table updated to the
    new parse: ``previous`` then describes nothing (its later spans are the new text's), so
    only its sole owner may do this. Nothing is changed when it returns None."""
    # Copying the reused statements allocates tens of thousands of objects and frees none:
    # collection passes meanwhile are pure overhead (as in `openprose.parser.parse`).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _reparse(previous, source, table)
    finally:
        if collecting:
            if gc.get_freeze_count() == 0:  # the new tree is long-lived: straight to the
                gc.freeze()  # oldest generation, not scanned by the young ones first
                gc.unfreeze()
            gc.enable()


def _reparse(
    previous: ParseResult, source: SourceFile, table: SpanTable | None
) -> ParseResult | None:
    old, new = previous.source.text, source.text
    if len(new) < _SMALL or len(previous.diagnostics) >= MAX_DIAGNOSTICS // 2:
        return None
    prefix = _common_prefix(old, new)
    suffix = _common_suffix(old, new, min(len(old), len(new)) - prefix)
    edit_start, edit_end = prefix, len(old) - suffix  # the edit replaced old[edit_start:edit_end]
    delta = len(new) - len(old)
    body = previous.program.body
    starts = [s.span.start for s in body]
    # The statements touched, plus one on each side; the one after also proves the chunk
    # ended cleanly (re-parsed, it must come out the same).
    first = max(bisect_right(starts, edit_start) - 2, 0)
    witness = bisect_left(starts, edit_end + 1)  # the first statement after the edit
    tail = witness + 1  # the first statement reused after the chunk
    if first >= len(body) or body[first].span.column != 1:
        return None
    region_start = 0 if first == 0 else _line_start(old, starts[first])
    region_end = _line_start(old, starts[tail]) if tail < len(body) else len(old)
    if region_end < edit_end or region_start > edit_start:
        return None
    if tail < len(body) and body[tail].span.column != 1:
        return None
    if any(d.is_error and d.span.start < region_start for d in previous.diagnostics):
        return None  # after an error the scanner may be inside a bracket at the chunk's start
    lines_before = old.count("\n", 0, region_start)
    chunk_text = new[region_start : region_end + delta]
    chunk = parse(SourceFile.from_text(chunk_text, source.path))
    shift = region_start  # chunk offsets -> file offsets
    chunk_end = len(chunk_text)
    if any(_QUOTES_LINE.search(d.message) for d in chunk.diagnostics):
        return None  # the line number it quotes is the chunk's
    if any(d.span.end >= chunk_end for d in chunk.diagnostics):
        return None  # something left open at the chunk's end: a full parse may read on
    reused = witness < len(body)
    if reused:
        last = chunk.program.body[-1] if chunk.program.body else None
        if (
            last is None
            or last != body[witness]
            or last.span.start + shift != starts[witness] + delta
        ):
            return None  # the statement after the edit did not come out the same
    line_delta = new.count("\n", region_start, region_end + delta) - old.count(
        "\n", region_start, region_end
    )
    kept_after = [d for d in previous.diagnostics if d.span.start >= region_end]
    if kept_after and line_delta:
        return None  # their messages may quote line numbers
    diagnostics = (
        [d for d in previous.diagnostics if d.span.end <= region_start]
        + [_moved(d, shift, lines_before) for d in chunk.diagnostics]
        + [_moved(d, delta, line_delta) for d in kept_after]
    )
    if len(diagnostics) != len(previous.diagnostics) - _count_in(
        previous, region_start, region_end
    ) + len(chunk.diagnostics):
        return None  # a diagnostic straddled the region's edge
    if table is not None and len(table.bounds) != len(body) + 1:
        return None  # not this parse's table
    comments = previous.program.comments
    comments_after = tuple(c for c in comments if c.span.start >= region_end)
    # The witness is the old one: re-parsed at the chunk's end, its block's span would end
    # there rather than where the next statement starts.
    middle = tuple(
        _moved(s, shift, lines_before) for s in chunk.program.body[: -1 if reused else None]
    )
    # Every reason to decline is behind us: from here on `previous` may be changed.
    if table is None:
        after = _moved(body[witness:], delta, line_delta)
        comments_after = _moved(comments_after, delta, line_delta)
    else:
        after = body[witness:]
        moved = SpanTable.of(comments_after)  # comments are few: listed afresh
        _shift_tail(moved, 0, delta, line_delta)
        _shift_tail(table, witness, delta, line_delta)
        _replace_middle(table, first, witness, middle)
    statements = body[:first] + middle + after
    program = n.Program(
        span=source.span(0, len(new)),
        body=statements,
        comments=(
            tuple(c for c in comments if c.span.end <= region_start)
            + tuple(_moved(c, shift, lines_before) for c in chunk.program.comments)
            + comments_after
        ),
        path=previous.program.path,
    )
    diagnostics.sort(key=lambda d: (d.span.start, d.span.end))
    return ParseResult(program=program, diagnostics=tuple(diagnostics), source=source)


def _count_in(previous: ParseResult, start: int, end: int) -> int:
    return sum(1 for d in previous.diagnostics if d.span.end > start and d.span.start < end)


def _line_start(text: str, offset: int) -> int:
    return text.rfind("\n", 0, offset) + 1


def _common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix (binary search on slices: C-speed comparisons)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _common_suffix(a: str, b: str, limit: int) -> int:
    """Length of the longest common suffix, at most ``limit``."""
    low, high = 0, limit
    while low < high:
        middle = (low + high + 1) // 2
        if a[len(a) - middle :] == b[len(b) - middle :]:
            low = middle
        else:
            high = middle - 1
    return low


# --- moving spans --------------------------------------------------------------------------
# A reused statement after the edit is copied with its spans moved. That copy is most of a
# keystroke's cost on a large program, so each node class gets a mover compiled for its
# fields (a generic getattr loop was ~3x slower, the dataclass's own __init__ ~1.5x).

Mover = Callable[[Any, int, int], Any]
_MOVERS: dict[type, Mover | None] = {}  # None: the type holds no span (str, int, an enum...)


def _moved(value: T, offset: int, lines: int) -> T:
    """``value`` (a node, a diagnostic, a tuple of them...) with every span moved by
    ``offset`` characters and ``lines`` lines; columns do not move (edits before a reused
    statement end on an earlier line, since statements start their lines)."""
    if offset == 0 and lines == 0:
        return value
    mover = _mover(type(value))
    return value if mover is None else cast(T, mover(value, offset, lines))


def _mover(kind: type) -> Mover | None:
    if kind in _MOVERS:
        return _MOVERS[kind]
    mover: Mover | None = None
    if kind is Span:
        mover = _move_span
    elif kind is tuple:
        mover = _move_tuple
    elif dataclasses.is_dataclass(kind):
        mover = _compile(kind, [(f.name, str(f.type)) for f in dataclasses.fields(kind)])
    _MOVERS[kind] = mover
    return mover


# Annotations of fields that never hold a span: copied as they are, without a lookup.
_PLAIN = re.compile(
    r"(str|int|bool|float|Literal\[[^]]*\]|tuple\[str, \.\.\.\])( \| (int|float|None))*"
)


def _move_tuple(items: tuple[Any, ...], offset: int, lines: int) -> tuple[Any, ...]:
    if not items:
        return items
    moved = []
    for item in items:
        kind = type(item)
        mover = _MOVERS[kind] if kind in _MOVERS else _mover(kind)
        moved.append(item if mover is None else mover(item, offset, lines))
    return tuple(moved)


def _compile(kind: type, fields: list[tuple[str, str]]) -> Mover:
    """A function copying a ``kind`` with its fields moved. The fields are set through their
    slot descriptors (a frozen dataclass's ``__init__`` goes through ``object.__setattr__``,
    ~3x slower); a ``Span`` field is moved in line, a plain one (text, number) copied."""
    lines = ["def move(value, offset, lines):", "    copy = new(kind)"]
    scope: dict[str, Any] = {
        "new": object.__new__,
        "kind": kind,
        "movers": _MOVERS,
        "missing": _MISSING,
        "find": _mover,
        "Span": Span,
        **{f"set_{name}": _setter(Span, name) for name in _SPAN_FIELDS},
    }
    for number, (name, annotation) in enumerate(fields):
        setter = f"set_{number}"
        scope[setter] = _setter(kind, name)
        if annotation == "Span":  # the commonest field: moved here, without a call
            lines += [
                f"    span = value.{name}",
                "    moved = new(Span)",
                "    set_start(moved, span.start + offset)",
                "    set_end(moved, span.end + offset)",
                "    set_line(moved, span.line + lines)",
                "    set_column(moved, span.column)",
                "    set_end_line(moved, span.end_line + lines)",
                "    set_end_column(moved, span.end_column)",
                f"    {setter}(copy, moved)",
            ]
        elif _PLAIN.fullmatch(annotation):
            lines.append(f"    {setter}(copy, value.{name})")
        else:
            lines += [
                f"    item = value.{name}",
                "    mover = movers.get(type(item), missing)",
                "    if mover is missing:",
                "        mover = find(type(item))",
                f"    {setter}(copy, item if mover is None else mover(item, offset, lines))",
            ]
    lines.append("    return copy")
    exec("\n".join(lines), scope)  # noqa: S102  # our own text: field names of our node classes
    move: Mover = scope["move"]
    return move


def _setter(kind: type, name: str) -> Callable[[Any, Any], None]:
    """Sets the field ``name`` of a ``kind``, frozen or not: its slot's descriptor when it
    has slots, else ``object.__setattr__``."""
    slot = kind.__dict__.get(name)
    if isinstance(slot, MemberDescriptorType):
        return slot.__set__
    return lambda value, item: object.__setattr__(value, name, item)


_MISSING = object()
_SPAN_FIELDS = ("start", "end", "line", "column", "end_line", "end_column")
_SET_SPAN = tuple(_setter(Span, name) for name in _SPAN_FIELDS)


def _move_span(span: Span, offset: int, lines: int) -> Span:
    start, end, line, column, end_line, end_column = _SET_SPAN
    moved = object.__new__(Span)
    start(moved, span.start + offset)
    end(moved, span.end + offset)
    line(moved, span.line + lines)
    column(moved, span.column)
    end_line(moved, span.end_line + lines)
    end_column(moved, span.end_column)
    return moved


# --- moving spans in place ---------------------------------------------------------------
# When a parse is ours alone, the statements after an edit keep their nodes: only their
# spans change, set through the slots. A table lists every span object of the program, each
# once, statement by statement, so moving them is one flat loop over the tail of a list, not
# a walk of the tree (a span may be shared by two nodes: a branch and its session).


class SpanTable:
    """Every span object under a program's statements, each once, in statement order;
    ``bounds[i]`` is where statement ``i``'s spans start (``bounds[-1] == len(spans)``)."""

    __slots__ = ("bounds", "spans")

    def __init__(self, spans: list[Span], bounds: list[int]) -> None:
        self.spans = spans
        self.bounds = bounds

    @classmethod
    def of(cls, statements: tuple[object, ...]) -> SpanTable:
        spans: list[Span] = []
        bounds = [0]
        seen: set[int] = set()
        for statement in statements:
            _collect(statement, spans, seen)
            bounds.append(len(spans))
        return cls(spans, bounds)


def _shift_tail(table: SpanTable, statement: int, offset: int, lines: int) -> None:
    """Move the spans of statement ``statement`` and every one after it."""
    first = table.bounds[statement]
    _move(table.spans, first, _OFFSET_SLOTS, offset)
    if lines:
        _move(table.spans, first, _LINE_SLOTS, lines)


# The slots' descriptors of a span's offsets and of its lines, for the C move.
_OFFSET_SLOTS = (Span.__dict__["start"], Span.__dict__["end"])
_LINE_SLOTS = (Span.__dict__["line"], Span.__dict__["end_line"])


def _replace_middle(table: SpanTable, first: int, witness: int, chunk: tuple[n.Stmt, ...]) -> None:
    """Statements ``first`` to ``witness`` (excluded) are now ``chunk``'s."""
    fresh = SpanTable.of(chunk)
    head, tail = table.bounds[first], table.bounds[witness]
    table.spans[head:tail] = fresh.spans
    growth = len(fresh.spans) - (tail - head)
    table.bounds[first:] = [head + b for b in fresh.bounds[:-1]] + [
        b + growth for b in table.bounds[witness:]
    ]


Collector = Callable[[Any, list[Span], set[int]], None]
_COLLECTORS: dict[type, Collector | None] = {}


def _collect(value: object, spans: list[Span], seen: set[int]) -> None:
    collector = _collector(type(value))
    if collector is not None:
        collector(value, spans, seen)


def _collector(kind: type) -> Collector | None:
    if kind in _COLLECTORS:
        return _COLLECTORS[kind]
    collector: Collector | None = None
    if kind is Span:
        collector = _collect_span
    elif kind is tuple:
        collector = _collect_tuple
    elif dataclasses.is_dataclass(kind):
        collector = _compile_collector(
            kind, [(f.name, str(f.type)) for f in dataclasses.fields(kind)]
        )
    _COLLECTORS[kind] = collector
    return collector


def _collect_span(span: Span, spans: list[Span], seen: set[int]) -> None:
    if id(span) not in seen:
        seen.add(id(span))
        spans.append(span)


def _collect_tuple(items: tuple[Any, ...], spans: list[Span], seen: set[int]) -> None:
    for item in items:
        kind = type(item)
        collector = _COLLECTORS[kind] if kind in _COLLECTORS else _collector(kind)
        if collector is not None:
            collector(item, spans, seen)


def _compile_collector(kind: type, fields: list[tuple[str, str]]) -> Collector:
    """A function listing the spans under a ``kind``: a ``Span`` field in line, a plain
    field (text, number) skipped, any other through its value's collector."""
    lines = ["def collect(value, spans, seen):"]
    scope: dict[str, Any] = {"collectors": _COLLECTORS, "missing": _MISSING, "find": _collector}
    for name, annotation in fields:
        if annotation == "Span":
            lines += [
                f"    span = value.{name}",
                "    if id(span) not in seen:",
                "        seen.add(id(span))",
                "        spans.append(span)",
            ]
        elif not _PLAIN.fullmatch(annotation):
            lines += [
                f"    item = value.{name}",
                "    collector = collectors.get(type(item), missing)",
                "    if collector is missing:",
                "        collector = find(type(item))",
                "    if collector is not None:",
                "        collector(item, spans, seen)",
            ]
    if len(lines) == 1:
        lines.append("    return None")
    exec("\n".join(lines), scope)  # noqa: S102  # our own text: field names of our node classes
    collect: Collector = scope["collect"]
    return collect

"""Folding ranges: every construct that spans lines (blocks, sessions with properties,
multi-line strings, pipelines), and runs of comment lines."""

from __future__ import annotations

import dataclasses
from typing import Any

from lsprotocol import types as lsp

from openprose.lsp.documents import Analysis
from openprose.source import Span


def folding_ranges(analysis: Analysis) -> list[lsp.FoldingRange]:
    ends: dict[int, int] = {}  # start line (0-based) -> the farthest last line folded from it
    for span in _node_spans(analysis.result.program.body):
        last = span.end_line - 1 if span.end_column > 1 else span.end_line - 2
        start = span.line - 1
        if last > start:
            ends[start] = max(ends.get(start, start), last)
    ranges = [lsp.FoldingRange(start, end) for start, end in sorted(ends.items())]
    ranges += _comment_runs(analysis)
    return ranges


def _node_spans(body: tuple[Any, ...]) -> list[Span]:
    found: list[Span] = []
    pending = list(body)
    while pending:  # a loop, not recursion: nesting may be 1,000 levels deep
        item = pending.pop()
        if isinstance(item, tuple):
            pending.extend(item)
        elif dataclasses.is_dataclass(item) and not isinstance(item, type):
            span = getattr(item, "span", None)
            if isinstance(span, Span) and span.end_line > span.line:
                found.append(span)
            for field in dataclasses.fields(item):
                value = getattr(item, field.name)
                if field.name in _BODIES and value:
                    found.append(_body_span(value))
                if field.name != "span":
                    pending.append(value)
    return found


# Fields holding a statement body; `else:` and `finally:` have no node of their own.
_BODIES = frozenset(("else_body", "finally_body"))


def _body_span(body: tuple[Any, ...]) -> Span:
    """From the header line above the body's first statement to its last statement's end."""
    first, last = body[0].span, body[-1].span
    return Span(first.start, last.end, first.line - 1, 1, last.end_line, last.end_column)


def _comment_runs(analysis: Analysis) -> list[lsp.FoldingRange]:
    runs: list[lsp.FoldingRange] = []
    first = last = -2
    for comment in analysis.result.program.comments:
        line = comment.span.line - 1
        if line == last + 1:
            last = line
            continue
        if last > first:
            runs.append(lsp.FoldingRange(first, last, kind=lsp.FoldingRangeKind.Comment))
        first = last = line
    if last > first:
        runs.append(lsp.FoldingRange(first, last, kind=lsp.FoldingRangeKind.Comment))
    return runs

"""Mechanical fixes: apply the edits that diagnostics carry (``Diagnostic.fix``).

A fix is data — a title and non-overlapping text edits — so the same value serves
``prose check --fix`` here and an editor's quick fix later. Fixes are applied in passes: each
pass checks the text, takes every fix whose edits overlap no edit already taken, applies them
from the end of the text backwards, and checks again (a fix may let the parser see further,
or reveal a fixable problem it hid). It stops when no fix is left, when a pass changes
nothing, or after ``MAX_PASSES``. A pass that would leave more syntax errors than it found is
discarded: fixing never makes a program harder to read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from openprose.diagnostics import Diagnostic, Edit, Fix
from openprose.source import SourceFile

MAX_PASSES = 10


@dataclass(slots=True)
class FixResult:
    """The fixed text, the fixes applied (in order) and the diagnostics of the fixed text."""

    text: str
    applied: list[Fix] = field(default_factory=list)
    remaining: list[Diagnostic] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.applied)


def apply_edits(text: str, edits: list[Edit]) -> str:
    """``text`` with every edit applied; the edits must not overlap."""
    pieces: list[str] = []
    position = len(text)
    for edit in sorted(edits, key=lambda e: (e.span.start, e.span.end), reverse=True):
        pieces.append(text[edit.span.end : position])
        pieces.append(edit.text)
        position = edit.span.start
    pieces.append(text[:position])
    return "".join(reversed(pieces))


def select(diagnostics: list[Diagnostic], *, unsafe: bool = False) -> list[Fix]:
    """The fixes to apply together: in source order, each one whose edits touch no edit of
    a fix already chosen (two insertions at one point count as touching: their order would
    be a guess)."""
    chosen: list[Fix] = []
    taken: list[tuple[int, int]] = []
    for d in diagnostics:
        fix = d.fix
        if fix is None or (not fix.safe and not unsafe) or fix in chosen:
            continue
        ranges = [(e.span.start, e.span.end) for e in fix.edits]
        if any(_touch(r, t) for r in ranges for t in taken) or _self_overlap(ranges):
            continue
        chosen.append(fix)
        taken.extend(ranges)
    return chosen


def _touch(a: tuple[int, int], b: tuple[int, int]) -> bool:
    if a[0] == a[1] or b[0] == b[1]:  # an insertion: inside or at an end of the other
        return b[0] <= a[0] <= b[1] or a[0] <= b[0] <= a[1]
    return a[0] < b[1] and b[0] < a[1]


def _self_overlap(ranges: list[tuple[int, int]]) -> bool:
    return any(_touch(a, b) for i, a in enumerate(ranges) for b in ranges[i + 1 :])


def fix_source(
    source: SourceFile, *, project_dir: Path | None = None, unsafe: bool = False
) -> FixResult:
    """Apply the fixes of ``source``'s diagnostics until none is left (see the module doc)."""
    text = source.text
    diagnostics = _check(text, source.path, project_dir)
    result = FixResult(text)
    for _ in range(MAX_PASSES):
        fixes = select(diagnostics, unsafe=unsafe)
        if not fixes:
            break
        fixed = apply_edits(text, [e for fix in fixes for e in fix.edits])
        if fixed == text:
            break
        after = _check(fixed, source.path, project_dir)
        if _syntax_errors(after) > _syntax_errors(diagnostics):
            break
        text, diagnostics = fixed, after
        result.applied.extend(fixes)
    result.text = text
    result.remaining = diagnostics
    return result


def _check(text: str, path: str, project_dir: Path | None) -> list[Diagnostic]:
    from openprose.checker import check
    from openprose.parser import parse

    return check(parse(SourceFile.from_text(text, path)), project_dir=project_dir)


def _syntax_errors(diagnostics: list[Diagnostic]) -> int:
    """Errors of the scanner and the parser (codes E001-E005, E100-E139)."""
    return sum(
        1
        for d in diagnostics
        if d.is_error and (d.code <= "E005" or "E100" <= d.code <= "E139") and d.code != "E003"
    )

"""The unsafe fix for a name bound twice where the flat namespace forbids it (E019, E024,
E145, E146): the later binding gets a fresh name (`plan_2`) and so does every use of it in
its scope, so each use reads the value it read before — what runs stays the same, only the
name changes (unsafe: an output's new name is what callers see).

The program is walked once (``Uses``), however many names collide: a file of 30,000 `let v`
lines must not cost a walk per line."""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field, fields, is_dataclass
from functools import cache

from openprose import nodes as n
from openprose.checker.state import _DECLARING, Checker
from openprose.diagnostics import Edit, Fix
from openprose.scanner import MAX_DIAGNOSTICS
from openprose.source import Span

# Fields whose Name is not a variable: an agent, a block, a property's or a label's name.
_NOT_VARIABLES = {
    n.Session: ("agent",),
    n.Property: ("name",),
    n.KeywordArg: ("name",),
    n.Modifier: ("name",),
    n.DoCall: ("name", "labels"),
    n.BlockDef: ("name",),
    n.AgentDef: ("name",),
    n.ProgramCall: ("callee",),
}
# Nodes that bind body-local names: a rename stops at their body, where their name is meant.
_SCOPES = (n.ForEach, n.Repeat, n.Loop, n.CatchClause, n.PipeOp, n.BlockDef)


@dataclass(slots=True)
class Uses:
    """What the renames need to know of one program, from one walk."""

    # name -> (span of each variable use or binding, the block body it is in, if any), and
    # where each starts, in source order
    uses: dict[str, list[tuple[Span, Span | None]]] = field(default_factory=dict)
    starts: dict[str, list[int]] = field(default_factory=dict)
    # name -> where each of its bindings starts (flat or body-local), and its flat ones
    bindings: dict[str, list[int]] = field(default_factory=dict)
    flat: dict[str, list[int]] = field(default_factory=dict)
    blocks: list[Span] = field(default_factory=list)
    # a binding's start -> the part of its statement that runs before it is bound
    read_before: dict[int, Span] = field(default_factory=dict)
    scopes: list[Span] = field(default_factory=list)
    rejected: list[Span] = field(default_factory=list)  # statements the parser rejected


_last: tuple[n.Program, Uses] | None = None  # the program checked last, and its index


def uses_of(program: n.Program) -> Uses:
    """The index of ``program`` (kept for the program checked last: its collisions ask in
    turn; read once into a local, so a check on another thread cannot swap it midway)."""
    global _last
    last = _last
    if last is None or last[0] is not program:
        last = _last = (program, _index(program))
    return last[1]


def rename_fix(ck: Checker, name: n.Name, *, within: Span | None = None) -> Fix | None:
    """Rename the binding ``name`` and every variable use of its identifier after it (up
    to ``within``'s end, or the program's); None when a use sits in a block body the binding
    is not in (it runs wherever the block is called, so which binding it reads is not known
    here), or a statement the parser rejected mentions the name (its uses are not in the
    tree; its own fix runs first, the rename in the next pass)."""
    program, text = ck.program, ck.source_text
    if program is None or text[name.span.start : name.span.end] != name.id:
        return None
    if len(ck.diagnostics) >= MAX_DIAGNOSTICS:
        return None  # past the limit the diagnostic is only counted: no fix to build
    index = uses_of(program)
    ident = name.id
    start, end = name.span.start, within.end if within is not None else len(text)
    later = index.flat.get(ident, [])
    following = bisect_right(later, start)
    if within is None and following < len(later):
        end = later[following]  # the next `let`/`output` of the name is renamed on its own
    before = index.read_before.get(start)
    home = next((b for b in index.blocks if b.start <= start < b.end), None)
    edits: list[Edit] = []
    uses, starts = index.uses.get(ident, []), index.starts.get(ident, [])
    for span, block in uses[bisect_left(starts, start) : bisect_left(starts, end)]:
        if before is not None and before.start <= span.start < before.end:
            continue  # `let plan = session … context: plan` reads the earlier `plan`
        if block is not None and block != home:
            return None
        edits.append(Edit(span, ""))
    word = re.compile(rf"(?<![\w-]){re.escape(ident)}(?![\w-])")
    if not edits or any(
        start <= r.start < end and word.search(text, r.start, r.end) for r in index.rejected
    ):
        return None
    fresh = _fresh(ck, index, name)
    renamed = tuple(Edit(e.span, fresh) for e in edits)
    return Fix(f"rename this `{ident}` and its uses to `{fresh}`", renamed, safe=False)


def scope_of(ck: Checker, name: n.Name) -> Span | None:
    """The span of the loop, `catch`, pipe or block that binds ``name`` (a body-local name):
    the innermost one around it."""
    if ck.program is None:
        return None
    at = name.span.start
    around = [s for s in uses_of(ck.program).scopes if s.start <= at < s.end]
    return max(around, key=lambda s: s.start, default=None)


def _fresh(ck: Checker, index: Uses, name: n.Name) -> str:
    """`plan_2` for the second binding of `plan`, `plan_3` for the third (an agent of the
    name counts as the first), so the fixes of one pass never pick the same name; never a
    name the program already has."""
    ident = name.id
    taken = {*index.bindings, *index.uses, *ck.agents, *ck.blocks, *ck.imports}
    earlier = bisect_left(index.bindings.get(ident, []), name.span.start)
    joiner = "-" if "-" in ident else "_"
    count = max(2, 1 + earlier + (ident in ck.agents))
    while f"{ident}{joiner}{count}" in taken:
        count += 1
    return f"{ident}{joiner}{count}"


def _index(program: n.Program) -> Uses:
    index = Uses()
    stack: list[tuple[object, Span | None]] = [(program, None)]
    while stack:
        node, block = stack.pop()
        if isinstance(node, tuple):
            stack.extend((item, block) for item in node)
            continue
        if isinstance(node, n.Name):
            index.uses.setdefault(node.id, []).append((node.span, block))
            continue
        if isinstance(node, n.Interpolation):
            start = node.span.start + 1  # after the `{`
            span = _shift(node.span, start, start + len(node.name))
            index.uses.setdefault(node.name, []).append((span, block))
            continue
        if not is_dataclass(node):
            continue
        _note_bindings(index, node)
        if isinstance(node, n.Invalid):
            index.rejected.append(node.span)
        if isinstance(node, _SCOPES):
            index.scopes.append(node.span)
        if isinstance(node, n.BlockDef):
            index.blocks.append(node.span)
        inner = node.span if isinstance(node, n.BlockDef) else block
        kind: type = type(node)
        for attr in _walked(kind):
            value = getattr(node, attr)
            if (
                isinstance(node, n.Property)
                and node.name.id != "context"
                and isinstance(value, n.Name)
            ):
                continue  # `model: sonnet`: a word of the property, no variable
            stack.append((value, inner))
    for ident, found in index.uses.items():
        found.sort(key=lambda use: use[0].start)
        index.starts[ident] = [span.start for span, _ in found]
    for starts in (*index.bindings.values(), *index.flat.values()):
        starts.sort()
    return index


@cache
def _walked(kind: type) -> tuple[str, ...]:
    """The fields of a node type that may hold variables."""
    skipped = _NOT_VARIABLES.get(kind, ())
    return tuple(f.name for f in fields(kind) if f.name != "span" and f.name not in skipped)


def _note_bindings(index: Uses, node: object) -> None:
    if isinstance(node, n.Assign):
        return  # `plan = …` gives the binding a new value: a use of it
    for attr in _DECLARING.get(type(node), ()):
        value = getattr(node, attr)
        for name in value if isinstance(value, tuple) else (value,):
            if not isinstance(name, n.Name):
                continue
            index.bindings.setdefault(name.id, []).append(name.span.start)
            if isinstance(node, n.Binding | n.Output | n.Input):
                index.flat.setdefault(name.id, []).append(name.span.start)
            if isinstance(node, n.Binding | n.Output):
                index.read_before[name.span.start] = node.value.span
            elif isinstance(node, n.ForEach):
                index.read_before[name.span.start] = node.collection.span


def _shift(span: Span, start: int, end: int) -> Span:
    """The part ``start:end`` of a one-line span."""
    return Span(
        start,
        end,
        span.line,
        span.column + (start - span.start),
        span.line,
        span.column + (end - span.start),
    )

"""The unsafe fix for a name bound twice where the flat namespace forbids it (E019, E024,
E145, E146): the later binding gets a fresh name (`plan_2`) and so does every use of it in
its scope, so each use reads the value it read before — what runs stays the same, only the
name changes (unsafe: an output's new name is what callers see)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import fields, is_dataclass

from openprose import nodes as n
from openprose.checker.state import _DECLARING, Checker
from openprose.diagnostics import Edit, Fix
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


def rename_fix(ck: Checker, name: n.Name, *, within: Span | None = None) -> Fix | None:
    """Rename the binding ``name`` and every variable use of its identifier after it (up
    to ``within``'s end, or the program's); None when a use sits in a block body (it runs
    wherever the block is called, so which binding it reads is not known here)."""
    program, text = ck.program, ck.source_text
    if program is None or text[name.span.start : name.span.end] != name.id:
        return None
    end = within.end if within is not None else len(text)
    ident = name.id
    fresh = _fresh(ck, name)
    read_before = _read_before_binding(program, name)
    edits: list[Edit] = []
    for span, in_block in _uses(program, ident):
        if not name.span.start <= span.start < end:
            continue
        if read_before is not None and read_before.start <= span.start < read_before.end:
            continue  # `let plan = session … context: plan` reads the earlier `plan`
        if in_block and not _inside_same_block(program, name.span, span):
            return None
        edits.append(Edit(span, fresh))
    if not edits or _in_rejected_statement(program, text, ident, name.span.start, end):
        return None
    return Fix(f"rename this `{ident}` and its uses to `{fresh}`", tuple(edits), safe=False)


def scope_of(ck: Checker, name: n.Name) -> Span | None:
    """The span of the loop, `catch`, pipe or block that binds ``name`` (a body-local name)."""
    if ck.program is None:
        return None
    found: Span | None = None
    for node in _nodes(ck.program):
        inside = isinstance(node, _SCOPES) and node.span.start <= name.span.start < node.span.end
        if inside and (found is None or node.span.start >= found.start):
            found = node.span
    return found


def _fresh(ck: Checker, name: n.Name) -> str:
    """`plan_2` for the second binding of `plan`, `plan_3` for the third (an agent of the
    name counts as the first), so the fixes of one pass never pick the same name; never a
    name the program already has."""
    ident = name.id
    taken = ck.declared | set(ck.agents) | set(ck.blocks) | set(ck.imports)
    earlier = sum(
        1
        for node in _nodes(ck.program)
        for declared in _declared_names(node)
        if declared.id == ident and declared.span.start < name.span.start
    )
    joiner = "-" if "-" in ident else "_"
    count = max(2, 1 + earlier + (ident in ck.agents))
    while f"{ident}{joiner}{count}" in taken:
        count += 1
    return f"{ident}{joiner}{count}"


def _declared_names(node: object) -> list[n.Name]:
    found: list[n.Name] = []
    for attr in _DECLARING.get(type(node), ()):
        value = getattr(node, attr)
        values = value if isinstance(value, tuple) else (value,)
        found.extend(v for v in values if isinstance(v, n.Name))
    return found


def _read_before_binding(program: n.Program, name: n.Name) -> Span | None:
    """The part of the statement binding ``name`` that runs before the name is bound: a
    `let`'s or `output`'s value, a `for`'s collection."""
    at = name.span.start
    for node in _nodes(program):
        if isinstance(node, n.Binding | n.Output):
            if any(d.span.start == at for d in _declared_names(node)):
                return node.value.span
        elif isinstance(node, n.ForEach) and any(
            d is not None and d.span.start == at for d in (node.item, node.index)
        ):
            return node.collection.span
    return None


def _uses(program: n.Program, ident: str) -> Iterator[tuple[Span, bool]]:
    """Each span where ``ident`` is written as a variable, and whether it is in a block body."""
    stack: list[tuple[object, bool]] = [(program, False)]
    while stack:
        node, in_block = stack.pop()
        if isinstance(node, tuple):
            stack.extend((item, in_block) for item in node)
            continue
        if isinstance(node, n.Name):
            if node.id == ident:
                yield node.span, in_block
            continue
        if isinstance(node, n.Interpolation):
            if node.name == ident:
                start = node.span.start + 1  # after the `{`
                yield _shift(node.span, start, start + len(ident)), in_block
            continue
        if not is_dataclass(node):
            continue
        skipped = _NOT_VARIABLES.get(type(node), ())
        inner = in_block or isinstance(node, n.BlockDef)
        for f in fields(node):
            if f.name == "span" or f.name in skipped:
                continue
            value = getattr(node, f.name)
            if (
                isinstance(node, n.Property)
                and node.name.id != "context"
                and isinstance(value, n.Name)
            ):
                continue  # `model: sonnet`: a word of the property, no variable
            stack.append((value, inner))


def _in_rejected_statement(program: n.Program, text: str, ident: str, start: int, end: int) -> bool:
    """Whether a statement the parser rejected, after ``start``, mentions ``ident``: its
    uses are not in the tree, so a rename now would leave them reading the other binding
    (its own fix runs first; the rename comes in the next pass)."""
    word = re.compile(rf"(?<![\w-]){re.escape(ident)}(?![\w-])")
    return any(
        isinstance(node, n.Invalid)
        and start <= node.span.start < end
        and word.search(text, node.span.start, node.span.end) is not None
        for node in _nodes(program)
    )


def _inside_same_block(program: n.Program, declared: Span, used: Span) -> bool:
    return any(
        isinstance(stmt, n.BlockDef)
        and stmt.span.start <= declared.start < stmt.span.end
        and stmt.span.start <= used.start < stmt.span.end
        for stmt in program.body
    )


def _nodes(root: object) -> Iterator[object]:
    stack: list[object] = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, tuple):
            stack.extend(node)
        elif is_dataclass(node):
            yield node
            stack.extend(getattr(node, f.name) for f in fields(node) if f.name != "span")


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

"""Names declared inside branches and bodies that may not run: the fixes for E019 (one `let`
name in exclusive branches) and W156 (a `let` used after a body that may not have run).

The same `let` name declared in exclusive branches (`if`/`elif`/`else`, choice options).

The reference forbids it ("Variables in different if/elif/else branches with same name" is a
collision the flat namespace prevents), so the second declaration stays E019. The mechanical
way out keeps the meaning: declare the name once before the branches (`let result = ""`) and
assign it in each branch — reassignment is allowed for `let` ("Variable reassignment:
`name = session "..."` (for let only)"). This module finds those groups before the walk and
builds that fix, which the E019 diagnostic then carries.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import get_args

from openprose import nodes as n
from openprose.diagnostics import Edit, Fix
from openprose.source import SourceFile


@dataclass(frozen=True, slots=True)
class BranchGroup:
    """One name declared with `let` in two or more branches of one `if` or `choice`."""

    name: str
    starts: frozenset[int]  # where each branch declaration's name starts
    fix: Fix | None
    keyword: str  # "if" or "choice"


def find_groups(program: n.Program, source: SourceFile | None) -> dict[int, BranchGroup]:
    """Each group, keyed by the start of every declaration's name in it."""
    found: dict[int, BranchGroup] = {}
    # A statement standing as a parallel block's branch cannot get a declaration before it
    # (that would be one more branch). The walk meets a `parallel` before its branches.
    branch_statements: set[int] = set()
    for node in _grouping_nodes(program):
        if type(node) is n.Parallel:
            branch_statements.update(id(branch.body) for branch in node.branches)
        elif type(node) is n.If:
            branches = [b.body for b in node.branches]
            if node.else_body is not None:
                branches.append(node.else_body)
            movable = id(node) not in branch_statements
            _group(node, "if", branches, source, found, movable=movable)
        elif type(node) is n.Choice:
            options = [o.body for o in node.options]
            movable = id(node) not in branch_statements
            _group(node, "choice", options, source, found, movable=movable)
    return found


_GROUPING = (n.Parallel, n.If, n.Choice)


def _holding() -> tuple[frozenset[type], dict[type, tuple[str, ...]]]:
    """The node classes that are or may hold a parallel block, an `if` or a `choice` (read
    from the fields' annotations), and for each class the fields that may hold one, last
    first (the order `n.walk` pushes them)."""
    classes = {cls.__name__: {cls} for cls in n.NODE_TYPES}
    classes |= {"Expr": set(get_args(n.Expr)), "Stmt": set(get_args(n.Stmt))}
    classes["Node"] = set(n.NODE_TYPES)
    fields = {
        cls: {
            name: set().union(
                *(classes.get(w, set()) for w in re.findall(r"\w+", str(cls.__annotations__[name])))
            )
            for name in n.child_fields(cls)
        }
        for cls in n.NODE_TYPES
    }
    holding: set[type] = set(_GROUPING)
    grew = True
    while grew:
        grew = False
        for cls, kinds in fields.items():
            if cls not in holding and any(k & holding for k in kinds.values()):
                holding.add(cls)
                grew = True
    return frozenset(holding), {
        cls: tuple(name for name, k in reversed(kinds.items()) if k & holding)
        for cls, kinds in fields.items()
    }


_HOLDING, _HOLDING_FIELDS = _holding()


def _grouping_nodes(program: n.Program) -> Iterator[n.Parallel | n.If | n.Choice]:
    """The parallel blocks, `if`s and `choice`s of ``program`` in `n.walk`'s order (each
    before what it holds), walking only what may hold one: names, strings and most
    expressions are skipped, and they are most of a tree."""
    stack: list[object] = [program]
    pop, push = stack.pop, stack.append
    holding, holding_fields = _HOLDING, _HOLDING_FIELDS
    while stack:
        current = pop()
        if type(current) in _GROUPING:
            yield current  # type: ignore[misc]  # one of _GROUPING
        for name in holding_fields[type(current)]:
            value = getattr(current, name)
            if type(value) is tuple:
                stack.extend([item for item in reversed(value) if type(item) in holding])
            elif type(value) in holding:
                push(value)


def _bodies(stmt: object) -> list[tuple[tuple[n.Stmt, ...], bool]]:
    """The statement lists inside ``stmt`` where a statement stands on its own line (not an
    arrow's step or a call's argument: `enclosing_statements` wants only those), each with
    whether it is a parallel block's list of branches (a statement inserted there would be
    one more branch)."""
    match stmt:
        case n.Parallel():
            return [(tuple(b.body for b in stmt.branches), True)]
        case n.DoBlock() | n.BlockDef() | n.Repeat() | n.ForEach() | n.Loop():
            return [(stmt.body, False)]
        case n.Try():
            lists = [stmt.body]
            if stmt.catch is not None:
                lists.append(stmt.catch.body)
            if stmt.finally_body is not None:
                lists.append(stmt.finally_body)
            return [(body, False) for body in lists]
        case n.If():
            lists = [b.body for b in stmt.branches]
            if stmt.else_body is not None:
                lists.append(stmt.else_body)
            return [(body, False) for body in lists]
        case n.Choice():
            return [(o.body, False) for o in stmt.options]
        case n.Binding() | n.Assign() | n.Output():
            return _bodies(stmt.value)
        case n.Pipeline():
            return [(op.body, False) for op in stmt.ops]
    return []


def _group(
    stmt: n.If | n.Choice,
    keyword: str,
    branches: list[tuple[n.Stmt, ...]],
    source: SourceFile | None,
    found: dict[int, BranchGroup],
    *,
    movable: bool,
) -> None:
    by_name: dict[tuple[str, bool], list[tuple[int, n.Binding | n.Output]]] = {}
    for index, body in enumerate(branches):
        for child in body:
            if isinstance(child, n.Binding) and isinstance(child.target, n.Name):
                by_name.setdefault((child.target.id, False), []).append((index, child))
            elif isinstance(child, n.Output) and child.name.id:
                by_name.setdefault((child.name.id, True), []).append((index, child))
    for (name, output), bindings in by_name.items():
        if len({index for index, _ in bindings}) < 2:
            continue
        fix = None
        if movable and source is not None and all(_mutable(b) for _, b in bindings):
            fix = _fix(stmt, name, [b for _, b in bindings], source, output=output)
        starts = frozenset(_name_of(b).span.start for _, b in bindings)
        group = BranchGroup(name, starts, fix, keyword)
        for start in starts:
            found[start] = group


def _mutable(binding: n.Binding | n.Output) -> bool:
    return isinstance(binding, n.Output) or binding.kind == "let"


def _name_of(binding: n.Binding | n.Output) -> n.Name:
    if isinstance(binding, n.Output):
        return binding.name
    assert isinstance(binding.target, n.Name)
    return binding.target


def _fix(
    stmt: n.If | n.Choice,
    name: str,
    bindings: list[n.Binding | n.Output],
    source: SourceFile,
    *,
    output: bool,
) -> Fix | None:
    """Declare once before the statement (`let x = ""`, or `output x = ""` for an output,
    which "works like let") and assign in each branch."""
    text = source.text
    line_start = text.rfind("\n", 0, stmt.span.start) + 1
    indent = text[line_start : stmt.span.start]
    if indent.strip():
        return None  # the statement does not start its line: nowhere to put a declaration
    keyword = "output" if output else "let"
    edits = [Edit(source.span(line_start, line_start), f'{indent}{keyword} {name} = ""\n')]
    for binding in bindings:
        # `let result = ...` → `result = ...`: drop the keyword and the space after it
        edits.append(Edit(source.span(binding.span.start, _name_of(binding).span.start), ""))
    return Fix(
        f"declare `{name}` once before the {stmt_word(stmt)} and assign it in each branch",
        tuple(edits),
    )


def stmt_word(stmt: n.If | n.Choice) -> str:
    return "if" if isinstance(stmt, n.If) else "choice"


# --- a `let` bound only inside a body that may not run (W156) ------------------------------------

_GUARDS = (n.If, n.Choice, n.Loop, n.Repeat, n.ForEach, n.Try)


def enclosing_statements(
    program: n.Program,
) -> dict[int, tuple[list[tuple[n.Stmt, bool]], n.Binding]]:
    """For each `let`/`const` binding of one name: the statements around it, outermost
    first, each with whether it is a parallel block's branch; keyed by where its name starts."""
    found: dict[int, tuple[list[tuple[n.Stmt, bool]], n.Binding]] = {}
    # Iterative (programs nest deeper than Python's call stack): each entry is a statement
    # list and the chain of statements around it.
    pending: list[tuple[tuple[n.Stmt, ...], tuple[tuple[n.Stmt, bool], ...], bool]] = [
        (program.body, (), False)
    ]
    while pending:
        stmts, chain, parallel = pending.pop()
        for stmt in stmts:
            if isinstance(stmt, n.Binding) and isinstance(stmt.target, n.Name):
                found[stmt.target.span.start] = (list(chain), stmt)
            inner = (*chain, (stmt, parallel))
            for body, branches in _bodies(stmt):
                pending.append((body, inner, branches))
    return found


def unbound_fix(
    around: dict[int, tuple[list[tuple[n.Stmt, bool]], n.Binding]],
    source: SourceFile | None,
    name_start: int,
    guard_line: int,
) -> Fix | None:
    """Declare the name before the statement whose body may not run (the innermost one of
    those around the binding that holds ``guard_line``) and assign it inside instead."""
    entry = around.get(name_start)
    if entry is None or source is None:
        return None
    chain, binding = entry
    if binding.kind != "let":
        return None
    owner = None
    for stmt, in_parallel in chain:
        if isinstance(stmt, _GUARDS) and stmt.span.line <= guard_line <= stmt.span.end_line:
            owner = (stmt, in_parallel)
    if owner is None or owner[1]:
        return None  # unknown, or a parallel branch (a declaration there is one more branch)
    stmt = owner[0]
    text = source.text
    line_start = text.rfind("\n", 0, stmt.span.start) + 1
    indent = text[line_start : stmt.span.start]
    if indent.strip():
        return None
    assert isinstance(binding.target, n.Name)
    name = binding.target.id
    return Fix(
        f"declare `{name}` before the {_word(stmt)} and assign it inside",
        (
            Edit(source.span(line_start, line_start), f'{indent}let {name} = ""\n'),
            Edit(source.span(binding.span.start, binding.target.span.start), ""),
        ),
    )


def _word(stmt: n.Stmt) -> str:
    names = {n.If: "if", n.Choice: "choice", n.Loop: "loop", n.Repeat: "repeat", n.Try: "try"}
    return names.get(type(stmt), "for")

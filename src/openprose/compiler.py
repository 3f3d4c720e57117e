"""The canonical compiler: the reference's "As Compiler" transformation.

Compilation is two separate steps so each can be tested on its own:

* ``canonicalize(program)`` — AST to AST: hoists definitions, expands the arrow sugar and
  normalizes property order, modifier order and redundant syntax (empty ``()``, ``\"\"\"`` on a
  one-line string, leading zeros).
* ``print_program`` (``openprose.printer``) — the canonical layout, with comments stripped.

so that ``parse(compile_program(p)) == canonicalize(p)`` and compiling is idempotent.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any, TypeVar

from openprose.depth import deep_recursion
from openprose.nodes import (
    AgentDef,
    Arrow,
    Ask,
    Assign,
    Binding,
    BlockDef,
    DoBlock,
    DoCall,
    ForEach,
    Input,
    Loop,
    Modifier,
    Name,
    NumberLit,
    Output,
    Parallel,
    ParallelBranch,
    PermissionsBlock,
    Pipeline,
    Program,
    ProgramCall,
    Property,
    Repeat,
    Session,
    StringLit,
    Use,
    child_fields,
)
from openprose.printer import print_program, quoted_enum
from openprose.vocabulary import ASK_PROPERTIES

# Property order: the reference grammar's order (agentProperty / sessionProperty); names it does
# not list follow in source order.
AGENT_PROPERTY_ORDER = (
    "model",
    "prompt",
    "persist",
    "context",
    "retry",
    "backoff",
    "skills",
    "permissions",
)
SESSION_PROPERTY_ORDER = ("model", "prompt", "context", "retry", "backoff", "returns")
# The reference's permission-type table order.
PERMISSION_ORDER = ("read", "write", "execute", "bash", "network")
# Modifiers: the join strategy (positional) first, then count, on-fail and max, as the
# reference writes them: `parallel ("any", count: 2, on-fail: "ignore"):`.
MODIFIER_ORDER = ("count", "on-fail", "max")

# Expressions that may also stand alone on a line, so an arrow of them can become lines.
_STATEMENT_LIKE = (
    Session,
    Ask,
    ProgramCall,
    DoBlock,
    DoCall,
    Parallel,
    Repeat,
    ForEach,
    Loop,
    Pipeline,
)

_BODY_FIELDS = frozenset({"body", "else_body", "finally_body"})
# Nodes whose `value` (or branch `body`) is a single expression that an arrow may fill.
_VALUE_HOLDERS = (Binding, Assign, Output, ParallelBranch)

N = TypeVar("N")


def compile_program(program: Program) -> str:
    """The canonical compiled text of a program (which should have passed the checker)."""
    return print_program(canonicalize(program))


def canonicalize(program: Program) -> Program:
    """The canonical form of ``program`` as a tree (spans kept from the input)."""
    with deep_recursion():
        return dataclasses.replace(program, body=_body(program.body, top=True), comments=())


def _body(stmts: tuple[Any, ...], *, top: bool = False) -> tuple[Any, ...]:
    expanded: list[Any] = []
    for stmt in stmts:
        if _expandable(stmt):
            # `a -> b -> c` on its own line is sugar for three lines.
            expanded.extend(_node(step) for step in stmt.steps)
        else:
            expanded.append(_node(stmt))
    return _hoist(expanded, top=top)


def _hoist(stmts: list[Any], *, top: bool) -> tuple[Any, ...]:
    """Block definitions are hoisted (reference: Block Hoisting) to the front of the body that
    holds them. At the top level the other definitions move up too, in the order the VM
    processes them: imports, inputs, agents, blocks — then the executable statements."""
    groups: tuple[type, ...] = (Use, Input, AgentDef, BlockDef) if top else (BlockDef,)
    ordered = [s for group in groups for s in stmts if type(s) is group]
    ordered += [s for s in stmts if not isinstance(s, groups)]
    return tuple(ordered)


def _expandable(node: Any) -> bool:
    return isinstance(node, Arrow) and all(isinstance(s, _STATEMENT_LIKE) for s in node.steps)


def _as_block(node: Any) -> Any:
    """An arrow used as a value becomes a ``do:`` block: its value is its last step's."""
    if _expandable(node):
        return DoBlock(span=node.span, body=_body(node.steps))
    return _node(node)


def _node(node: Any) -> Any:
    """Canonicalize every child of ``node``, then apply the node's own normalization."""
    cls = type(node)
    if not hasattr(cls, "__dataclass_fields__"):
        return node  # a str, number, bool or None
    changes: dict[str, Any] = {}
    for name in child_fields(cls):
        value = getattr(node, name)
        if name in ("value", "body") and isinstance(node, _VALUE_HOLDERS):
            new = _as_block(value)
        elif name in _BODY_FIELDS and isinstance(value, tuple):
            new = _body(value)
        elif isinstance(value, tuple):
            items = tuple(_node(v) for v in value)
            new = value if all(a is b for a, b in zip(items, value)) else items
        else:
            new = _node(value)
        if new is not value:
            changes[name] = new
    if changes:
        node = dataclasses.replace(node, **changes)
    return _normalize(node)


def _normalize(node: Any) -> Any:
    match node:
        case AgentDef():
            return _with(node, properties=_ordered(node.properties, AGENT_PROPERTY_ORDER))
        case Session():
            return _with(node, properties=_ordered(node.properties, SESSION_PROPERTY_ORDER))
        case Ask():
            return _with(node, properties=_ordered(node.properties, ASK_PROPERTIES))
        case Property(value=PermissionsBlock() as block):
            rules = _ordered(block.rules, PERMISSION_ORDER)
            return _with(node, value=_with(block, rules=rules))
        case Property(value=StringLit() as value) if quoted_enum(node):
            # Printed bare (`backoff: exponential`), so the canonical tree holds the name.
            return _with(node, value=Name(span=value.span, id=value.value))
        case Parallel():
            mods = _ordered_modifiers(node.modifiers)
            return _with(node, modifiers=mods, has_parens=bool(mods))
        case Loop():
            mods = _ordered_modifiers(node.modifiers)
            return _with(node, modifiers=mods, has_parens=bool(mods))
        case ForEach():
            return _with(node, modifiers=_ordered_modifiers(node.modifiers))
        case BlockDef():
            return _with(node, has_parens=bool(node.params))
        case DoCall():
            return _with(node, has_parens=bool(node.args))
        case StringLit(triple=True) if "\n" not in node.value:
            return _with(node, triple=False)
        case NumberLit(value=int() as value) if not isinstance(value, bool):
            return _with(node, raw=str(value))
        case _:
            return node


def _with(node: N, **changes: Any) -> N:
    """``dataclasses.replace`` that keeps the very same object when nothing changes."""
    if all(getattr(node, k) == v for k, v in changes.items()):
        return node
    return dataclasses.replace(node, **changes)  # type: ignore[type-var]


def _ordered(props: tuple[Property, ...], order: Iterable[str]) -> tuple[Property, ...]:
    rank = {name: i for i, name in enumerate(order)}
    unknown = len(rank)
    return tuple(sorted(props, key=lambda p: rank.get(p.name.id, unknown)))


def _ordered_modifiers(mods: tuple[Modifier, ...]) -> tuple[Modifier, ...]:
    rank = {name: i + 1 for i, name in enumerate(MODIFIER_ORDER)}
    unknown = len(rank) + 1
    return tuple(sorted(mods, key=lambda m: 0 if m.name is None else rank.get(m.name.id, unknown)))

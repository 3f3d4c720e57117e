"""Composition: block definitions (hoisted), `do name(args)`, `do:` and `->` sequences."""

from __future__ import annotations

from openprose import nodes as n
from openprose.checker.bindings import bind_scoped
from openprose.checker.state import Checker, Handler, head
from openprose.diagnostics import Edit, Fix
from openprose.suggest import closest


def register_block(ck: Checker, node: n.BlockDef) -> None:
    name = node.name.id
    if not name:
        ck.emit("E151", head(node.span, 5), "Block definition must have a name")
        return
    agent = ck.agents.get(name)
    if agent is not None:
        ck.emit(
            "E150",
            node.name.span,
            f"Block name '{name}' conflicts with agent '{name}' (line {agent.node.name.span.line})",
        )
    earlier = ck.blocks.get(name)
    if earlier is not None:
        ck.emit(
            "E149",
            node.name.span,
            f"Block '{name}' already defined (line {earlier.name.span.line})",
        )
        return
    ck.blocks[name] = node


def _block_def(ck: Checker, node: n.BlockDef) -> None:
    if ck.depth:  # top-level blocks were registered before the walk (hoisting)
        register_block(ck, node)
    _block_modifiers(ck, node.modifiers)
    scope = ck.scope
    scope.open_block()
    for param in node.params:
        bind_scoped(ck, param.id, param.span, "param", "W142")
    ck.body(node.body)
    scope.close_block()


def _block_modifiers(ck: Checker, modifiers: tuple[n.Modifier, ...]) -> None:
    """`(max_depth: N)`, the one block modifier (the reference VM's "Recursion Depth
    Limits: Configure per-block"): a whole number from 1."""
    seen = False
    for modifier in modifiers:
        if modifier.name is None or modifier.name.id != "max_depth":
            shown = modifier.name.id if modifier.name else "a positional value"
            ck.emit(
                "E168",
                modifier.span,
                f"Unknown block modifier {shown!r}: a block takes (max_depth: N)",
                help="write (max_depth: N), N a whole number from 1",
            )
        elif seen:
            ck.emit("E168", modifier.span, "Modifier 'max_depth' already given")
        else:
            seen = True
            value = modifier.value
            if not (
                isinstance(value, n.NumberLit) and isinstance(value.value, int) and value.value >= 1
            ):
                ck.emit(
                    "E168",
                    modifier.span,
                    "max_depth must be a whole number from 1",
                    help="write (max_depth: N), N a whole number from 1",
                )


def _do_call(ck: Checker, node: n.DoCall) -> None:
    visit = ck.visit
    for arg in node.args:
        visit(arg)
    name = node.name.id
    block = ck.blocks.get(name)
    if node.labels:
        _labelled_arguments(ck, node, block)
    if block is None:
        if name not in ck.broken:
            guess = closest(name, ck.blocks) if ck.blocks else None
            ck.emit(
                "E148",
                node.name.span,
                f"Block '{name}' not defined" + (f" (did you mean `{guess}`?)" if guess else ""),
                help=f"write `{guess}`" if guess else None,
                fix=Fix.nearest_word(node.name.span, name, guess) if guess else None,
            )
        return
    if node.labels:
        return
    expected, given = len(block.params), len(node.args)
    if expected != given:
        ck.emit(
            "W141",
            node.name.span,
            f"Block '{name}' expects {expected} parameter{'s' * (expected != 1)} but got "
            f"{given} argument{'s' * (given != 1)}",
        )


def _labelled_arguments(ck: Checker, node: n.DoCall, block: n.BlockDef | None) -> None:
    """`do f(topic: x, depth: 2)`: a block's arguments are positional (`args → "("
    expression ("," expression)* ")"`; labels are a program call's). When the labels are
    exactly the block's parameters, the safe fix passes the values in the parameters'
    order, which binds each parameter to the value its label gave it."""
    first = next(label for label in node.labels if label is not None)
    params = [param.id for param in block.params] if block is not None else []
    labels = [label.id if label is not None else None for label in node.labels]
    fix = None
    in_place = len(labels) == len(params) and all(
        label is None or label == param for label, param in zip(labels, params, strict=True)
    )
    if block is not None and ck.source is not None and in_place:
        fix = Fix(
            "drop the labels: the values are in the parameters' order",
            tuple(
                Edit(ck.span_at(label.span.start, arg.span.start), "")
                for label, arg in zip(node.labels, node.args, strict=True)
                if label is not None
            ),
        )
    elif (
        block is not None
        and ck.source is not None
        and sorted(params) == sorted(label for label in labels if label is not None)
        and len(labels) == len(params)
    ):
        text = ck.source_text
        values = dict(
            zip(labels, (text[a.span.start : a.span.end] for a in node.args), strict=True)
        )
        written = ", ".join(values[param] for param in params)
        span = ck.span_at(_label_start(node), node.args[-1].span.end)
        fix = Fix(
            "pass the values by position, in the block's parameter order", (Edit(span, written),)
        )
    order = f" ({', '.join(params)})" if block is not None else ""
    ck.emit(
        "E004",
        first.span,
        f"`do` passes a block's arguments by position: `{first.id}:` labels an argument",
        help=f"drop the labels and give the values in the order of the block's parameters{order}",
        fix=fix,
    )


def _label_start(node: n.DoCall) -> int:
    first = node.labels[0]
    return first.span.start if first is not None else node.args[0].span.start


def _do_block(ck: Checker, node: n.DoBlock) -> None:
    ck.body(node.body)


def _arrow(ck: Checker, node: n.Arrow) -> None:
    visit = ck.visit
    for step in node.steps:
        visit(step)


HANDLERS: dict[type, Handler] = {
    n.BlockDef: _block_def,
    n.DoCall: _do_call,
    n.DoBlock: _do_block,
    n.Arrow: _arrow,
}

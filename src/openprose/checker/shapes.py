"""Typed results in the checker: shapes are valid (E180), and a field read from a typed
value exists (E181) — `{review.severity}` where `review` is bound to a session that
`returns:` a shape, or to an output that declares one.

A name is typed only when every place that binds it gives the same shape: a name also
bound by a loop, a block parameter, an untyped session... may hold anything, so its fields
are not checked (no false alarms)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from openprose import nodes as n
from openprose.checker.state import Checker
from openprose.diagnostics import Edit, Fix
from openprose.shapes import (
    SCALARS,
    ShapeError,
    field_schema,
    fields_of,
    json_schema,
    returns_of,
)
from openprose.suggest import closest


def check_returns(ck: Checker, prop: n.Property, where: str) -> None:
    """The `returns:` property of a session: a valid shape."""
    value = prop.value
    if isinstance(value, n.SHAPE_TYPES):
        check_shape(ck, value)  # type: ignore[arg-type]


def check_shape(ck: Checker, shape: n.Shape) -> None:
    """E180 for each unknown type and repeated field; for a schema (inline or a file), the
    first reason it cannot be used."""
    for node in n.walk(shape):
        if isinstance(node, n.ScalarType) and node.name not in SCALARS:
            guess = closest(node.name, SCALARS)
            ck.emit(
                "E180",
                node.span,
                f"Unknown type '{node.name}'"
                + (f" (did you mean `{guess}`?)" if guess else f" (types: {', '.join(SCALARS)})"),
                help=f"write `{guess}`" if guess else None,
                fix=Fix.nearest_word(node.span, node.name, guess) if guess else None,
            )
        elif isinstance(node, n.ObjectType):
            seen: set[str] = set()
            for item in node.fields:
                if item.name.id in seen:
                    ck.emit("E180", item.name.span, f"Field '{item.name.id}' declared twice")
                seen.add(item.name.id)
        elif isinstance(node, n.SchemaRef):
            try:
                json_schema(node, ck.base_dir)
            except ShapeError as problem:
                ck.emit("E180", node.source.span, f"Unusable schema: {problem}")


def check_typed_fields(ck: Checker, program: n.Program) -> None:
    """Output shapes are valid, and every field read from a typed name exists (E181)."""
    for node in n.walk(program):
        if isinstance(node, n.Output) and node.shape is not None:
            check_shape(ck, node.shape)
    typed = typed_names(program, ck.base_dir)
    if not typed:
        return
    for node in n.walk(program):
        if isinstance(node, n.Interpolation) and node.path and node.name in typed:
            _check_path(ck, typed[node.name], node.name, node.path, node.span, braces=True)
        elif isinstance(node, n.Attribute):
            dotted = _dotted(node)
            if dotted is not None and dotted[0] in typed and dotted[1]:
                name, path = dotted
                _check_path(ck, typed[name], name, path, node.span, braces=False)


def _dotted(node: n.Attribute) -> tuple[str, tuple[str, ...]] | None:
    """`a.b.c` as ("a", ("b", "c")), for the outermost attribute only (its inner ones are
    walked too, and would report the same field again)."""
    path: list[str] = []
    current: n.Name | n.Attribute = node
    while isinstance(current, n.Attribute):
        path.append(current.attr)
        current = current.value
    return current.id, tuple(reversed(path))


def _check_path(
    ck: Checker,
    schema: dict[str, Any],
    name: str,
    path: tuple[str, ...],
    span: Any,
    *,
    braces: bool,
) -> None:
    for depth, attr in enumerate(path):
        allowed = fields_of(schema)
        if allowed is None:
            if schema.get("type") in ("string", "number", "integer", "boolean", "array"):
                shown = ".".join((name, *path[:depth]))
                ck.emit(
                    "E181",
                    span,
                    f"'{shown}' has no field '{attr}': its shape is not an object",
                    help="read the value itself, or declare it as an object with fields",
                )
            return
        if attr not in allowed:
            shown = ".".join((name, *path[:depth]))
            guess = closest(attr, allowed)
            fields = ", ".join(allowed) or "none"
            ck.emit(
                "E181",
                span,
                f"'{shown}' has no field '{attr}'"
                + (f" (did you mean `{guess}`?)" if guess else f" (fields: {fields})"),
                help=f"write `{guess}`" if guess else "use a field its shape declares",
                fix=_field_fix(span, name, path, depth, guess, braces) if guess else None,
            )
            return
        schema = field_schema(schema, attr)
        # the fields of list items are not reachable by name: a list has no fields
        if schema.get("type") == "array":
            schema = {"type": "array"}


def _field_fix(
    span: Any, name: str, path: tuple[str, ...], depth: int, guess: str, braces: bool
) -> Fix:
    fixed = ".".join((name, *path[:depth], guess, *path[depth + 1 :]))
    text = "{" + fixed + "}" if braces else fixed
    return Fix(f"replace `{path[depth]}` with `{guess}`", (Edit(span, text),), safe=False)


def typed_names(program: n.Program, base_dir: Path | None) -> dict[str, dict[str, Any]]:
    """The names every binding of which gives the same shape, with its JSON Schema."""
    shapes: dict[str, list[n.Shape | None]] = {}
    for name, shape in _bindings(program):
        shapes.setdefault(name, []).append(shape)
    typed: dict[str, dict[str, Any]] = {}
    for name, found in shapes.items():
        first = found[0]
        if first is None or any(other != first for other in found[1:]):
            continue
        try:
            typed[name] = json_schema(first, base_dir)
        except ShapeError:
            continue  # E180 already says why
    return typed


def _bindings(program: n.Program) -> Iterator[tuple[str, n.Shape | None]]:
    """Every name each statement binds, with the shape it gives it (None: untyped)."""
    for node in n.walk(program):
        match node:
            case n.Binding(target=n.Name() as target):
                yield target.id, returns_of(node.value)
            case n.Binding(target=n.Destructure() as pattern):
                yield from ((name.id, None) for name in pattern.names)
            case n.Assign():
                yield node.target.id, returns_of(node.value)
            case n.Output():
                yield node.name.id, node.shape or returns_of(node.value)
            case n.Session(name=n.Name() as name):
                yield name.id, returns_of(node)
            case n.ParallelBranch(name=n.Name() as name):
                yield name.id, returns_of(node.body)
            case n.Input():
                yield node.name.id, None
            case n.ForEach():
                yield node.item.id, None
                if node.index is not None:
                    yield node.index.id, None
            case n.BlockDef():
                yield from ((param.id, None) for param in node.params)
            case n.Repeat(index=n.Name() as index) | n.Loop(index=n.Name() as index):
                yield index.id, None
            case n.CatchClause(error=n.Name() as error):
                yield error.id, None
            case n.PipeOp():
                yield "item", None
                for bound in (node.accumulator, node.item):
                    if bound is not None:
                        yield bound.id, None
            case _:
                pass

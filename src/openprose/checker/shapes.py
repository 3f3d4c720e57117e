"""Typed results in the checker: shapes are valid (E180), and a field read from a typed
value exists (E181) — `{review.severity}` where `review` is bound to a session that
`returns:` a shape, or to an output that declares one.

A name is typed only when every place that binds it gives the same shape: a name also
bound by a loop, a block parameter, an untyped session... may hold anything, so its fields
are not checked (no false alarms)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
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
        ck.typed = True
        check_shape(ck, value)  # type: ignore[arg-type]


def check_output_shape(ck: Checker, shape: n.Shape) -> None:
    """The shape of `output name: shape = value`."""
    ck.typed = True
    check_shape(ck, shape)


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
    """Every field read from a typed name exists (E181). Run after the walk, which tells
    whether the program declares any shape at all."""
    if not ck.typed:
        return
    bound: dict[str, list[n.Shape | None]] = {}
    reads: list[n.Interpolation | n.Attribute] = []
    inner: set[int] = set()  # attributes inside another: read as part of the outer one
    for node in n.walk(program):
        kind = type(node)
        if kind is n.Interpolation:
            if node.path:  # type: ignore[union-attr]
                reads.append(node)  # type: ignore[arg-type]
        elif kind is n.Attribute:
            if id(node) not in inner:
                reads.append(node)  # type: ignore[arg-type]
            value = node.value  # type: ignore[union-attr]
            if type(value) is n.Attribute:
                inner.add(id(value))
        else:
            binder = _BINDERS.get(kind)
            if binder is not None:
                for name, shape in binder(node):
                    bound.setdefault(name, []).append(shape)
    typed = _agreed(bound, ck.base_dir)
    for read in reads:
        if isinstance(read, n.Interpolation):
            if read.name in typed:
                _check_path(ck, typed[read.name], read.name, read.path, read.span, braces=True)
            continue
        name, path = _dotted(read)
        if name in typed:
            _check_path(ck, typed[name], name, path, read.span, braces=False)


def typed_names(program: n.Program, base_dir: Path | None) -> dict[str, dict[str, Any]]:
    """The names whose every binding gives the same shape, with its JSON Schema: what E181
    checks fields against (the language server completes those fields)."""
    bound: dict[str, list[n.Shape | None]] = {}
    for node in n.walk(program):
        binder = _BINDERS.get(type(node))
        if binder is not None:
            for name, shape in binder(node):
                bound.setdefault(name, []).append(shape)
    return _agreed(bound, base_dir)


def _dotted(node: n.Attribute) -> tuple[str, tuple[str, ...]]:
    """`a.b.c` as ("a", ("b", "c"))."""
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


def _agreed(
    bound: dict[str, list[n.Shape | None]], base_dir: Path | None
) -> dict[str, dict[str, Any]]:
    """The names every binding of which gives the same shape, with its JSON Schema."""
    typed: dict[str, dict[str, Any]] = {}
    for name, found in bound.items():
        first = found[0]
        if first is None or any(other != first for other in found[1:]):
            continue
        try:
            typed[name] = json_schema(first, base_dir)
        except ShapeError:
            continue  # E180 already says why
    return typed


Binder = Callable[[Any], Iterable[tuple[str, "n.Shape | None"]]]

# What each kind of statement binds, with the shape it gives (None: untyped).
_BINDERS: dict[type, Binder] = {
    n.Binding: lambda node: (
        ((name.id, None) for name in node.target.names)
        if isinstance(node.target, n.Destructure)
        else ((node.target.id, returns_of(node.value)),)
    ),
    n.Assign: lambda node: ((node.target.id, returns_of(node.value)),),
    n.Output: lambda node: ((node.name.id, node.shape or returns_of(node.value)),),
    n.Session: lambda node: () if node.name is None else ((node.name.id, returns_of(node)),),
    n.ParallelBranch: lambda node: (
        () if node.name is None else ((node.name.id, returns_of(node.body)),)
    ),
    n.Input: lambda node: ((node.name.id, None),),
    n.ForEach: lambda node: (
        (name.id, None) for name in (node.item, node.index) if name is not None
    ),
    n.BlockDef: lambda node: ((param.id, None) for param in node.params),
    n.Repeat: lambda node: () if node.index is None else ((node.index.id, None),),
    n.Loop: lambda node: () if node.index is None else ((node.index.id, None),),
    n.CatchClause: lambda node: () if node.error is None else ((node.error.id, None),),
    n.PipeOp: lambda node: (
        ("item", None),
        *((name.id, None) for name in (node.accumulator, node.item) if name is not None),
    ),
}

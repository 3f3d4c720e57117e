"""The synchronous part of evaluation: names, properties, interpolated strings and the
literal values of properties and modifiers. (Expressions that run sessions are awaited by
the interpreter.)"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from openprose import nodes as n
from openprose.vm.errors import ProseRuntimeError, location
from openprose.vm.frame import Ctx
from openprose.vm.values import Absent, ErrorValue, ProgramResult, Value, render

# What a session sees for a name its program binds somewhere but that is unbound here.
Placeholder = Callable[[str], Value]


class Expressions:
    def __init__(self, path: str, bound_somewhere: Collection[str] = ()) -> None:
        self.path = path
        self.bound_somewhere = bound_somewhere  # every flat name the program binds

    def where(self, node: Any) -> str:
        """`path:line:col` of a node of this program, for errors."""
        return location(self.path, getattr(node, "span", None))

    def lookup(
        self, name: str, node: Any, ctx: Ctx, placeholder: Placeholder | None = None
    ) -> Value:
        """The value of `name`. With a `placeholder`, a name the program binds only in a
        body that did not run gets the placeholder's value instead of an error."""
        try:
            return ctx.scope.lookup(name)
        except KeyError:
            if placeholder is not None and name in self.bound_somewhere:
                return placeholder(name)
            raise ProseRuntimeError(
                f"undefined variable {name!r}", where=self.where(node)
            ) from None

    def attribute(
        self, expr: n.Attribute, ctx: Ctx, placeholder: Placeholder | None = None
    ) -> Value:
        if isinstance(expr.value, n.Name):
            base = self.lookup(expr.value.id, expr.value, ctx, placeholder)
        else:
            base = self.attribute(expr.value, ctx, placeholder)
        if isinstance(base, Absent):
            return base  # an unbound name's placeholder stands for its fields too
        return self.property(base, expr.attr, expr)

    def property(self, value: Value, attr: str, node: Any) -> Value:
        if isinstance(value, ProgramResult):
            if attr not in value.outputs:
                raise ProseRuntimeError(
                    f"program {value.program!r} has no output {attr!r} "
                    f"(outputs: {', '.join(value.outputs) or 'none'})",
                    where=self.where(node),
                    code="E028",
                )
            return value.outputs[attr]
        if isinstance(value, dict) and attr in value:
            return value[attr]
        if isinstance(value, ErrorValue):
            try:
                return value.attribute(attr)
            except KeyError:
                pass
        raise ProseRuntimeError(f"value has no property {attr!r}", where=self.where(node))

    def interpolate(
        self, literal: n.StringLit, ctx: Ctx, placeholder: Placeholder | None = None
    ) -> str:
        if len(literal.parts) == 1 and isinstance(literal.parts[0], str):
            return literal.parts[0]
        out = []
        for part in literal.parts:
            if isinstance(part, str):
                out.append(part)
                continue
            value = self.lookup(part.name, part, ctx, placeholder)
            if isinstance(value, Absent):
                out.append(render(value))
                continue
            for attr in part.path:
                value = self.property(value, attr, part)
            out.append(render(value))
        return "".join(out)


def discretion_text(node: n.Discretion) -> str:
    return " ".join(node.text.split())


def literal(expr: Any) -> Any:
    """The plain value of a property or modifier written as a literal (None otherwise)."""
    if isinstance(expr, n.StringLit):
        return expr.value
    if isinstance(expr, n.NumberLit):
        return expr.value
    if isinstance(expr, n.Name):
        return expr.id
    if isinstance(expr, n.ArrayLit):
        return [literal(e) for e in expr.elements]
    return None


def dotted(expr: n.Attribute | n.Name) -> str:
    if isinstance(expr, n.Name):
        return expr.id
    return f"{dotted(expr.value)}.{expr.attr}"

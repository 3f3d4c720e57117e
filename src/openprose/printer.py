"""Canonical layout: the one place that decides how an AST is written back as source.

The compiler prints a canonicalized tree with this module; the formatter prints the tree as
parsed and weaves the comments back in. Both therefore agree on indentation (two spaces per
level), quoting, spacing and where each construct breaks its lines.

Printing produces ``Line`` records rather than text, so the formatter can tell which source
construct each output line came from (to re-attach comments and blank lines) before joining.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from openprose.depth import deep_recursion
from openprose.nodes import (
    AgentDef,
    ArrayLit,
    Arrow,
    Ask,
    Assign,
    Attribute,
    Binding,
    BlockDef,
    Choice,
    Destructure,
    Discretion,
    DoBlock,
    DoCall,
    EnumType,
    ForEach,
    If,
    Input,
    Interpolation,
    Invalid,
    ListType,
    Loop,
    Modifier,
    Name,
    NumberLit,
    ObjectContext,
    ObjectType,
    Output,
    Parallel,
    PermissionsBlock,
    Pipeline,
    PipeOp,
    Program,
    ProgramCall,
    Property,
    Repeat,
    ScalarType,
    SchemaRef,
    Session,
    ShapeField,
    StringLit,
    Throw,
    Try,
    Use,
)
from openprose.scanner import IDENT_PATTERN
from openprose.source import Span
from openprose.vocabulary import ENUM_PROPERTIES

INDENT = "  "


@dataclass(slots=True)
class Line:
    """One logical output line. ``text`` holds more than one physical line when it ends in a
    multi-line string or condition; ``anchor`` is the span of the source construct the line
    starts (None for lines the printer invented); ``child_level`` is the level of the block
    the line opens, if it opens one."""

    level: int
    text: str
    anchor: Span | None
    child_level: int | None = None

    def render(self) -> str:
        return INDENT * self.level + self.text


# --- strings ---------------------------------------------------------------------------------

_SINGLE_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t"})
# A literal `{` that would read back as an interpolation (`{name}`, `{a.b}`); other braces
# (`{}`, `{ x }`, JSON) are literal text already and stay as written.
_BRACE_BEFORE_NAME = re.compile(r"\{(?=" + IDENT_PATTERN + r"(?:\." + IDENT_PATTERN + r")*\})")
# Inside `"""` a quote needs escaping only where it could close the string.
_CLOSING_QUOTE = re.compile(r'"(?="|\Z)')


def _escape_single(text: str) -> str:
    return _BRACE_BEFORE_NAME.sub(r"\\{", text.translate(_SINGLE_ESCAPES))


def _escape_triple(text: str) -> str:
    """Newlines and tabs stay literal inside ``\"\"\"``."""
    text = _CLOSING_QUOTE.sub(r'\\"', text.replace("\\", "\\\\"))
    return _BRACE_BEFORE_NAME.sub(r"\\{", text)


def _interpolation(part: Interpolation) -> str:
    return "{" + ".".join((part.name, *part.path)) + "}"


def string(node: StringLit) -> str:
    escape = _escape_triple if node.triple else _escape_single
    body = "".join(
        _interpolation(p) if isinstance(p, Interpolation) else escape(p) for p in node.parts
    )
    if node.triple:
        return f'"""\n{body}"""'
    return f'"{body}"'


def discretion(node: Discretion) -> str:
    marker = "***" if node.triple else "**"
    return f"{marker}{node.text}{marker}"


# --- expressions that fit on one line --------------------------------------------------------


def inline(node: object) -> str:
    """An expression written on a single line (block-valued expressions have their own
    statement printers; here they contribute only their head)."""
    match node:
        case StringLit():
            return string(node)
        case NumberLit():
            return node.raw
        case Name():
            return node.id
        case Attribute():
            return f"{inline(node.value)}.{node.attr}"
        case ArrayLit():
            return "[" + ", ".join(inline(e) for e in node.elements) + "]"
        case ObjectContext():
            return "{ " + ", ".join(n.id for n in node.names) + " }" if node.names else "{}"
        case Discretion():
            return discretion(node)
        case ProgramCall():
            args = ", ".join(f"{a.name.id}: {inline(a.value)}" for a in node.args)
            return f"{node.callee.id}({args})"
        case DoCall():
            if node.args or node.has_parens:
                return f"do {node.name.id}(" + ", ".join(inline(a) for a in node.args) + ")"
            return f"do {node.name.id}"
        case Session():
            # Properties on the header line, as in `session "Research AI" context: "AI"`.
            props = "".join(f" {p.name.id}: {inline(p.value)}" for p in node.properties)
            return session_head(node) + props
        case Ask():
            props = "".join(f" {p.name.id}: {inline(p.value)}" for p in node.properties)
            return f"ask {string(node.question)}{props}"
        case Arrow():
            return " -> ".join(inline(step) for step in node.steps)
        case Invalid():
            return node.text
        case ScalarType() | ListType() | EnumType() | ObjectType() | SchemaRef():
            return shape(node)
        case _:
            return _block_head(node)


def shape(node: ScalarType | ListType | EnumType | ObjectType | SchemaRef) -> str:
    """A shape on one line (`{title: string, files: list of string}`)."""
    match node:
        case ScalarType():
            return node.name
        case ListType():
            return "list of " + shape(node.item)
        case EnumType():
            return " | ".join(string(option) for option in node.options)
        case ObjectType():
            return "{" + ", ".join(_field_head(f) + shape(f.shape) for f in node.fields) + "}"
        case SchemaRef():
            return "schema " + string(node.source)


def _field_head(node: ShapeField) -> str:
    return f"{node.name.id}: " + ("optional " if node.optional else "")


def _block_fields(node: object) -> tuple[ShapeField, ...]:
    """The fields a shape writes one a line under its head: an object's, or a list of
    objects' (`files: list of` then the fields); none for other shapes."""
    if isinstance(node, ListType):
        node = node.item
    return node.fields if isinstance(node, ObjectType) else ()


def session_head(node: Session) -> str:
    if node.kind == "resume":
        return f"resume: {node.agent.id}" if node.agent else "resume:"
    if node.prompt is not None:
        return f"session {string(node.prompt)}"
    if node.name is not None and node.agent is not None:
        return f"session {node.name.id}: {node.agent.id}"
    return f"session: {node.agent.id}" if node.agent else "session"


def modifiers(mods: tuple[Modifier, ...], has_parens: bool) -> str:
    if not mods and not has_parens:
        return ""
    items = (inline(m.value) if m.name is None else f"{m.name.id}: {inline(m.value)}" for m in mods)
    return " (" + ", ".join(items) + ")"


def _pipe_op_head(op: PipeOp) -> str:
    if op.accumulator is not None and op.item is not None:
        return f"{op.op}({op.accumulator.id}, {op.item.id}):"
    return f"{op.op}:"


def _block_head(node: object) -> str:
    """The header line (without prefix) of a construct that opens an indented body."""
    match node:
        case DoBlock():
            return "do:"
        case Parallel():
            return "parallel" + modifiers(node.modifiers, node.has_parens) + ":"
        case Repeat():
            index = f" as {node.index.id}" if node.index else ""
            return f"repeat {inline(node.count)}{index}:"
        case ForEach():
            prefix = "parallel" + modifiers(node.modifiers, False) + " " if node.parallel else ""
            index = f", {node.index.id}" if node.index else ""
            return f"{prefix}for {node.item.id}{index} in {inline(node.collection)}:"
        case Loop():
            head = "loop"
            if node.kind != "loop":
                head += f" {node.kind}"
                if node.condition is not None:
                    head += f" {discretion(node.condition)}"
            head += modifiers(node.modifiers, node.has_parens)
            if node.index is not None:
                head += f" as {node.index.id}"
            return head + ":"
        case Pipeline() if len(node.ops) == 1:
            return f"{inline(node.source)} | {_pipe_op_head(node.ops[0])}"
        case Pipeline():
            return inline(node.source)
        case _:
            return type(node).__name__.lower()


# --- statements ------------------------------------------------------------------------------

# Arrow steps `inline` writes whole on one line; any other step has a body of its own.
_ONE_LINE_STEPS = (
    StringLit,
    NumberLit,
    Name,
    Attribute,
    ArrayLit,
    ObjectContext,
    Discretion,
    ProgramCall,
    DoCall,
    Session,
    Ask,
    Invalid,
)


class Printer:
    """Accumulates ``Line`` records for a program body."""

    def __init__(self) -> None:
        self.lines: list[Line] = []

    def program(self, program: Program) -> list[Line]:
        with deep_recursion():
            self.body(program.body, 0)
        return self.lines

    def emit(self, level: int, text: str, anchor: Span | None, opens_block: bool = False) -> None:
        self.lines.append(Line(level, text, anchor, level + 1 if opens_block else None))

    def body(self, stmts: tuple[object, ...], level: int) -> None:
        for stmt in stmts:
            self.stmt(stmt, level)

    def opener(self, level: int, text: str, anchor: Span | None, body: tuple[object, ...]) -> None:
        self.emit(level, text, anchor, opens_block=True)
        self.body(body, level + 1)

    def stmt(self, node: object, level: int, prefix: str = "", anchor: Span | None = None) -> None:
        """Print ``node`` at ``level``; ``prefix`` is what precedes it on its first line
        (``let x = ``), ``anchor`` the span of the statement that line starts."""
        at = anchor if anchor is not None else getattr(node, "span", None)
        match node:
            case Use():
                alias = f" as {node.alias.id}" if node.alias else ""
                self.emit(level, f"{prefix}use {string(node.path)}{alias}", at)
            case Input():
                self.emit(level, f"{prefix}input {node.name.id}: {inline(node.description)}", at)
            case Output():
                shaped = f": {shape(node.shape)}" if node.shape is not None else ""
                self.stmt(node.value, level, f"{prefix}output {node.name.id}{shaped} = ", at)
            case Binding():
                self.stmt(node.value, level, f"{prefix}{node.kind} {_target(node.target)} = ", at)
            case Assign():
                self.stmt(node.value, level, f"{prefix}{node.target.id} = ", at)
            case AgentDef():
                self.emit(level, f"{prefix}agent {node.name.id}:", at, opens_block=True)
                self.properties(node.properties, level + 1)
            case BlockDef():
                params = ""
                if node.params or node.has_parens:
                    params = "(" + ", ".join(p.id for p in node.params) + ")"
                mods = modifiers(node.modifiers, bool(node.modifiers))
                self.opener(level, f"{prefix}block {node.name.id}{params}{mods}:", at, node.body)
            case Session():
                self.emit(level, prefix + session_head(node), at, opens_block=bool(node.properties))
                self.properties(node.properties, level + 1)
            case Ask():
                head = f"{prefix}ask {string(node.question)}"
                self.emit(level, head, at, opens_block=bool(node.properties))
                self.properties(node.properties, level + 1)
            case Arrow():
                # One-line steps join on one line (`a -> b -> `); a step with a body
                # (`parallel:`, `repeat 3:`, `x | map:` ...) is printed whole, and the next
                # step continues on a line of its own (`-> session "..."`). The last step may
                # open a block (its properties, or `do:`), printed as if it stood alone.
                *steps, last = node.steps
                head = prefix
                for step in steps:
                    if isinstance(step, _ONE_LINE_STEPS):
                        head += inline(step) + " -> "
                    else:
                        self.stmt(step, level, head, at)
                        head = "-> "
                self.stmt(last, level, head, at)
            case Parallel():
                self.emit(level, prefix + _block_head(node), at, opens_block=True)
                for branch in node.branches:
                    name = f"{branch.name.id} = " if branch.name else ""
                    self.stmt(branch.body, level + 1, name, branch.span)
            case DoBlock() | Repeat() | ForEach() | Loop():
                self.opener(level, prefix + _block_head(node), at, node.body)
            case Pipeline():
                self.pipeline(node, level, prefix, at)
            case Try():
                self.opener(level, f"{prefix}try:", at, node.body)
                if node.catch is not None:
                    error = f" as {node.catch.error.id}" if node.catch.error else ""
                    self.opener(level, f"catch{error}:", node.catch.span, node.catch.body)
                if node.finally_body is not None:
                    self.opener(level, "finally:", node.finally_span, node.finally_body)
            case Throw():
                message = f" {string(node.message)}" if node.message else ""
                self.emit(level, f"{prefix}throw{message}", at)
            case Choice():
                head = f"{prefix}choice {discretion(node.criteria)}:"
                self.emit(level, head, at, opens_block=True)
                for option in node.options:
                    label = f"option {string(option.label)}:"
                    self.opener(level + 1, label, option.span, option.body)
            case If():
                for i, clause in enumerate(node.branches):
                    keyword = f"{prefix}if" if i == 0 else "elif"
                    head = f"{keyword} {discretion(clause.condition)}:"
                    self.opener(level, head, clause.span, clause.body)
                if node.else_body is not None:
                    self.opener(level, "else:", node.else_span, node.else_body)
            case _:
                self.emit(level, prefix + inline(node), at)

    def pipeline(self, node: Pipeline, level: int, prefix: str, at: Span | None) -> None:
        self.emit(level, prefix + _block_head(node), at, opens_block=True)
        if len(node.ops) == 1:
            self.body(node.ops[0].body, level + 1)
            return
        # Chained stages go one per line; each body sits under its operation name, as in the
        # reference's examples (`  | map:` then the body six columns in).
        for op in node.ops:
            self.lines.append(Line(level + 1, "| " + _pipe_op_head(op), op.span, level + 3))
            self.body(op.body, level + 3)

    def properties(self, props: tuple[Property, ...], level: int) -> None:
        for prop in props:
            if isinstance(prop.value, PermissionsBlock):
                self.emit(level, f"{prop.name.id}:", prop.span, opens_block=True)
                self.properties(prop.value.rules, level + 1)
            elif _block_fields(prop.value):
                head = "list of" if isinstance(prop.value, ListType) else ""
                self.emit(level, f"{prop.name.id}: {head}".rstrip(), prop.span, opens_block=True)
                self.shape_fields(_block_fields(prop.value), level + 1)
            elif quoted_enum(prop):
                assert isinstance(prop.value, StringLit)
                self.emit(level, f"{prop.name.id}: {prop.value.value}", prop.span)
            else:
                self.stmt(prop.value, level, f"{prop.name.id}: ", prop.span)

    def shape_fields(self, fields: tuple[ShapeField, ...], level: int) -> None:
        for item in fields:
            head = _field_head(item)
            nested = _block_fields(item.shape)
            if nested:
                head += "list of" if isinstance(item.shape, ListType) else ""
                self.emit(level, head.rstrip(), item.span, opens_block=True)
                self.shape_fields(nested, level + 1)
            else:
                self.emit(level, head + shape(item.shape), item.span)


def quoted_enum(prop: Property) -> bool:
    """`backoff: "exponential"`: a fixed-set value written as a plain string is printed bare,
    as the reference writes it (the checker's W170)."""
    value = prop.value
    known = ENUM_PROPERTIES.get(prop.name.id)
    return (
        known is not None
        and isinstance(value, StringLit)
        and not value.triple
        and value.value in known
        and value.parts == (value.value,)
    )


def _target(target: Name | Destructure) -> str:
    if isinstance(target, Destructure):
        return "{ " + ", ".join(n.id for n in target.names) + " }"
    return target.id


def render(lines: list[Line]) -> str:
    """Join lines into file text: one trailing newline, nothing for an empty program."""
    if not lines:
        return ""
    return "\n".join(line.render() for line in lines) + "\n"


def print_program(program: Program) -> str:
    """The program in canonical layout, without comments."""
    return render(Printer().program(program))

"""The OpenProse abstract syntax tree: plain typed data with a source span on every node.

Equality ignores spans (``compare=False``), so "the formatted program re-parses to the same AST"
is a plain ``==``. Sequences are tuples so trees are immutable and safe to share between the
checker, the compiler and the VM.

Statements and expressions share node classes where the grammar does (``let x = parallel:``,
``let r = do:``, ``let s = session "..."``): a ``Stmt`` is any node that may stand on its own
line, an ``Expr`` any node that may stand on the right of ``=``.

``children`` and ``walk`` are the one way through a tree (as ``ast.iter_child_nodes`` and
``ast.walk``): a stage that looks for something anywhere in a program walks it with them
rather than naming the fields of each node class.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import field, fields
from typing import Literal, TypeAlias, get_args

from openprose.node_class import node_class, open_twin
from openprose.source import Span

# --- leaves ----------------------------------------------------------------------------------


@node_class
class Name:
    """An identifier; hyphens allowed inside (``review-pipeline``)."""

    span: Span = field(compare=False, repr=False)
    id: str


@node_class
class Interpolation:
    """``{name}`` inside a string; ``path`` holds property accesses (``{result.findings}``)."""

    span: Span = field(compare=False, repr=False)
    name: str
    path: tuple[str, ...] = ()


@node_class
class StringLit:
    """A string literal. ``value`` is the decoded text with interpolations left as ``{name}``;
    ``parts`` splits it into literal text and ``Interpolation`` nodes (``\\{`` yields a literal
    brace in a text part and never an interpolation)."""

    span: Span = field(compare=False, repr=False)
    value: str
    parts: tuple[str | Interpolation, ...]
    triple: bool = False

    @property
    def interpolations(self) -> tuple[Interpolation, ...]:
        return tuple(p for p in self.parts if isinstance(p, Interpolation))


# The parser's commonest nodes, built without `__init__` (node_class.open_twin): the same
# instances as `Name(span=..., id=...)` and `StringLit(...)`, at under half the cost.
_OpenName = open_twin(Name)
_OpenStringLit = open_twin(StringLit)


def new_name(span: Span, id: str) -> Name:
    node = _OpenName()
    node.span = span
    node.id = id
    node.__class__ = Name
    return node  # type: ignore[no-any-return]


def new_string_lit(
    span: Span, value: str, parts: tuple[str | Interpolation, ...], triple: bool
) -> StringLit:
    node = _OpenStringLit()
    node.span = span
    node.value = value
    node.parts = parts
    node.triple = triple
    node.__class__ = StringLit
    return node  # type: ignore[no-any-return]


@node_class
class NumberLit:
    span: Span = field(compare=False, repr=False)
    value: int | float
    raw: str


@node_class
class Discretion:
    """``**text**`` or ``***multi-line text***``: a condition judged by a model at run time."""

    span: Span = field(compare=False, repr=False)
    text: str
    triple: bool = False


@node_class
class Attribute:
    """Property access, ``result.findings``."""

    span: Span = field(compare=False, repr=False)
    value: Name | Attribute
    attr: str


@node_class
class ArrayLit:
    span: Span = field(compare=False, repr=False)
    elements: tuple[Expr, ...]


@node_class
class ObjectContext:
    """``{ a, b, c }`` — an object whose properties are the named variables."""

    span: Span = field(compare=False, repr=False)
    names: tuple[Name, ...]


@node_class
class Comment:
    """Kept beside the tree (``Program.comments``), never inside it; only ``fmt`` uses them."""

    span: Span = field(compare=False, repr=False)
    text: str  # without the leading '#'


# --- properties ------------------------------------------------------------------------------


@node_class
class PermissionsBlock:
    """The indented block under ``permissions:``; each rule is ``type: value``."""

    span: Span = field(compare=False, repr=False)
    rules: tuple[Property, ...]


@node_class
class Property:
    """``name: value`` under an agent or a session. Unknown names are kept (W005 is the
    checker's business), so the value is any expression the parser could read."""

    span: Span = field(compare=False, repr=False)
    name: Name
    value: PropertyValue


# --- shapes: the declared form of an answer (`returns:`, `output x: shape = ...`) ------------


@node_class
class ScalarType:
    """``string``, ``number``, ``integer`` or ``boolean`` (another word is the checker's)."""

    span: Span = field(compare=False, repr=False)
    name: str


@node_class
class ListType:
    """``list of <shape>``."""

    span: Span = field(compare=False, repr=False)
    item: Shape


@node_class
class EnumType:
    """``"low" | "medium" | "high"``: one of the strings."""

    span: Span = field(compare=False, repr=False)
    options: tuple[StringLit, ...]


@node_class
class ShapeField:
    """``name: shape`` or ``name: optional shape`` inside an object shape."""

    span: Span = field(compare=False, repr=False)
    name: Name
    shape: Shape
    optional: bool = False


@node_class
class ObjectType:
    """Fields, one per line under ``returns:`` or ``{a: string, b: integer}`` on one line."""

    span: Span = field(compare=False, repr=False)
    fields: tuple[ShapeField, ...]


@node_class
class SchemaRef:
    """``schema "review.schema.json"`` (a file beside the program), or a JSON Schema written
    inline as the string (its text starts with ``{``)."""

    span: Span = field(compare=False, repr=False)
    source: StringLit

    @property
    def inline(self) -> bool:
        return self.source.value.lstrip().startswith("{")


# --- sessions and calls ----------------------------------------------------------------------


@node_class
class Session:
    """``session "p"`` | ``session: agent`` | ``session name: agent`` | ``resume: agent``,
    each with an optional indented property block."""

    span: Span = field(compare=False, repr=False)
    kind: Literal["session", "resume"] = "session"
    prompt: StringLit | None = None
    agent: Name | None = None
    name: Name | None = None
    properties: tuple[Property, ...] = ()


_OpenProperty = open_twin(Property)
_OpenSession = open_twin(Session)


def new_property(span: Span, name: Name, value: PropertyValue) -> Property:
    """``Property(span=..., name=..., value=...)`` built as `new_name` builds a name."""
    node = _OpenProperty()
    node.span = span
    node.name = name
    node.value = value
    node.__class__ = Property
    return node  # type: ignore[no-any-return]


def new_session(
    span: Span,
    kind: Literal["session", "resume"],
    prompt: StringLit | None,
    agent: Name | None,
    name: Name | None,
    properties: tuple[Property, ...],
) -> Session:
    """``Session(span=..., kind=..., ...)`` (every field given) built as `new_name` does."""
    node = _OpenSession()
    node.span = span
    node.kind = kind
    node.prompt = prompt
    node.agent = agent
    node.name = name
    node.properties = properties
    node.__class__ = Session
    return node  # type: ignore[no-any-return]


@node_class
class Ask:
    """``ask "question"`` with an optional property block (``options:``, ``default:``,
    ``timeout:``): a question put to a person while the program runs; its value is the
    answer (docs/guide.md, "Asking a person")."""

    span: Span = field(compare=False, repr=False)
    question: StringLit
    properties: tuple[Property, ...] = ()


@node_class
class KeywordArg:
    span: Span = field(compare=False, repr=False)
    name: Name
    value: Expr


@node_class
class ProgramCall:
    """``research(topic: "x")`` — invoke an imported program."""

    span: Span = field(compare=False, repr=False)
    callee: Name
    args: tuple[KeywordArg, ...]


@node_class
class DoBlock:
    """``do:`` followed by an indented body."""

    span: Span = field(compare=False, repr=False)
    body: tuple[Stmt, ...]


@node_class
class DoCall:
    """``do name`` or ``do name(arg, ...)`` — invoke a block definition."""

    span: Span = field(compare=False, repr=False)
    name: Name
    args: tuple[Expr, ...] = ()
    has_parens: bool = False
    # `do f(topic: x)`: the labels written before arguments (outside the grammar, which
    # passes a block's arguments by position; the checker reports them). Empty when none.
    labels: tuple[Name | None, ...] = field(default=(), compare=False, repr=False)


@node_class
class Arrow:
    """``a -> b -> c``: sugar for running the steps in order; the value is the last step's."""

    span: Span = field(compare=False, repr=False)
    steps: tuple[Expr, ...]


# --- modifiers -------------------------------------------------------------------------------


@node_class
class Modifier:
    """One item of ``( ... )`` after ``parallel`` or ``loop``: positional (``"first"``) when
    ``name`` is None, else keyword (``on-fail: "continue"``, ``count: 2``, ``max: 10``)."""

    span: Span = field(compare=False, repr=False)
    name: Name | None
    value: Expr


# --- control flow ----------------------------------------------------------------------------


@node_class
class ParallelBranch:
    """A branch of ``parallel:``; ``name = stmt`` binds the branch's result."""

    span: Span = field(compare=False, repr=False)
    name: Name | None
    body: Stmt


@node_class
class Parallel:
    span: Span = field(compare=False, repr=False)
    modifiers: tuple[Modifier, ...]
    branches: tuple[ParallelBranch, ...]
    has_parens: bool = False


@node_class
class Repeat:
    span: Span = field(compare=False, repr=False)
    count: Expr  # normally a NumberLit; anything else is a checker diagnostic
    index: Name | None
    body: tuple[Stmt, ...]


@node_class
class ForEach:
    """``for x in c:``, ``for x, i in c:`` and ``parallel for ...``."""

    span: Span = field(compare=False, repr=False)
    item: Name
    index: Name | None
    collection: Expr
    body: tuple[Stmt, ...]
    parallel: bool = False
    modifiers: tuple[Modifier, ...] = ()


@node_class
class Loop:
    """``loop``, ``loop until **c**``, ``loop while **c**`` with ``(max: N)`` and ``as i``."""

    span: Span = field(compare=False, repr=False)
    kind: Literal["loop", "until", "while"]
    condition: Discretion | None
    modifiers: tuple[Modifier, ...]
    index: Name | None
    body: tuple[Stmt, ...]
    has_parens: bool = False


@node_class
class PipeOp:
    """One ``| map:`` / ``| filter:`` / ``| pmap:`` / ``| reduce(acc, item):`` stage."""

    span: Span = field(compare=False, repr=False)
    op: str  # "map" | "filter" | "pmap" | "reduce"; anything else is kept for a diagnostic
    body: tuple[Stmt, ...]
    accumulator: Name | None = None
    item: Name | None = None


@node_class
class Pipeline:
    span: Span = field(compare=False, repr=False)
    source: Expr
    ops: tuple[PipeOp, ...]


@node_class
class CatchClause:
    span: Span = field(compare=False, repr=False)
    error: Name | None
    body: tuple[Stmt, ...]


@node_class
class Try:
    span: Span = field(compare=False, repr=False)
    body: tuple[Stmt, ...]
    catch: CatchClause | None = None
    finally_body: tuple[Stmt, ...] | None = None
    finally_span: Span | None = field(default=None, compare=False, repr=False)


@node_class
class Throw:
    span: Span = field(compare=False, repr=False)
    message: StringLit | None = None


@node_class
class ChoiceOption:
    span: Span = field(compare=False, repr=False)
    label: StringLit
    body: tuple[Stmt, ...]


@node_class
class Choice:
    span: Span = field(compare=False, repr=False)
    criteria: Discretion
    options: tuple[ChoiceOption, ...]


@node_class
class CondBranch:
    """The ``if`` or one ``elif`` clause."""

    span: Span = field(compare=False, repr=False)
    condition: Discretion
    body: tuple[Stmt, ...]


@node_class
class If:
    span: Span = field(compare=False, repr=False)
    branches: tuple[CondBranch, ...]  # [0] is the `if`, the rest are `elif`s
    else_body: tuple[Stmt, ...] | None = None
    else_span: Span | None = field(default=None, compare=False, repr=False)


# --- declarations and bindings ---------------------------------------------------------------


@node_class
class Use:
    span: Span = field(compare=False, repr=False)
    path: StringLit
    alias: Name | None = None


@node_class
class Input:
    """``input name: "description"``, or with a discretion prompt (``**...**``), which
    prose.md admits: "Have a name and a prompt (string or discretion)"."""

    span: Span = field(compare=False, repr=False)
    name: Name
    description: StringLit | Discretion

    @property
    def text(self) -> str:
        """The description's text, whichever form it is written in."""
        description = self.description
        return description.value if isinstance(description, StringLit) else description.text


@node_class
class Output:
    span: Span = field(compare=False, repr=False)
    name: Name
    value: Expr
    shape: Shape | None = None  # `output name: shape = value`


@node_class
class AgentDef:
    span: Span = field(compare=False, repr=False)
    name: Name
    properties: tuple[Property, ...]


@node_class
class BlockDef:
    span: Span = field(compare=False, repr=False)
    name: Name
    params: tuple[Name, ...]
    body: tuple[Stmt, ...]
    has_parens: bool = False
    # `block f(x) (max_depth: 50):` — the reference VM's per-block recursion limit
    modifiers: tuple[Modifier, ...] = ()


@node_class
class Destructure:
    """``{ a, b }`` on the left of ``let``/``const``."""

    span: Span = field(compare=False, repr=False)
    names: tuple[Name, ...]


@node_class
class Binding:
    """``let x = e`` / ``const x = e`` (``x`` may be a ``Destructure`` pattern)."""

    span: Span = field(compare=False, repr=False)
    kind: Literal["let", "const"]
    target: Name | Destructure
    value: Expr


@node_class
class Assign:
    """``x = e`` — reassignment of a ``let`` variable."""

    span: Span = field(compare=False, repr=False)
    target: Name
    value: Expr


@node_class
class Invalid:
    """Source the parser could not read; its diagnostics were already reported. Later stages
    skip it (the VM never runs a program with errors)."""

    span: Span = field(compare=False, repr=False)
    text: str


@node_class
class Program:
    span: Span = field(compare=False, repr=False)
    body: tuple[Stmt, ...]
    comments: tuple[Comment, ...] = field(default=(), compare=False, repr=False)
    path: str = field(default="<string>", compare=False)


# Anything that may stand on the right of `=` (and inside arrays, arguments, pipelines).
Expr: TypeAlias = (
    StringLit
    | NumberLit
    | Name
    | Attribute
    | ArrayLit
    | ObjectContext
    | Discretion
    | Session
    | Ask
    | ProgramCall
    | DoBlock
    | DoCall
    | Arrow
    | Parallel
    | Repeat
    | ForEach
    | Loop
    | Pipeline
    | Invalid
)

# Anything that may stand on its own line.
Stmt: TypeAlias = (
    Use
    | Input
    | Output
    | AgentDef
    | BlockDef
    | Binding
    | Assign
    | Session
    | Ask
    | ProgramCall
    | DoBlock
    | DoCall
    | Arrow
    | Parallel
    | Repeat
    | ForEach
    | Loop
    | Pipeline
    | Try
    | Throw
    | Choice
    | If
    | Invalid
)

# The declared form of an answer.
Shape: TypeAlias = ScalarType | ListType | EnumType | ObjectType | SchemaRef
SHAPE_TYPES: tuple[type, ...] = (ScalarType, ListType, EnumType, ObjectType, SchemaRef)
# What follows `name:` in an agent's or a session's property block.
PropertyValue: TypeAlias = Expr | PermissionsBlock | Shape

Node: TypeAlias = (
    Expr
    | Stmt
    | Program
    | Property
    | PermissionsBlock
    | KeywordArg
    | Modifier
    | ParallelBranch
    | PipeOp
    | CatchClause
    | ChoiceOption
    | CondBranch
    | Destructure
    | Interpolation
    | Comment
    | Shape
    | ShapeField
)


# --- walking ---------------------------------------------------------------------------------

NODE_TYPES: frozenset[type] = frozenset(get_args(Node))
STATEMENT_TYPES: tuple[type, ...] = get_args(Stmt)
_NODE_NAMES = frozenset(
    {"Expr", "Stmt", "Node", "Shape", "PropertyValue", *(cls.__name__ for cls in NODE_TYPES)}
)
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def child_fields(cls: type) -> tuple[str, ...]:
    """The fields of a node class that hold its contents: those equality compares, less the
    span (so not the comments, the spans of ``else:``/``finally:`` or ``do f(label: x)``
    labels, which the tree keeps only for the printer and the checker's messages)."""
    names = _CHILD_FIELDS.get(cls)
    if names is None:
        names = tuple(f.name for f in fields(cls) if f.compare and f.name != "span")
        _CHILD_FIELDS[cls] = names
    return names


def _node_fields(cls: type) -> tuple[str, ...]:
    """The child fields whose type names a node class (not ``id: str``, ``raw: str``...):
    the only ones ``children`` need look at."""
    hints = cls.__annotations__
    return tuple(
        name
        for name in child_fields(cls)
        if _NODE_NAMES.intersection(re.findall(r"\w+", str(hints[name])))
    )


_NODE_FIELDS: dict[type, tuple[str, ...]] = {cls: _node_fields(cls) for cls in NODE_TYPES}
# Last field first: `walk` pushes them on its stack in that order.
_NODE_FIELDS_LAST_FIRST = {cls: names[::-1] for cls, names in _NODE_FIELDS.items()}


def children(node: Node) -> Iterator[Node]:
    """The nodes directly inside ``node``, in field order (the order they are written in,
    but for a few modifiers); text, numbers and flags are not nodes."""
    for name in _NODE_FIELDS[type(node)]:
        value = getattr(node, name)
        if type(value) is tuple:
            for item in value:
                if type(item) is not str:  # the text parts of a string
                    yield item
        elif value is not None:
            yield value


def walk(node: Node) -> Iterator[Node]:
    """``node`` and every node below it, depth first, each before its children, children in
    field order. A stack, not recursion: programs nest up to the parser's limit (E115),
    deeper than Python's call stack allows."""
    stack: list[Node] = [node]
    pop, push, extend = stack.pop, stack.append, stack.extend
    last_first = _NODE_FIELDS_LAST_FIRST
    while stack:
        current = pop()
        yield current
        # `children` inlined, last child pushed first: this loop runs for every node of
        # every program each stage walks.
        for name in last_first[type(current)]:
            value = getattr(current, name)
            if type(value) is tuple:
                extend([item for item in reversed(value) if type(item) is not str])
            elif value is not None:
                push(value)

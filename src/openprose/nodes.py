"""The OpenProse abstract syntax tree: plain typed data with a source span on every node.

Equality ignores spans (``compare=False``), so "the formatted program re-parses to the same AST"
is a plain ``==``. Sequences are tuples so trees are immutable and safe to share between the
checker, the compiler and the VM.

Statements and expressions share node classes where the grammar does (``let x = parallel:``,
``let r = do:``, ``let s = session "..."``): a ``Stmt`` is any node that may stand on its own
line, an ``Expr`` any node that may stand on the right of ``=``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Union

from openprose.source import Span

_NODE = dict(frozen=True, slots=True, kw_only=True)


def _span() -> Span:
    return field(compare=False, repr=False)  # type: ignore[return-value]


# --- leaves ----------------------------------------------------------------------------------


@dataclass(**_NODE)
class Name:
    """An identifier; hyphens allowed inside (``review-pipeline``)."""

    span: Span = _span()
    id: str


@dataclass(**_NODE)
class Interpolation:
    """``{name}`` inside a string; ``path`` holds property accesses (``{result.findings}``)."""

    span: Span = _span()
    name: str
    path: tuple[str, ...] = ()


@dataclass(**_NODE)
class StringLit:
    """A string literal. ``value`` is the decoded text with interpolations left as ``{name}``;
    ``parts`` splits it into literal text and ``Interpolation`` nodes (``\\{`` yields a literal
    brace in a text part and never an interpolation)."""

    span: Span = _span()
    value: str
    parts: tuple[str | Interpolation, ...]
    triple: bool = False

    @property
    def interpolations(self) -> tuple[Interpolation, ...]:
        return tuple(p for p in self.parts if isinstance(p, Interpolation))


@dataclass(**_NODE)
class NumberLit:
    span: Span = _span()
    value: int | float
    raw: str


@dataclass(**_NODE)
class Discretion:
    """``**text**`` or ``***multi-line text***``: a condition judged by a model at run time."""

    span: Span = _span()
    text: str
    triple: bool = False


@dataclass(**_NODE)
class Attribute:
    """Property access, ``result.findings``."""

    span: Span = _span()
    value: Name | Attribute
    attr: str


@dataclass(**_NODE)
class ArrayLit:
    span: Span = _span()
    elements: tuple[Expr, ...]


@dataclass(**_NODE)
class ObjectContext:
    """``{ a, b, c }`` — an object whose properties are the named variables."""

    span: Span = _span()
    names: tuple[Name, ...]


@dataclass(**_NODE)
class Comment:
    """Kept beside the tree (``Program.comments``), never inside it; only ``fmt`` uses them."""

    span: Span = _span()
    text: str  # without the leading '#'


# --- properties ------------------------------------------------------------------------------


@dataclass(**_NODE)
class PermissionsBlock:
    """The indented block under ``permissions:``; each rule is ``type: value``."""

    span: Span = _span()
    rules: tuple[Property, ...]


@dataclass(**_NODE)
class Property:
    """``name: value`` under an agent or a session. Unknown names are kept (W005 is the
    checker's business), so the value is any expression the parser could read."""

    span: Span = _span()
    name: Name
    value: Expr | PermissionsBlock


# --- sessions and calls ----------------------------------------------------------------------


@dataclass(**_NODE)
class Session:
    """``session "p"`` | ``session: agent`` | ``session name: agent`` | ``resume: agent``,
    each with an optional indented property block."""

    span: Span = _span()
    kind: Literal["session", "resume"] = "session"
    prompt: StringLit | None = None
    agent: Name | None = None
    name: Name | None = None
    properties: tuple[Property, ...] = ()


@dataclass(**_NODE)
class KeywordArg:
    span: Span = _span()
    name: Name
    value: Expr


@dataclass(**_NODE)
class ProgramCall:
    """``research(topic: "x")`` — invoke an imported program."""

    span: Span = _span()
    callee: Name
    args: tuple[KeywordArg, ...]


@dataclass(**_NODE)
class DoBlock:
    """``do:`` followed by an indented body."""

    span: Span = _span()
    body: tuple[Stmt, ...]


@dataclass(**_NODE)
class DoCall:
    """``do name`` or ``do name(arg, ...)`` — invoke a block definition."""

    span: Span = _span()
    name: Name
    args: tuple[Expr, ...] = ()
    has_parens: bool = False


@dataclass(**_NODE)
class Arrow:
    """``a -> b -> c``: sugar for running the steps in order; the value is the last step's."""

    span: Span = _span()
    steps: tuple[Expr, ...]


# --- modifiers -------------------------------------------------------------------------------


@dataclass(**_NODE)
class Modifier:
    """One item of ``( ... )`` after ``parallel`` or ``loop``: positional (``"first"``) when
    ``name`` is None, else keyword (``on-fail: "continue"``, ``count: 2``, ``max: 10``)."""

    span: Span = _span()
    name: Name | None
    value: Expr


# --- control flow ----------------------------------------------------------------------------


@dataclass(**_NODE)
class ParallelBranch:
    """A branch of ``parallel:``; ``name = stmt`` binds the branch's result."""

    span: Span = _span()
    name: Name | None
    body: Stmt


@dataclass(**_NODE)
class Parallel:
    span: Span = _span()
    modifiers: tuple[Modifier, ...]
    branches: tuple[ParallelBranch, ...]
    has_parens: bool = False


@dataclass(**_NODE)
class Repeat:
    span: Span = _span()
    count: Expr  # normally a NumberLit; anything else is a checker diagnostic
    index: Name | None
    body: tuple[Stmt, ...]


@dataclass(**_NODE)
class ForEach:
    """``for x in c:``, ``for x, i in c:`` and ``parallel for ...``."""

    span: Span = _span()
    item: Name
    index: Name | None
    collection: Expr
    body: tuple[Stmt, ...]
    parallel: bool = False
    modifiers: tuple[Modifier, ...] = ()


@dataclass(**_NODE)
class Loop:
    """``loop``, ``loop until **c**``, ``loop while **c**`` with ``(max: N)`` and ``as i``."""

    span: Span = _span()
    kind: Literal["loop", "until", "while"]
    condition: Discretion | None
    modifiers: tuple[Modifier, ...]
    index: Name | None
    body: tuple[Stmt, ...]
    has_parens: bool = False


@dataclass(**_NODE)
class PipeOp:
    """One ``| map:`` / ``| filter:`` / ``| pmap:`` / ``| reduce(acc, item):`` stage."""

    span: Span = _span()
    op: str  # "map" | "filter" | "pmap" | "reduce"; anything else is kept for a diagnostic
    body: tuple[Stmt, ...]
    accumulator: Name | None = None
    item: Name | None = None


@dataclass(**_NODE)
class Pipeline:
    span: Span = _span()
    source: Expr
    ops: tuple[PipeOp, ...]


@dataclass(**_NODE)
class CatchClause:
    span: Span = _span()
    error: Name | None
    body: tuple[Stmt, ...]


@dataclass(**_NODE)
class Try:
    span: Span = _span()
    body: tuple[Stmt, ...]
    catch: CatchClause | None = None
    finally_body: tuple[Stmt, ...] | None = None
    finally_span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(**_NODE)
class Throw:
    span: Span = _span()
    message: StringLit | None = None


@dataclass(**_NODE)
class ChoiceOption:
    span: Span = _span()
    label: StringLit
    body: tuple[Stmt, ...]


@dataclass(**_NODE)
class Choice:
    span: Span = _span()
    criteria: Discretion
    options: tuple[ChoiceOption, ...]


@dataclass(**_NODE)
class CondBranch:
    """The ``if`` or one ``elif`` clause."""

    span: Span = _span()
    condition: Discretion
    body: tuple[Stmt, ...]


@dataclass(**_NODE)
class If:
    span: Span = _span()
    branches: tuple[CondBranch, ...]  # [0] is the `if`, the rest are `elif`s
    else_body: tuple[Stmt, ...] | None = None
    else_span: Span | None = field(default=None, compare=False, repr=False)


# --- declarations and bindings ---------------------------------------------------------------


@dataclass(**_NODE)
class Use:
    span: Span = _span()
    path: StringLit
    alias: Name | None = None


@dataclass(**_NODE)
class Input:
    span: Span = _span()
    name: Name
    description: StringLit


@dataclass(**_NODE)
class Output:
    span: Span = _span()
    name: Name
    value: Expr


@dataclass(**_NODE)
class AgentDef:
    span: Span = _span()
    name: Name
    properties: tuple[Property, ...]


@dataclass(**_NODE)
class BlockDef:
    span: Span = _span()
    name: Name
    params: tuple[Name, ...]
    body: tuple[Stmt, ...]
    has_parens: bool = False


@dataclass(**_NODE)
class Destructure:
    """``{ a, b }`` on the left of ``let``/``const``."""

    span: Span = _span()
    names: tuple[Name, ...]


@dataclass(**_NODE)
class Binding:
    """``let x = e`` / ``const x = e`` (``x`` may be a ``Destructure`` pattern)."""

    span: Span = _span()
    kind: Literal["let", "const"]
    target: Name | Destructure
    value: Expr


@dataclass(**_NODE)
class Assign:
    """``x = e`` — reassignment of a ``let`` variable."""

    span: Span = _span()
    target: Name
    value: Expr


@dataclass(**_NODE)
class Invalid:
    """Source the parser could not read; its diagnostics were already reported. Later stages
    skip it (the VM never runs a program with errors)."""

    span: Span = _span()
    text: str


@dataclass(**_NODE)
class Program:
    span: Span = _span()
    body: tuple[Stmt, ...]
    comments: tuple[Comment, ...] = field(default=(), compare=False, repr=False)
    path: str = field(default="<string>", compare=False)


# Anything that may stand on the right of `=` (and inside arrays, arguments, pipelines).
Expr = Union[
    StringLit,
    NumberLit,
    Name,
    Attribute,
    ArrayLit,
    ObjectContext,
    Discretion,
    Session,
    ProgramCall,
    DoBlock,
    DoCall,
    Arrow,
    Parallel,
    Repeat,
    ForEach,
    Loop,
    Pipeline,
    Invalid,
]

# Anything that may stand on its own line.
Stmt = Union[
    Use,
    Input,
    Output,
    AgentDef,
    BlockDef,
    Binding,
    Assign,
    Session,
    ProgramCall,
    DoBlock,
    DoCall,
    Arrow,
    Parallel,
    Repeat,
    ForEach,
    Loop,
    Pipeline,
    Try,
    Throw,
    Choice,
    If,
    Invalid,
]

Node = Union[
    Expr,
    Stmt,
    Program,
    Property,
    PermissionsBlock,
    KeywordArg,
    Modifier,
    ParallelBranch,
    PipeOp,
    CatchClause,
    ChoiceOption,
    CondBranch,
    Destructure,
    Interpolation,
    Comment,
]

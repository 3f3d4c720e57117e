"""What every name in a parsed program means: its definitions and the references to them.

One walk over the AST (the parser's, never a second one) records each definition — agents,
blocks, imports, inputs, outputs, bindings and the short-lived scoped names — and each use of a
name, tagged with the namespace it is looked up in. Navigation, hover, highlighting, the outline
and completion all read this index; none of them walks the tree again.

Variables follow the checker's rules (openprose.checker.scope): flat names are visible program
wide, scoped names (loop and pipeline variables, ``catch as err``, block parameters) only inside
the body that declares them, where they shadow a flat name of the same spelling.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from openprose import nodes as n
from openprose.source import Span

Namespace = Literal["agent", "block", "program", "variable", "argument", "output-field"]
DefKind = Literal["agent", "block", "import", "input", "output", "let", "const", "branch", "scoped"]

# Pipeline stages that bind the implicit `item` (openprose.checker.control).
_IMPLICIT_ITEM_OPS = frozenset({"map", "filter", "pmap"})
# Properties whose values are variable references (the rest hold words like `sonnet`).
_CONTEXT = "context"
_SKILLS = "skills"


@dataclass(frozen=True, slots=True)
class Definition:
    name: str
    kind: DefKind
    span: Span  # the name itself (for an import without alias: its path string)
    node: Any  # the declaring node, for hover and the outline
    # Where a scoped name is visible, as offsets [start, end); None for program-wide names.
    region: tuple[int, int] | None = None

    @property
    def namespace(self) -> Namespace:
        if self.kind in ("agent", "block"):
            return self.kind
        if self.kind == "import":
            return "program"
        return "variable"


@dataclass(frozen=True, slots=True)
class Reference:
    name: str
    namespace: Namespace
    span: Span
    # For an argument name or an output field: the imported program's name it belongs to.
    program: str | None = None


@dataclass(frozen=True, slots=True)
class PropertyName:
    """A property key (``model:``) and what it sits under: agent, session, ask or
    permissions."""

    name: str
    span: Span
    owner: Literal["agent", "session", "ask", "permissions"]
    value: Any


@dataclass(slots=True)
class Index:
    definitions: list[Definition] = field(default_factory=list)
    references: list[Reference] = field(default_factory=list)
    properties: list[PropertyName] = field(default_factory=list)
    # Variables bound to the result of invoking an imported program: name -> program name.
    program_results: dict[str, str] = field(default_factory=dict)
    uses: list[n.Use] = field(default_factory=list)
    _starts: list[int] = field(default_factory=list, repr=False)
    _spots: list[Definition | Reference | PropertyName] = field(default_factory=list, repr=False)
    _by_name: dict[tuple[str, Namespace], list[Definition]] = field(
        default_factory=dict, repr=False
    )

    def finish(self) -> None:
        spots: list[Definition | Reference | PropertyName] = [
            *self.definitions,
            *self.references,
            *self.properties,
        ]
        spots.sort(key=lambda s: s.span.start)
        self._spots = spots
        self._starts = [s.span.start for s in spots]
        for definition in self.definitions:
            key = (definition.name, definition.namespace)
            self._by_name.setdefault(key, []).append(definition)

    def at(self, offset: int) -> Definition | Reference | PropertyName | None:
        """The definition, reference or property name under a character offset (its end
        included, so a cursor just after a name still finds it)."""
        i = bisect_right(self._starts, offset) - 1
        while i >= 0:
            spot = self._spots[i]
            if spot.span.start <= offset <= spot.span.end:
                return spot
            if offset - spot.span.start > 4096:  # spans here are names: nothing wider
                break
            i -= 1
        return None

    def named(self, name: str, namespace: Namespace) -> list[Definition]:
        return self._by_name.get((name, namespace), [])

    def resolve(self, ref: Reference) -> Definition | None:
        """The definition a reference names, preferring the innermost scoped one."""
        candidates = self.named(ref.name, ref.namespace)
        offset = ref.span.start
        inner = [
            d for d in candidates if d.region is not None and d.region[0] <= offset < d.region[1]
        ]
        if inner:
            return max(inner, key=lambda d: d.region[0] if d.region else 0)
        flat = [d for d in candidates if d.region is None]
        return flat[0] if flat else None

    def references_to(self, definition: Definition) -> list[Reference]:
        return [
            r
            for r in self.references
            if r.name == definition.name
            and r.namespace == definition.namespace
            and self.resolve(r) is definition
        ]

    def visible_variables(self, offset: int) -> list[Definition]:
        """Variables usable at ``offset``: flat ones and scoped ones whose body holds it."""
        return [
            d
            for d in self.definitions
            if d.namespace == "variable"
            and (d.region is None or d.region[0] <= offset < d.region[1])
        ]

    def usable_variables(self, offset: int) -> list[Definition]:
        """The visible variables bound before ``offset``: a flat name once the statement
        declaring it has ended (an input from the start: the caller gives it before the run),
        any of them inside an agent or block definition (run wherever it is invoked)."""
        order_free = any(
            d.kind in ("agent", "block") and d.node.span.start <= offset < d.node.span.end
            for d in self.definitions
        )
        return [
            d
            for d in self.visible_variables(offset)
            if order_free or d.region is not None or d.kind == "input" or d.node.span.end <= offset
        ]


def build_index(program: n.Program) -> Index:
    indexer = _Indexer()
    indexer.body(program.body)
    indexer.index.finish()
    return indexer.index


def _region(body: Iterable[Any], fallback: Span) -> tuple[int, int]:
    spans = [s.span for s in body]
    if not spans:
        return (fallback.start, fallback.end)
    return (min(fallback.start, spans[0].start), max(fallback.end, spans[-1].end))


class _Indexer:
    def __init__(self) -> None:
        self.index = Index()
        self.dispatch: dict[type, Callable[[Any], None]] = {
            n.Use: self.use,
            n.Input: self.input,
            n.Output: self.output,
            n.AgentDef: self.agent,
            n.BlockDef: self.block,
            n.Binding: self.binding,
            n.Assign: self.assign,
            n.Session: self.session,
            n.Ask: self.ask,
            n.ProgramCall: self.program_call,
            n.DoBlock: lambda node: self.body(node.body),
            n.DoCall: self.do_call,
            n.Arrow: lambda node: self.each(node.steps),
            n.Parallel: self.parallel,
            n.Repeat: self.repeat,
            n.ForEach: self.for_each,
            n.Loop: self.loop,
            n.Pipeline: self.pipeline,
            n.Try: self.try_,
            n.Throw: lambda node: self.visit(node.message),
            n.Choice: self.choice,
            n.If: self.if_,
            n.Name: self.name,
            n.Attribute: self.attribute,
            n.StringLit: self.string,
            n.ArrayLit: lambda node: self.each(node.elements),
            n.ObjectContext: lambda node: self.each(node.names),
            n.Modifier: lambda node: self.visit(node.value),
        }

    # --- helpers ----------------------------------------------------------------------------

    def define(
        self,
        name: n.Name,
        kind: DefKind,
        node: Any,
        region: tuple[int, int] | None = None,
    ) -> None:
        if name.id:
            self.index.definitions.append(Definition(name.id, kind, name.span, node, region))

    def refer(
        self, name: str, namespace: Namespace, span: Span, program: str | None = None
    ) -> None:
        if name:
            self.index.references.append(Reference(name, namespace, span, program))

    def visit(self, node: Any) -> None:
        if node is None:
            return
        handler = self.dispatch.get(type(node))
        if handler is not None:
            handler(node)

    def each(self, nodes: Iterable[Any]) -> None:
        for node in nodes:
            self.visit(node)

    def body(self, stmts: Iterable[Any]) -> None:
        self.each(stmts)

    def scoped(self, names: Iterable[n.Name | None], node: Any, body: tuple[Any, ...]) -> None:
        region = _region(body, node.span)
        for name in names:
            if name is not None:
                self.define(name, "scoped", node, region)
        self.body(body)

    def remember_program(self, target: str, value: Any) -> None:
        if isinstance(value, n.ProgramCall):
            self.index.program_results[target] = value.callee.id

    # --- declarations -----------------------------------------------------------------------

    def use(self, node: n.Use) -> None:
        from openprose.checker.imports import default_name

        self.index.uses.append(node)
        if node.alias is not None:
            self.define(node.alias, "import", node)
        elif node.path.value:
            # Without an alias the program goes by its slug; its definition is the path.
            slug = default_name(node.path.value)
            self.index.definitions.append(Definition(slug, "import", node.path.span, node))

    def input(self, node: n.Input) -> None:
        self.define(node.name, "input", node)

    def output(self, node: n.Output) -> None:
        self.visit(node.value)
        self.define(node.name, "output", node)
        self.remember_program(node.name.id, node.value)

    def agent(self, node: n.AgentDef) -> None:
        self.define(node.name, "agent", node)
        self.properties(node.properties, "agent")

    def properties(self, props: tuple[n.Property, ...], owner: Literal["agent", "session"]) -> None:
        for prop in props:
            self.index.properties.append(
                PropertyName(prop.name.id, prop.name.span, owner, prop.value)
            )
            value = prop.value
            if isinstance(value, n.PermissionsBlock):
                for rule in value.rules:
                    self.index.properties.append(
                        PropertyName(rule.name.id, rule.name.span, "permissions", rule.value)
                    )
            elif prop.name.id == _SKILLS and isinstance(value, n.ArrayLit):
                for skill in value.elements:  # a skill names an import: its alias or slug
                    if isinstance(skill, n.StringLit) and not skill.triple:
                        self.refer(skill.value, "program", _inside_quotes(skill.span))
            elif prop.name.id == _CONTEXT or isinstance(value, n.StringLit | n.Invalid):
                self.visit(value)
            elif not isinstance(value, n.Name | n.NumberLit | n.ArrayLit):
                self.visit(value)  # an expression where a word was expected: still indexed

    def block(self, node: n.BlockDef) -> None:
        self.define(node.name, "block", node)
        self.scoped(node.params, node, node.body)

    def binding(self, node: n.Binding) -> None:
        self.visit(node.value)
        target = node.target
        if isinstance(target, n.Name):
            self.define(target, node.kind, node)
            self.remember_program(target.id, node.value)
        else:
            for name in target.names:
                self.define(name, node.kind, node)
                if isinstance(node.value, n.ProgramCall):
                    # `let { a } = program(...)`: `a` is also one of the program's outputs.
                    self.refer(name.id, "output-field", name.span, node.value.callee.id)

    def assign(self, node: n.Assign) -> None:
        self.visit(node.value)
        self.refer(node.target.id, "variable", node.target.span)

    # --- statements and expressions ---------------------------------------------------------

    def session(self, node: n.Session) -> None:
        self.visit(node.prompt)
        if node.agent is not None:
            self.refer(node.agent.id, "agent", node.agent.span)
        self.properties(node.properties, "session")

    def ask(self, node: n.Ask) -> None:
        self.visit(node.question)
        for prop in node.properties:
            self.index.properties.append(
                PropertyName(prop.name.id, prop.name.span, "ask", prop.value)
            )
            self.visit(prop.value)  # the names its options and default read

    def program_call(self, node: n.ProgramCall) -> None:
        callee = node.callee.id
        self.refer(callee, "program", node.callee.span)
        for arg in node.args:
            self.refer(arg.name.id, "argument", arg.name.span, callee)
            self.visit(arg.value)

    def do_call(self, node: n.DoCall) -> None:
        self.refer(node.name.id, "block", node.name.span)
        self.each(node.args)

    def parallel(self, node: n.Parallel) -> None:
        self.each(node.modifiers)
        for branch in node.branches:
            self.visit(branch.body)
            if branch.name is not None:
                self.define(branch.name, "branch", branch)
                self.remember_program(branch.name.id, branch.body)

    def repeat(self, node: n.Repeat) -> None:
        self.visit(node.count)
        self.scoped((node.index,), node, node.body)

    def for_each(self, node: n.ForEach) -> None:
        self.visit(node.collection)
        self.each(node.modifiers)
        self.scoped((node.item, node.index), node, node.body)

    def loop(self, node: n.Loop) -> None:
        self.each(node.modifiers)
        self.scoped((node.index,), node, node.body)

    def pipeline(self, node: n.Pipeline) -> None:
        self.visit(node.source)
        for op in node.ops:
            if op.op in _IMPLICIT_ITEM_OPS:
                # The implicit `item` is declared by the stage itself: its `|` stands for it.
                region = _region(op.body, op.span)
                self.index.definitions.append(
                    Definition("item", "scoped", _head(op.span), op, region)
                )
                self.body(op.body)
            else:
                self.scoped((op.accumulator, op.item), op, op.body)

    def try_(self, node: n.Try) -> None:
        self.body(node.body)
        if node.catch is not None:
            self.scoped((node.catch.error,), node.catch, node.catch.body)
        if node.finally_body is not None:
            self.body(node.finally_body)

    def choice(self, node: n.Choice) -> None:
        for option in node.options:
            self.body(option.body)

    def if_(self, node: n.If) -> None:
        for branch in node.branches:
            self.body(branch.body)
        if node.else_body is not None:
            self.body(node.else_body)

    def name(self, node: n.Name) -> None:
        self.refer(node.id, "variable", node.span)

    def attribute(self, node: n.Attribute) -> None:
        root: n.Name | n.Attribute = node
        fields: list[n.Attribute] = []
        while isinstance(root, n.Attribute):
            fields.append(root)
            root = root.value
        self.name(root)
        program = self.index.program_results.get(root.id)
        if program is not None:
            first = fields[-1]  # `result.field`: the field right after the root
            self.refer(first.attr, "output-field", _tail(first.span, len(first.attr)), program)

    def string(self, node: n.StringLit) -> None:
        for part in node.interpolations:
            # `{name}` or `{name.path}`: the name sits right after the brace.
            span = part.span
            start = span.start + 1
            name_span = Span(
                start,
                start + len(part.name),
                span.line,
                span.column + 1,
                span.line,
                span.column + 1 + len(part.name),
            )
            self.refer(part.name, "variable", name_span)
            program = self.index.program_results.get(part.name)
            if program is not None and part.path:  # `{result.field}`: an output's name
                field_start = name_span.end + 1
                length = len(part.path[0])
                self.refer(
                    part.path[0],
                    "output-field",
                    Span(
                        field_start,
                        field_start + length,
                        span.line,
                        name_span.end_column + 1,
                        span.line,
                        name_span.end_column + 1 + length,
                    ),
                    program,
                )


def _head(span: Span) -> Span:
    return Span(span.start, span.start + 1, span.line, span.column, span.line, span.column + 1)


def _tail(span: Span, length: int) -> Span:
    return Span(
        span.end - length,
        span.end,
        span.end_line,
        span.end_column - length,
        span.end_line,
        span.end_column,
    )


def _inside_quotes(span: Span) -> Span:
    return Span(
        span.start + 1,
        span.end - 1,
        span.line,
        span.column + 1,
        span.end_line,
        span.end_column - 1,
    )

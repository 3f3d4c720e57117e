"""The walk of a program that bounds its model calls, statement by statement, as the VM
would run them (`openprose.vm.interpreter`): what each construct may ask and how often.

Token counts (docs/decisions.md, estimate32): a request's input is at least one token per
word of the prompt text the program writes (interpolated values and context add, never
take away) and at most one token per character of that text, plus, for what is only known
at run time, `max_tokens` per interpolated answer and the context the VM may add (capped by
`context_budget` characters). An answer is at most `max_tokens` tokens."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from openprose import nodes as n
from openprose.vm.agents import agent_spec
from openprose.vm.estimates.bounds import (
    ONE,
    Range,
    Tally,
    Use,
    cheapest,
    exactly,
    in_sequence,
    one_of,
)
from openprose.vm.expressions import literal
from openprose.vm.judgments import SYSTEM as JUDGE_SYSTEM
from openprose.vm.judgments import choice_question, condition_question, filter_question
from openprose.vm.prompts import NO_TASK
from openprose.vm.runtime import AgentSpec, VMConfig
from openprose.vm.values import Value, as_collection, render

JUDGMENT_MAX_TOKENS = 200  # openprose.vm.judge: a verdict's answer
JUDGMENT_ATTEMPTS = 2  # an unreadable verdict is asked once more
FRAMING = 64  # headings and labels the VM wraps around task, memory and context
ITEM_FRAMING = 32  # per context item: its `### label`, a trim or window note
TOOL_DEFINITIONS = 4_000  # the tools' schemas and the note on them, per turn
MEMORY_PROMPT = 96  # the memory update's instructions

UNKNOWN_ITEMS = Range(0, None)


@dataclass(frozen=True, slots=True)
class Shape:
    """What the walk knows of a value: its size in tokens (at most) and, iterated by `for`
    or a pipeline, how many items it has."""

    tokens: int | None
    items: Range = field(default=UNKNOWN_ITEMS)


class Walker:
    def __init__(
        self,
        program: n.Program,
        config: VMConfig,
        *,
        inputs: Mapping[str, Value] | None,
        imports: Mapping[str, n.Program],
        unbounded: list[str],
        path: str,
    ) -> None:
        self.program = program
        self.config = config
        self.inputs = dict(inputs) if inputs is not None else None
        self.imports = imports
        self.unbounded = unbounded  # why a bound is missing, one line each
        self.path = path
        self.env: dict[str, Shape] = {}
        self.agents: dict[str, AgentSpec] = {}
        self.blocks: dict[str, n.BlockDef] = {}
        self.expanding: set[str] = set()  # blocks being walked (recursion)
        # at most how many answers the thread holds so far (its recent ones are the
        # context of a session without `context:` and of a judgment)
        self.answers: int | None = 0
        for stmt in _all_statements(program.body):
            if isinstance(stmt, n.AgentDef):
                self.agents[stmt.name.id] = agent_spec(stmt)
            elif isinstance(stmt, n.BlockDef):
                self.blocks[stmt.name.id] = stmt

    # --- statements --------------------------------------------------------------------

    def walk(self) -> Tally:
        return self.body(self.program.body)

    def body(self, body: tuple[Any, ...]) -> Tally:
        return in_sequence(self.stmt(stmt)[0] for stmt in body)

    def stmt(self, node: Any) -> tuple[Tally, Shape]:
        handler = getattr(self, f"_{type(node).__name__.lower()}", None)
        if handler is None:
            return Tally(), Shape(0, ONE)
        tally, shape = handler(node)
        if shape.tokens is None and isinstance(node, _BUILT_OF_ANSWERS):
            # its value holds answers given inside it, rendered with a `[i] ` each
            calls = sum((u.calls for u in tally.by_model.values()), Range(0, 0)).high
            made = tally.output.high
            if made is not None and calls is not None:
                shape = Shape(made + ITEM_FRAMING * calls, shape.items)
        return tally, shape

    def _input(self, node: n.Input) -> tuple[Tally, Shape]:
        name = node.name.id
        if self.inputs is not None and name in self.inputs:
            value = self.inputs[name]
            shape = Shape(len(render(value)), exactly(len(as_collection(value))))
        else:
            shape = Shape(None)
        self.env[name] = shape
        return Tally(), shape

    def _binding(self, node: n.Binding) -> tuple[Tally, Shape]:
        tally, shape = self.stmt(node.value)
        names = [node.target] if isinstance(node.target, n.Name) else list(node.target.names)
        for name in names:
            self.env[name.id] = shape if len(names) == 1 else Shape(shape.tokens)
        return tally, shape

    def _assign(self, node: n.Assign) -> tuple[Tally, Shape]:
        tally, shape = self.stmt(node.value)
        old = self.env.get(node.target.id)
        # after a loop the variable holds one of the values it was given
        self.env[node.target.id] = shape if old is None else _either(old, shape)
        return tally, shape

    def _output(self, node: n.Output) -> tuple[Tally, Shape]:
        tally, shape = self.stmt(node.value)
        self.env[node.name.id] = shape
        return tally, shape

    def _stringlit(self, node: n.StringLit) -> tuple[Tally, Shape]:
        tokens = self._text_high(node)
        if not node.interpolations:
            return Tally(), Shape(tokens, exactly(len(as_collection(node.value))))
        # iterated, text that may read as a JSON array (`as_collection`) is a list
        first = node.parts[0]
        plain = isinstance(first, str) and first.strip()[:1] not in ("", "[", "`")
        return Tally(), Shape(tokens, ONE if plain else UNKNOWN_ITEMS)

    def _numberlit(self, node: n.NumberLit) -> tuple[Tally, Shape]:
        return Tally(), Shape(len(node.raw), ONE)

    def _discretion(self, node: n.Discretion) -> tuple[Tally, Shape]:
        return Tally(), Shape(len(node.text), ONE)

    def _name(self, node: n.Name) -> tuple[Tally, Shape]:
        return Tally(), self.env.get(node.id, Shape(None))

    def _attribute(self, node: n.Attribute) -> tuple[Tally, Shape]:
        root: Any = node
        while isinstance(root, n.Attribute):
            root = root.value
        return Tally(), Shape(self.env.get(root.id, Shape(None)).tokens)

    def _arraylit(self, node: n.ArrayLit) -> tuple[Tally, Shape]:
        parts = [self.stmt(element) for element in node.elements]
        tokens = _sum(s.tokens for _, s in parts)
        return in_sequence(t for t, _ in parts), Shape(tokens, exactly(len(node.elements)))

    def _objectcontext(self, node: n.ObjectContext) -> tuple[Tally, Shape]:
        tokens = _sum(self.env.get(x.id, Shape(None)).tokens for x in node.names)
        return Tally(), Shape(tokens, exactly(len(node.names)))

    def _doblock(self, node: n.DoBlock) -> tuple[Tally, Shape]:
        return self._sequence(node.body)

    def _docall(self, node: n.DoCall) -> tuple[Tally, Shape]:
        block = self.blocks.get(node.name.id)
        arg_tally = in_sequence(self.stmt(a)[0] for a in node.args)
        if block is None:
            return arg_tally, Shape(None)
        if block.name.id in self.expanding:
            self._unbounded(node, f"block `{block.name.id}` calls itself")
            return arg_tally + _unbounded_calls(self.config.default_model), Shape(None)
        for index, param in enumerate(block.params):
            arg = node.args[index] if index < len(node.args) else None
            self.env[param.id] = self.stmt(arg)[1] if arg is not None else Shape(0, ONE)
        self.expanding.add(block.name.id)
        try:
            tally, shape = self._sequence(block.body)
        finally:
            self.expanding.discard(block.name.id)
        return arg_tally + tally, shape

    def _arrow(self, node: n.Arrow) -> tuple[Tally, Shape]:
        return self._sequence(node.steps)

    def _sequence(self, body: tuple[Any, ...]) -> tuple[Tally, Shape]:
        tally, shape = Tally(), Shape(0, ONE)
        for stmt in body:
            part, shape = self.stmt(stmt)
            tally = tally + part
        return tally, shape

    def _try(self, node: n.Try) -> tuple[Tally, Shape]:
        body, shape = self._sequence(node.body)
        caught = self.body(node.catch.body) if node.catch is not None else Tally()
        finally_ = self.body(node.finally_body) if node.finally_body is not None else Tally()
        # a failure may come at the first call or the last: the body may run in part or
        # whole, the `catch` not at all or after the whole body
        either = body.either(caught) if node.catch is not None else body
        return (body + caught).lows_of(either) + finally_, shape

    def _if(self, node: n.If) -> tuple[Tally, Shape]:
        paths: list[Tally] = []
        asked = Tally()
        for branch in node.branches:
            asked = asked + self._judgment(condition_question(branch.condition.text, ""))
            paths.append(asked + self.body(branch.body))
        paths.append(asked + (self.body(node.else_body) if node.else_body else Tally()))
        return one_of(paths), Shape(None)

    def _choice(self, node: n.Choice) -> tuple[Tally, Shape]:
        labels = [option.label.value for option in node.options]
        asked = self._judgment(choice_question(node.criteria.text, labels, ""))
        return asked + one_of(self.body(o.body) for o in node.options), Shape(None)

    def _repeat(self, node: n.Repeat) -> tuple[Tally, Shape]:
        count = self._count(node.count)
        if count is None:
            self._unbounded(node, "`repeat` with a count not known before the run")
            times = Range(0, None)
        else:
            times = exactly(count)
        return self._repeated(node.body, times), Shape(None, times)

    def _foreach(self, node: n.ForEach) -> tuple[Tally, Shape]:
        tally, shape = self.stmt(node.collection)
        items = shape.items
        if items.high is None:
            self._unbounded(node, self._why_unknown(node.collection, "`for`"))
        self.env[node.item.id] = Shape(shape.tokens, UNKNOWN_ITEMS)
        if node.index is not None:
            self.env[node.index.id] = Shape(8, ONE)
        if not node.parallel:
            return tally + self._repeated(node.body, items), Shape(None, items)
        join, count = _join(node.modifiers)
        once = self._once(node.body, items)
        if join == "all":
            return tally + once * items, Shape(None, items)
        # a race ends once `needed` iterations are done; the others may have run too
        done = min(1 if join == "first" else count, items.low)
        return tally + (once * items).lows_of(once * exactly(done)), Shape(None, items)

    def _loop(self, node: n.Loop) -> tuple[Tally, Shape]:
        limit = _modifier_int(node.modifiers, "max")
        if node.index is not None:
            self.env[node.index.id] = Shape(8, ONE)
        if node.kind == "loop":
            if limit is None:
                self._unbounded(node, "`loop:` without `max:` ends only by an error")
                return self._repeated(node.body, Range(1, None)), Shape(None)
            return self._repeated(node.body, exactly(limit)), Shape(None)
        assert node.condition is not None
        judged = self._judgment(condition_question(node.condition.text, ""))
        if limit is None:
            self._unbounded(node, f"`loop {node.kind}` without `max:`")
            checks, bodies = Range(1, None), Range(0, None)
        else:
            checks, bodies = Range(1, limit + 1), Range(0, limit)
        return judged * checks + self._repeated(node.body, bodies), Shape(None)

    def _parallel(self, node: n.Parallel) -> tuple[Tally, Shape]:
        branches: list[Tally] = []
        shapes: list[Shape] = []
        for branch in node.branches:
            tally, shape = self.stmt(branch.body)
            branches.append(tally)
            shapes.append(shape)
            if branch.name is not None:
                self.env[branch.name.id] = shape
        join, count = _join(node.modifiers)
        needed = {"all": len(branches), "first": 1, "any": min(count, len(branches))}[join]
        tally = in_sequence(branches) if join == "all" else cheapest(branches, needed)
        tokens = _sum(s.tokens for s in shapes)
        return tally, Shape(tokens, Range(needed, len(branches)))

    def _pipeline(self, node: n.Pipeline) -> tuple[Tally, Shape]:
        tally, shape = self.stmt(node.source)
        if shape.items.high is None and node.ops:
            self._unbounded(node, self._why_unknown(node.source, "a pipeline"))
        items, element = shape.items, Shape(shape.tokens)
        for op in node.ops:
            self.env["item"] = element
            if op.op == "reduce":
                self.env[op.accumulator.id if op.accumulator else "acc"] = element
                self.env[op.item.id if op.item else "item"] = element
                high = None if items.high is None else max(items.high - 1, 0)
                tally = tally + self._repeated(op.body, Range(max(items.low - 1, 0), high))
                items, element = ONE, Shape(None)
                continue
            tally = tally + self._repeated(op.body, items)
            if op.op == "filter":
                # a literal yes/no answer is taken as it is: no verdict asked
                verdict = self._judgment(filter_question("", ""), calls=Range(0, 1))
                tally = tally + verdict * items
                items = Range(0, items.high)
            else:
                element = Shape(self.config.max_tokens)
        return tally, Shape(None, items)

    def _programcall(self, node: n.ProgramCall) -> tuple[Tally, Shape]:
        args = {a.name.id: self.stmt(a.value) for a in node.args}
        program = self.imports.get(node.callee.id)
        tally = in_sequence(t for t, _ in args.values())
        if program is None:
            self._unbounded(node, f"`{node.callee.id}(...)`: the imported program was not loaded")
            return tally + _unbounded_calls(self.config.default_model), Shape(None)
        inner = Walker(
            program,
            self.config,
            inputs=None,
            imports={},
            unbounded=self.unbounded,
            path=program.path,
        )
        inner.env.update({name: shape for name, (_, shape) in args.items()})
        body = in_sequence(inner.stmt(s)[0] for s in program.body if not isinstance(s, n.Input))
        return tally + body, Shape(None)

    # --- sessions and judgments -----------------------------------------------------

    def _session(self, node: n.Session) -> tuple[Tally, Shape]:
        props = {p.name.id: p.value for p in node.properties}
        agent = self.agents.get(node.agent.id) if node.agent is not None else None
        model = self._model_of(props, agent)
        task, system = _task_and_system(node, props, agent)
        low = _words(task) + (_words(system) if system is not None else 0)
        fixed = self._text_high(task) if task is not None else len(NO_TASK)
        if system is not None:
            fixed = _add(fixed, self._text_high(system))
        context = min(self._context_high(props.get("context")), self.config.context_budget)
        memory = self.config.max_tokens if node.kind == "resume" else 0
        one_request = _add(fixed, context + memory + FRAMING)
        retries = _retries(props)
        tools = agent is not None and bool(agent.permissions or agent.skills)
        if tools:
            use = self._tool_loop(low, one_request)
        else:
            use = Use(ONE, ONE, Range(low, one_request), Range(0, self.config.max_tokens))
            use = Use(use.calls, Range(1, 1 + retries), use.input, use.output, one_request)
        if retries and tools:
            use = Use(use.calls, Range(use.calls.low, _mul(use.calls.high, 1 + retries)),
                      use.input, use.output, use.largest_input)  # fmt: skip
        tally = Tally({model: use})
        if agent is not None and agent.persist is not None:
            tally = tally + self._memory_update(agent, fixed)
        self.answers = _add(self.answers, 1)
        shape = Shape(self.config.max_tokens)
        if node.name is not None:
            self.env[node.name.id] = shape
        return tally, shape

    def _tool_loop(self, low: int, first: int | None) -> Use:
        config = self.config
        turns = config.max_turns
        per_turn = min(config.max_tool_calls_per_turn, config.max_tool_calls_per_session)
        # each later turn carries the answers and tool results before it
        added = config.max_tokens + per_turn * (config.tool_output_cap + ITEM_FRAMING)
        whole = config.max_tool_calls_per_session * (config.tool_output_cap + ITEM_FRAMING)
        high: int | None = 0
        largest: int | None = 0
        for turn in range(turns):
            grown = min(turn * added, whole + turn * config.max_tokens)
            request = _add(first, TOOL_DEFINITIONS + grown)
            high, largest = _add(high, request), request
        return Use(
            Range(1, turns),
            Range(1, turns),
            Range(low, high),
            Range(0, turns * config.max_tokens),
            largest,
        )

    def _memory_update(self, agent: AgentSpec, task: int | None) -> Tally:
        config = self.config
        request = _add(task, MEMORY_PROMPT + 2 * config.max_tokens)
        use = Use(ONE, ONE, Range(0, request), Range(0, config.max_tokens), request)
        return Tally({agent.model or config.default_model: use})

    def _judgment(self, question: str, calls: Range = ONE) -> Tally:
        """One verdict of the evaluator: its question as written with no context; the
        context it is asked with is the thread's recent answers, within the budget."""
        config = self.config
        context = min(self._context_high(None), config.context_budget)
        asked = len(JUDGE_SYSTEM) + len(question) + context
        # the second attempt repeats the question after the unreadable answer
        high = asked + (asked + len(question) + JUDGMENT_MAX_TOKENS + FRAMING)
        low = len(JUDGE_SYSTEM.split()) + len(question.split()) - 2  # "(nothing yet)" may go
        use = Use(
            Range(calls.low, calls.high and JUDGMENT_ATTEMPTS * calls.high),
            Range(calls.low, calls.high and JUDGMENT_ATTEMPTS * calls.high),
            Range(calls.low * max(low, 0), calls.high and high * calls.high),
            Range(calls.low, calls.high and JUDGMENT_ATTEMPTS * JUDGMENT_MAX_TOKENS * calls.high),
            asked + len(question) + JUDGMENT_MAX_TOKENS + FRAMING,
        )
        return Tally({config.evaluator_model: use})

    # --- helpers -----------------------------------------------------------------------

    def _repeated(self, body: tuple[Any, ...], times: Range) -> Tally:
        return self._once(body, times) * times

    def _once(self, body: tuple[Any, ...], times: Range) -> Tally:
        """One run of a body that runs `times` times."""
        if times.high is None or times.high > 1:
            # a later run sees the answers of the earlier ones (context without `context:`)
            each = _answers_per_run(body)
            runs = times.high
            if self.answers is None or each is None or runs is None:
                self.answers = None
            else:
                self.answers += each * runs
        return self.body(body)

    def _context_high(self, expr: Any) -> int:
        """At most how many tokens of context a request carries (before the budget cap)."""
        budget = self.config.context_budget
        if expr is None:
            shown = self.answers
            items = self.config.history_items
            items = items if shown is None else min(shown, items)
            return items * (self.config.max_tokens + ITEM_FRAMING) + (ITEM_FRAMING if items else 0)
        names = expr.elements if isinstance(expr, n.ArrayLit) else (expr,)
        total = 0
        for item in names:
            tokens = self.stmt(item)[1].tokens
            total += budget if tokens is None else tokens + ITEM_FRAMING
        return total

    def _text_high(self, text: n.StringLit) -> int | None:
        total: int | None = sum(len(p) for p in text.parts if isinstance(p, str))
        for part in text.interpolations:
            shape = self.env.get(part.name, Shape(None))
            if shape.tokens is None:
                self._unbounded(part, f"`{{{part.name}}}`: its size is not known before the run")
            total = _add(total, shape.tokens)
        return total

    def _model_of(self, props: dict[str, Any], agent: AgentSpec | None) -> str:
        if "model" in props:
            return str(literal(props["model"]))
        if agent is not None and agent.model:
            return agent.model
        return self.config.default_model

    def _count(self, expr: Any) -> int | None:
        value = literal(expr)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(expr, n.Name) and self.inputs is not None and expr.id in self.inputs:
            given = self.inputs[expr.id]
            try:
                return int(str(given))
            except ValueError:
                return None
        return None

    def _why_unknown(self, expr: Any, what: str) -> str:
        if isinstance(expr, n.Name) and any(
            isinstance(s, n.Input) and s.name.id == expr.id for s in self.program.body
        ):
            return f"{what} over input `{expr.id}`, not given (pass it to bound this)"
        return f"{what} over a collection whose size is known only at run time"

    def _unbounded(self, node: Any, why: str) -> None:
        line = f"{self.path}:{node.span.line}: {why}"
        if line not in self.unbounded:
            self.unbounded.append(line)


# Values made of the answers of the sessions inside them (and nothing else unknown).
_BUILT_OF_ANSWERS = (
    n.Pipeline,
    n.Parallel,
    n.ForEach,
    n.Repeat,
    n.Loop,
    n.DoBlock,
    n.DoCall,
    n.Arrow,
    n.If,
    n.Choice,
)


def _answers_per_run(body: tuple[Any, ...]) -> int | None:
    """At most how many answers one run of `body` adds to its thread: its sessions, when
    nothing in it repeats or calls (else None: as many as the context window holds)."""
    count = 0
    stack: list[Any] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, _REPEATS):
            return None
        if isinstance(node, n.Session):
            count += 1
        elif isinstance(node, tuple):
            stack.extend(node)
        elif hasattr(node, "__dataclass_fields__"):
            stack.extend(getattr(node, f) for f in node.__dataclass_fields__ if f != "span")
    return count


_REPEATS = (n.Repeat, n.ForEach, n.Loop, n.Pipeline, n.DoCall, n.ProgramCall)


def _task_and_system(
    node: n.Session, props: dict[str, Any], agent: AgentSpec | None
) -> tuple[n.StringLit | None, n.StringLit | None]:
    """As `Sessions._task_and_system` chooses them (None task: the VM's NO_TASK)."""
    prompt = node.prompt if node.prompt is not None else props.get("prompt")
    if node.prompt is not None and isinstance(props.get("prompt"), n.StringLit):
        prompt = props["prompt"]
    if isinstance(prompt, n.StringLit):
        return prompt, agent.prompt if agent is not None else None
    if agent is not None and agent.prompt is not None:
        return agent.prompt, None
    return None, None


def _words(text: n.StringLit | None) -> int:
    if text is None:
        return len(NO_TASK.split())
    return len("".join(p for p in text.parts if isinstance(p, str)).split())


def _retries(props: dict[str, Any]) -> int:
    value = literal(props["retry"]) if "retry" in props else 0
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _join(modifiers: tuple[n.Modifier, ...]) -> tuple[str, int]:
    join, count = "all", 1
    for modifier in modifiers:
        value = literal(modifier.value)
        if modifier.name is None and value in ("all", "first", "any"):
            join = str(value)
        elif modifier.name is not None and modifier.name.id == "count" and isinstance(value, int):
            count = max(value, 1)
    return join, count


def _modifier_int(modifiers: tuple[n.Modifier, ...], name: str) -> int | None:
    for modifier in modifiers:
        if modifier.name is not None and modifier.name.id == name:
            value = literal(modifier.value)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
                return value
    return None


def _unbounded_calls(model: str) -> Tally:
    unknown = Range(0, None)
    return Tally({model: Use(unknown, unknown, unknown, unknown, None)})


def _either(a: Shape, b: Shape) -> Shape:
    tokens = None if a.tokens is None or b.tokens is None else max(a.tokens, b.tokens)
    return Shape(tokens, a.items.either(b.items))


def _add(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


def _mul(a: int | None, b: int) -> int | None:
    return None if a is None else a * b


def _sum(values: Any) -> int | None:
    total: int | None = 0
    for value in values:
        total = _add(total, value)
    return total


def _all_statements(body: tuple[Any, ...]) -> list[Any]:
    """Definitions anywhere (hoisted, as the interpreter finds them)."""
    found: list[Any] = []
    stack = list(body)
    while stack:
        stmt = stack.pop()
        found.append(stmt)
        for attr in ("body", "else_body", "finally_body"):
            inner = getattr(stmt, attr, None)
            if isinstance(inner, tuple):
                stack.extend(inner)
    return found

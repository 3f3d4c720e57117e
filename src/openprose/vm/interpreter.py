"""The interpreter: runs a program's statements, on asyncio.

One `Interpreter` runs one program (an invoked program gets its own, sharing the journal, the
model router and the replay log). Each statement runs under a step id (see `steps`), and every
model call — session, judgment, memory update — is journaled under it (see `calls`), so a
resumed run serves finished work from the journal instead of asking a provider again.

This module holds the dispatch and the plain statements (bindings, blocks, `if`, `choice`,
`try`/`throw`) and evaluation; the rest has rooms of its own: `sessions`, `judge`, `agents`
(memory), `context`, `calls`, `loops`, `parallel`, `pipelines`, `programs`, `expressions`.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openprose import nodes as n
from openprose.record import events as ev
from openprose.record import steps
from openprose.record.runstore import RunStore
from openprose.shapes import returns_of
from openprose.vm import asking, loops, parallel, pipelines, programs
from openprose.vm.agents import Memories, agent_spec
from openprose.vm.bindings import Bindings
from openprose.vm.calls import ModelCalls
from openprose.vm.context import Contexts
from openprose.vm.errors import ProseError, ProseRuntimeError, ThrownError
from openprose.vm.expressions import Expressions, discretion_text
from openprose.vm.frame import Ctx
from openprose.vm.judge import Judge
from openprose.vm.prompts import History
from openprose.vm.runtime import AgentSpec, LoadedProgram, Shared
from openprose.vm.scope import Scope
from openprose.vm.sessions import Sessions
from openprose.vm.tools.approvals import ApprovalPending
from openprose.vm.typed import check_output, typed_of
from openprose.vm.values import ErrorValue, Value

if TYPE_CHECKING:
    from openprose.vm.tools.skills import Skill

Handler = Callable[[Any, Any, Ctx, str], Awaitable[Value]]  # (interpreter, node, ctx, step)


class Interpreter:
    def __init__(
        self,
        program: n.Program,
        source_text: str,
        shared: Shared,
        store: RunStore,
        *,
        inputs: Mapping[str, Value] | None = None,
        imports: Mapping[str, LoadedProgram] | None = None,
        step_prefix: str = "",
        ceilings: tuple[Mapping[str, Any], ...] = (),
    ) -> None:
        self.program = program
        self.text = source_text
        self.shared = shared
        self.config = shared.config
        self.store = store
        self.inputs = dict(inputs or {})
        self.imports = dict(imports or {})
        self.prefix = step_prefix
        self.ceilings = ceilings  # an imported program's: caps every agent it defines
        self.root = Scope()
        self.outputs: dict[str, Value] = {}
        self.final_result: str | None = None  # set by run() when no output is declared
        self.agents: dict[str, AgentSpec] = {}
        self.skills: dict[str, Skill] = {}
        self.blocks: dict[str, n.BlockDef] = {}
        self.bound_somewhere: set[str] = set()  # filled with the definitions, before the run
        self.expressions = Expressions(program.path, self.bound_somewhere)
        self.bindings = Bindings(store, source_text)
        calls = ModelCalls(shared, store, program.path)
        contexts = Contexts(shared, store, self.expressions)
        self.judge = Judge(shared, store, calls, contexts, self.expressions)
        self.sessions = Sessions(
            shared,
            store,
            expressions=self.expressions,
            contexts=contexts,
            calls=calls,
            memories=Memories(shared, store, calls),
            bindings=self.bindings,
            agents=self.agents,
            skills=self.skills,
        )

    # --- entry -------------------------------------------------------------------------

    async def run(self) -> dict[str, Value]:
        found = _definitions(self.program)
        self.agents.update(
            {k: replace(a, ceilings=self.ceilings) for k, a in found.agents.items()}
            if self.ceilings
            else found.agents
        )
        self.blocks.update(found.blocks)
        self.bound_somewhere.update(found.bound)
        if self.agents:
            self._load_skills()
            self.shared.emit(
                ev.AgentsDeclared(
                    step=self.prefix,
                    agents={
                        a.name: {
                            "model": a.model,
                            "persist": a.persist,
                            "skills": list(a.skills),
                            "permissions": dict(a.permissions),
                            **({"ceilings": [dict(c) for c in a.ceilings]} if a.ceilings else {}),
                        }
                        for a in self.agents.values()
                    },
                )
            )
        self._check_inputs()
        ctx = Ctx(self.root, History(keep=self.config.history_items))
        await self.body(self.program.body, ctx, self.prefix)
        # prose.md returns "the final result if no outputs declared": the last answer on
        # the program's main thread of execution.
        if not found.outputs and ctx.history.entries:
            self.final_result = ctx.history.entries[-1].text
        return self.outputs

    def spawn(
        self, loaded: LoadedProgram, store: RunStore, inputs: Mapping[str, Value], prefix: str
    ) -> Interpreter:
        return Interpreter(
            loaded.program,
            loaded.text,
            self.shared,
            store,
            inputs=inputs,
            imports=loaded.imports,
            step_prefix=prefix,
            ceilings=loaded.ceilings,
        )

    def _load_skills(self) -> None:
        """The skill folders agents name, through the program's `use` statements; one
        that cannot be loaded is journaled (`skill_missing`) and its agent goes without.
        A resumed run uses the skills' text as journaled when it started (pinned by hash),
        even if the folder changed since."""
        wanted = {skill for agent in self.agents.values() for skill in agent.skills}
        if not wanted:
            return
        from openprose.vm.tools.skills import Skill, resolve_skills, skill_uses

        pinned = self.shared.replay.tools.skills
        for name in sorted(wanted & set(pinned)):
            self.skills[name] = Skill.from_event(pinned[name])
        wanted -= set(pinned)
        if not wanted:
            return
        uses = skill_uses(self.program)
        base = Path(self.program.path).resolve().parent
        found, problems = resolve_skills(uses, wanted, base, self.shared.project_dir)
        self.skills.update(found)
        for name, skill in found.items():
            self.shared.emit(ev.SkillLoaded(step=self.prefix, **skill.to_event()))
        for problem in problems:
            self.shared.emit(ev.SkillMissing(step=self.prefix, problem=problem))
            self.store.state(f"{self.prefix or '0'}→ skill missing: {problem}")

    def _check_inputs(self) -> None:
        declared = {s.name.id: s for s in self.program.body if isinstance(s, n.Input)}
        for name in self.inputs:
            if name not in declared:
                known = ", ".join(declared) or "none"
                raise ProseRuntimeError(
                    f"unknown input {name!r} (the program declares: {known})",
                    where=self.program.path,
                    code="E027",
                )
        for name, stmt in declared.items():
            if name not in self.inputs:
                raise ProseRuntimeError(
                    f"missing required input {name!r}: {stmt.text}",
                    where=self._where(stmt),
                    code="E026",
                )

    # --- statements --------------------------------------------------------------------

    # `body` and `stmt` hand back the awaitable of what they run rather than awaiting it in
    # a coroutine of their own: every coroutine between a session and its `pmap` worker is
    # entered again each time the session's call suspends and resumes.

    def body(self, body: tuple[n.Stmt, ...], ctx: Ctx, prefix: str) -> Awaitable[Value]:
        if len(body) == 1:
            return self.stmt(body[0], ctx, steps.statement(prefix, 1))
        return self._statements(body, ctx, prefix)

    async def _statements(self, body: tuple[n.Stmt, ...], ctx: Ctx, prefix: str) -> Value:
        value: Value = None
        for number, stmt in enumerate(body, start=1):
            value = await self.stmt(stmt, ctx, steps.statement(prefix, number))
        return value

    def stmt(self, stmt: Any, ctx: Ctx, step: str) -> Awaitable[Value]:
        handler = _HANDLERS.get(type(stmt))
        if handler is None:
            return self._cannot_run(stmt)
        tracer = self.shared.tracer
        if tracer is None or handler in _UNWRAPPED:
            return handler(self, stmt, ctx, step)
        return self._traced(tracer, handler, stmt, ctx, step)

    async def _traced(self, tracer: Any, handler: Handler, stmt: Any, ctx: Ctx, step: str) -> Value:
        kind = _KINDS.get(type(stmt)) or type(stmt).__name__.lower()
        with tracer.statement(kind, step, self.program.path, stmt.span.line):
            return await handler(self, stmt, ctx, step)

    async def _cannot_run(self, stmt: Any) -> Value:
        raise ProseRuntimeError(f"cannot run {type(stmt).__name__}", where=self._where(stmt))

    async def _nothing(self, stmt: Any, ctx: Ctx, step: str) -> Value:
        return None

    async def _use(self, stmt: n.Use, ctx: Ctx, step: str) -> Value:
        name = stmt.alias.id if stmt.alias else _slug(stmt.path.value)
        loaded = self.imports.get(name)
        if loaded is not None:
            self.store.state(f"{step}→ use {loaded.spec} sha256:{loaded.content_hash[:12]}")
        return None

    async def _input(self, stmt: n.Input, ctx: Ctx, step: str) -> Value:
        value = self.inputs[stmt.name.id]
        self.root.define(stmt.name.id, value)
        self.bindings.write(stmt.name.id, "input", stmt, value, ctx)
        return value

    async def _output(self, stmt: n.Output, ctx: Ctx, step: str) -> Value:
        if stmt.shape is not None:
            return await self._typed_output(stmt, ctx, step)
        value = await self.eval(stmt.value, ctx, step, name=stmt.name.id)
        ctx.scope.declare_output(stmt.name.id, value)
        self.outputs[stmt.name.id] = value
        self.bindings.write(stmt.name.id, "output", stmt, value, ctx)
        return value

    async def _typed_output(self, stmt: n.Output, ctx: Ctx, step: str) -> Value:
        """`output name: shape = value`: a session there asks for the shape (unless it
        declares its own); the value is checked against it before it is an output."""
        assert stmt.shape is not None
        if isinstance(stmt.value, n.Session) and returns_of(stmt.value) is None:
            self.sessions.output_shapes[id(stmt.value)] = stmt.shape
        value = await self.eval(stmt.value, ctx, step, name=stmt.name.id)
        where = self.expressions.where(stmt)
        try:
            typed = typed_of(stmt.shape, self.program.path)
        except ValueError as problem:
            raise ProseRuntimeError(str(problem), where=where, code="E180") from None
        assert typed is not None
        value, found = check_output(value, typed)
        if found:
            raise ProseRuntimeError(
                f"output {stmt.name.id!r} does not match its declared shape: " + "; ".join(found),
                where=where,
            )
        ctx.scope.declare_output(stmt.name.id, value)
        self.outputs[stmt.name.id] = value
        self.bindings.write(stmt.name.id, "output", stmt, value, ctx)
        return value

    async def _binding(self, stmt: n.Binding, ctx: Ctx, step: str) -> Value:
        target = stmt.target
        name = target.id if isinstance(target, n.Name) else None
        value = await self.eval(stmt.value, ctx, step, name=name)
        const = stmt.kind == "const"
        if isinstance(target, n.Name):
            ctx.scope.declare(target.id, value, const=const)
            self.bindings.write(target.id, stmt.kind, stmt, value, ctx)
            return value
        for item in target.names:
            part = self.expressions.property(value, item.id, item)
            ctx.scope.declare(item.id, part, const=const)
            self.bindings.write(item.id, stmt.kind, stmt, part, ctx)
        return value

    async def _assign(self, stmt: n.Assign, ctx: Ctx, step: str) -> Value:
        name = stmt.target.id
        owner = ctx.scope.owner(name)
        if owner is None:
            if name not in self.bound_somewhere:
                raise ProseRuntimeError(f"undefined variable {name!r}", where=self._where(stmt))
            # Its `let` is in a body that did not run (an `if` branch not taken: W156). The
            # namespace is flat, so this is that variable: the assignment binds it.
            return await self._bind_unbound(stmt, ctx, step)
        if name in owner.consts:
            raise ProseRuntimeError(f"cannot reassign const {name!r}", where=self._where(stmt))
        value = await self.eval(stmt.value, ctx, step, name=name)
        owner.vars[name] = value
        kind = "let"
        if owner.outputs is not None and name in owner.outputs:
            # `output` works like `let`: reassignment updates it (in a block's frame too)
            self.outputs[name] = value
            kind = "output"
        self.bindings.write(name, kind, stmt, value, ctx)
        return value

    async def _bind_unbound(self, stmt: n.Assign, ctx: Ctx, step: str) -> Value:
        name = stmt.target.id
        value = await self.eval(stmt.value, ctx, step, name=name)
        ctx.scope.declare(name, value)
        kind = "let"
        if ctx.scope.owner(name) is self.root and name in _definitions(self.program).outputs:
            self.root.declare_output(name, value)
            self.outputs[name] = value
            kind = "output"
        self.bindings.write(name, kind, stmt, value, ctx)
        return value

    async def _expression(self, expr: Any, ctx: Ctx, step: str) -> Value:
        return await self.eval(expr, ctx, step)

    def _session_statement(self, stmt: n.Session, ctx: Ctx, step: str) -> Awaitable[Value]:
        return self.sessions.run(stmt, ctx, step, name=None, statement=True)

    async def _do_block(self, stmt: n.DoBlock, ctx: Ctx, step: str) -> Value:
        return await self.body(stmt.body, ctx, step)

    async def _do_call(self, stmt: n.DoCall, ctx: Ctx, step: str) -> Value:
        block = self.blocks.get(stmt.name.id)
        if block is None:
            raise ProseRuntimeError(f"undefined block {stmt.name.id!r}", where=self._where(stmt))
        limit = _max_depth(block) or self.config.max_depth
        if ctx.depth + 1 > limit:
            raise ProseRuntimeError(
                f"RecursionLimitExceeded: block {block.name.id!r} exceeded max_depth {limit}",
                where=self._where(stmt),
            )
        args = [await self.eval(a, ctx, step) for a in stmt.args]
        scope = Scope(self.root)
        for index, param in enumerate(block.params):
            scope.define(param.id, args[index] if index < len(args) else None, const=True)
        self.shared.execution_ids += 1
        execution_id = self.shared.execution_ids
        self.store.state(f"{step}→ block:{block.name.id}#{execution_id}")
        frame = Ctx(scope, ctx.history, ctx.depth + 1, execution_id, ctx.in_pipeline, None)
        value = await self.body(block.body, frame, steps.call(step, block.name.id))
        self.store.state(f"{step}→ #{execution_id} done")
        return value

    async def _arrow(self, stmt: n.Arrow, ctx: Ctx, step: str) -> Value:
        value: Value = None
        for number, part in enumerate(stmt.steps, start=1):
            value = await self.stmt(part, ctx, f"{step}>>{number}")
        return value

    async def _throw(self, stmt: n.Throw, ctx: Ctx, step: str) -> Value:
        if stmt.message is None:
            if ctx.caught is None:
                raise ProseRuntimeError(
                    "`throw` without a message is only valid inside `catch`",
                    where=self._where(stmt),
                )
            raise ctx.caught
        message = self.expressions.interpolate(stmt.message, ctx)
        raise ThrownError(message, where=self._where(stmt))

    async def _try(self, stmt: n.Try, ctx: Ctx, step: str) -> Value:
        try:
            return await self.body(stmt.body, ctx, steps.clause(step, "try"))
        except ProseError as error:
            self.store.state(f"{step}→ ✗ {error.message}")
            self.shared.emit(ev.ErrorCaught(step=step, error=str(error), kind=error.kind))
            if stmt.catch is None:
                raise
            scope = ctx.scope.child()
            if stmt.catch.error is not None:
                scope.define(
                    stmt.catch.error.id,
                    ErrorValue(error.message, error.kind, error.where),
                    const=True,
                )
            handler = Ctx(scope, ctx.history, ctx.depth, ctx.execution_id, ctx.in_pipeline, error)
            # The failed calls are handled from here on (a resumed run is served the same
            # failures); if the catch body fails, they are released again, so that resuming
            # the failed run asks them again instead of failing the same way for ever.
            if error.failed_calls:
                self.shared.emit(ev.FailureHandled(step=step, failures=error.failed_calls))
            try:
                return await self.body(stmt.catch.body, handler, steps.clause(step, "catch"))
            except ProseError:
                if error.failed_calls:
                    self.shared.emit(ev.FailureReleased(step=step, failures=error.failed_calls))
                raise
        finally:
            # Runs after success or a program error; not when the task is being cancelled,
            # nor when the run pauses for an approval or an answer (it runs once the try
            # ends, on resume; `QuestionPending` is an `ApprovalPending`).
            pausing = isinstance(sys.exc_info()[1], ApprovalPending)
            if stmt.finally_body is not None and not _cancelling() and not pausing:
                await self.body(stmt.finally_body, ctx, steps.clause(step, "finally"))

    async def _if(self, stmt: n.If, ctx: Ctx, step: str) -> Value:
        for number, branch in enumerate(stmt.branches, start=1):
            judgment = steps.judgment(step, f"c{number}")
            if await self.judge.condition(branch.condition, ctx, judgment):
                return await self.body(branch.body, ctx, steps.clause(step, f"c{number}"))
        if stmt.else_body is not None:
            return await self.body(stmt.else_body, ctx, steps.clause(step, "else"))
        return None

    async def _choice(self, stmt: n.Choice, ctx: Ctx, step: str) -> Value:
        labels = [self.expressions.interpolate(o.label, ctx) for o in stmt.options]
        chosen = await self.judge.choose(stmt, labels, ctx, step)
        option = stmt.options[chosen.index]
        return await self.body(option.body, ctx, steps.clause(step, f"option{chosen.index + 1}"))

    # --- expressions -------------------------------------------------------------------

    async def eval(self, expr: Any, ctx: Ctx, step: str, name: str | None = None) -> Value:
        values = self.expressions
        if isinstance(expr, n.StringLit):
            return values.interpolate(expr, ctx)
        if isinstance(expr, n.NumberLit):
            return expr.value
        if isinstance(expr, n.Name):
            return values.lookup(expr.id, expr, ctx)
        if isinstance(expr, n.Attribute):
            return values.attribute(expr, ctx)
        if isinstance(expr, n.ArrayLit):
            return [await self.eval(e, ctx, f"{step}[{i}]") for i, e in enumerate(expr.elements)]
        if isinstance(expr, n.ObjectContext):
            return {x.id: values.lookup(x.id, x, ctx) for x in expr.names}
        if isinstance(expr, n.Discretion):
            return discretion_text(expr)
        if isinstance(expr, n.Session):
            return await self.sessions.run(expr, ctx, step, name=name)
        return await self.stmt(expr, ctx, step)

    def _where(self, node: Any) -> str:
        return self.expressions.where(node)


# --- helpers -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Definitions:
    """What a program's text defines, program-wide (hoisted): the same for every run of it."""

    agents: dict[str, AgentSpec]
    blocks: dict[str, n.BlockDef]
    bound: frozenset[str]  # every flat name it binds somewhere
    outputs: frozenset[str]  # the names of its `output` statements


_last_definitions: tuple[n.Program, _Definitions] | None = None


def _definitions(program: n.Program) -> _Definitions:
    """Worked out once for the program a batch runs thousands of times (its last caller's
    program is kept; nothing here is changed by a run)."""
    global _last_definitions
    if _last_definitions is not None and _last_definitions[0] is program:
        return _last_definitions[1]
    agents: dict[str, AgentSpec] = {}
    blocks: dict[str, n.BlockDef] = {}
    bound: set[str] = set()
    outputs: set[str] = set()
    for node in n.walk(program):
        if type(node) is n.AgentDef:
            agents[node.name.id] = agent_spec(node)
        elif type(node) is n.BlockDef:
            blocks[node.name.id] = node
        elif type(node) in _BINDERS:
            if type(node) is n.Output:
                outputs.add(node.name.id)
            bound.update(_names_bound_by(node))
    found = _Definitions(agents, blocks, frozenset(bound), frozenset(outputs))
    _last_definitions = (program, found)
    return found


def _slug(spec: str) -> str:
    return spec.rstrip("/").rsplit("/", 1)[-1].removesuffix(".prose")


def _cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


# The nodes `_names_bound_by` finds names in.
_BINDERS = frozenset({n.Binding, n.Output, n.Input, n.Session, n.Parallel})


def _names_bound_by(stmt: Any) -> list[str]:
    if isinstance(stmt, n.Binding):
        target = stmt.target
        return [target.id] if isinstance(target, n.Name) else [x.id for x in target.names]
    if isinstance(stmt, n.Output | n.Input):
        return [stmt.name.id]
    if isinstance(stmt, n.Session) and stmt.name is not None:
        return [stmt.name.id]
    if isinstance(stmt, n.Parallel):
        return [b.name.id for b in stmt.branches if b.name is not None]
    return []


# Span names of the statements (OpenTelemetry: low-cardinality, the keyword that opens them;
# a session statement's span is opened by `Sessions.run`).
_KINDS: dict[type, str] = {
    n.Binding: "let",
    n.Assign: "assign",
    n.Ask: "ask",
    n.ProgramCall: "call",
    n.DoBlock: "do",
    n.DoCall: "do",
    n.Arrow: "arrow",
    n.Parallel: "parallel",
    n.Repeat: "repeat",
    n.ForEach: "for",
    n.Loop: "loop",
    n.Pipeline: "pipeline",
    n.Try: "try",
    n.Throw: "throw",
    n.Choice: "choice",
    n.If: "if",
}


def _max_depth(block: n.BlockDef) -> int | None:
    """`block f(x) (max_depth: 50):`: the block's own recursion limit (reference VM,
    "Recursion Depth Limits: Configure per-block"); the checker rejects other values."""
    for modifier in block.modifiers:
        value = modifier.value
        if (
            modifier.name is not None
            and modifier.name.id == "max_depth"
            and isinstance(value, n.NumberLit)
            and type(value.value) is int
            and value.value >= 1
        ):
            return value.value
    return None


# One table for every interpreter (a table per instance bound its methods, a reference
# cycle per run that only the cyclic collector could free).
_HANDLERS: dict[type, Handler] = {
    n.Use: Interpreter._use,
    n.Input: Interpreter._input,
    n.Output: Interpreter._output,
    n.AgentDef: Interpreter._nothing,
    n.BlockDef: Interpreter._nothing,
    n.Binding: Interpreter._binding,
    n.Assign: Interpreter._assign,
    n.Session: Interpreter._session_statement,
    n.Ask: asking.ask,
    n.ProgramCall: programs.call_program,
    n.DoBlock: Interpreter._do_block,
    n.DoCall: Interpreter._do_call,
    n.Arrow: Interpreter._arrow,
    n.Parallel: parallel.run_parallel,
    n.Repeat: loops.repeat,
    n.ForEach: loops.for_each,
    n.Loop: loops.loop,
    n.Pipeline: pipelines.pipeline,
    n.Try: Interpreter._try,
    n.Throw: Interpreter._throw,
    n.Choice: Interpreter._choice,
    n.If: Interpreter._if,
    n.StringLit: Interpreter._expression,
    n.NumberLit: Interpreter._expression,
    n.Name: Interpreter._expression,
    n.Attribute: Interpreter._expression,
    n.ArrayLit: Interpreter._expression,
    n.ObjectContext: Interpreter._expression,
    n.Discretion: Interpreter._expression,
}
# Handlers `stmt` wraps in no statement span: definitions (nothing runs) and session
# statements (`Sessions.run` opens the span itself, one coroutine less per session).
_UNWRAPPED = frozenset({Interpreter._nothing, Interpreter._session_statement})

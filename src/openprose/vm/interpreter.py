"""The interpreter: every statement and expression of the language, on asyncio.

One `Interpreter` runs one program (an invoked program gets its own, sharing the journal, the
model router and the replay log). Each statement runs under a step id (see `steps`), and every
model call — session, judgment, memory update — is journaled under it, so a resumed run serves
finished work from the journal instead of asking a provider again.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from openprose import nodes as n
from openprose.providers.base import (
    Message,
    ModelRequest,
    ModelResponse,
    ProviderConfigError,
    ProviderError,
    RetryAfterTooLongError,
    TransientProviderError,
    single_attempt,
)
from openprose.vm import judgments, steps
from openprose.vm.errors import (
    JudgmentError,
    ParallelFailed,
    ProseError,
    ProseRuntimeError,
    RunAborted,
    SessionFailed,
    ThrownError,
    location,
)
from openprose.vm.prompts import (
    NO_TASK,
    ContextItem,
    History,
    fit_to_budget,
    memory_update_message,
    user_message,
    window_note,
)
from openprose.vm.runstore import RunStore
from openprose.vm.runtime import AgentSpec, LoadedProgram, Shared
from openprose.vm.scope import Scope
from openprose.vm.values import ErrorValue, ProgramResult, Value, as_collection, render, to_json

if TYPE_CHECKING:
    from openprose.vm.memory import AgentMemory


@dataclass(slots=True)
class Ctx:
    """Where a statement runs: its scope, its thread's history and its block frame."""

    scope: Scope
    history: History
    depth: int = 0
    execution_id: int = 0
    in_pipeline: bool = False
    caught: ProseError | None = None

    def with_scope(self, scope: Scope) -> Ctx:
        return Ctx(
            scope, self.history, self.depth, self.execution_id, self.in_pipeline, self.caught
        )

    def forked(self, scope: Scope | None = None) -> Ctx:
        return Ctx(
            scope or self.scope,
            self.history.fork(),
            self.depth,
            self.execution_id,
            self.in_pipeline,
            self.caught,
        )


_JOINS = ("all", "first", "any")
_ON_FAIL = ("fail-fast", "continue", "ignore")


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
    ) -> None:
        self.program = program
        self.text = source_text
        self.shared = shared
        self.config = shared.config
        self.store = store
        self.inputs = dict(inputs or {})
        self.imports = dict(imports or {})
        self.prefix = step_prefix
        self.root = Scope()
        self.outputs: dict[str, Value] = {}
        self.final_result: str | None = None  # set by run() when no output is declared
        self.agents: dict[str, AgentSpec] = {}
        self.blocks: dict[str, n.BlockDef] = {}
        self._exec: dict[type, Callable[[Any, Ctx, str], Awaitable[Value]]] = {
            n.Use: self._use,
            n.Input: self._input,
            n.Output: self._output,
            n.AgentDef: self._nothing,
            n.BlockDef: self._nothing,
            n.Binding: self._binding,
            n.Assign: self._assign,
            n.Session: self._session_statement,
            n.ProgramCall: self._program_call,
            n.DoBlock: self._do_block,
            n.DoCall: self._do_call,
            n.Arrow: self._arrow,
            n.Parallel: self._parallel,
            n.Repeat: self._repeat,
            n.ForEach: self._for_each,
            n.Loop: self._loop,
            n.Pipeline: self._pipeline,
            n.Try: self._try,
            n.Throw: self._throw,
            n.Choice: self._choice,
            n.If: self._if,
            n.StringLit: self._expression,
            n.NumberLit: self._expression,
            n.Name: self._expression,
            n.Attribute: self._expression,
            n.ArrayLit: self._expression,
            n.ObjectContext: self._expression,
            n.Discretion: self._expression,
        }

    # --- entry -------------------------------------------------------------------------

    async def run(self) -> dict[str, Value]:
        self._collect_definitions()
        if self.agents:
            # Sessions have no tools yet, so skills and permissions are recorded, not enforced.
            self.shared.emit(
                "agents",
                self.prefix,
                agents={
                    a.name: {
                        "model": a.model,
                        "persist": a.persist,
                        "skills": list(a.skills),
                        "permissions": dict(a.permissions),
                    }
                    for a in self.agents.values()
                },
            )
        self._check_inputs()
        ctx = Ctx(self.root, History())
        await self._body(self.program.body, ctx, self.prefix)
        # prose.md returns "the final result if no outputs declared": the last answer on
        # the program's main thread of execution.
        declares_outputs = any(
            isinstance(stmt, n.Output) for stmt in _walk_statements(self.program.body)
        )
        if not declares_outputs and ctx.history.entries:
            self.final_result = ctx.history.entries[-1].text
        return self.outputs

    def _collect_definitions(self) -> None:
        for stmt in _walk_statements(self.program.body):
            if isinstance(stmt, n.AgentDef):
                self.agents[stmt.name.id] = self._agent_spec(stmt)
            elif isinstance(stmt, n.BlockDef):
                self.blocks[stmt.name.id] = stmt

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
                    f"missing required input {name!r}: {stmt.description.value}",
                    where=self._where(stmt),
                    code="E026",
                )

    # --- statements --------------------------------------------------------------------

    async def _body(self, body: tuple[n.Stmt, ...], ctx: Ctx, prefix: str) -> Value:
        value: Value = None
        for number, stmt in enumerate(body, start=1):
            value = await self._stmt(stmt, ctx, steps.statement(prefix, number))
        return value

    async def _stmt(self, stmt: Any, ctx: Ctx, step: str) -> Value:
        handler = self._exec.get(type(stmt))
        if handler is None:
            raise ProseRuntimeError(f"cannot run {type(stmt).__name__}", where=self._where(stmt))
        return await handler(stmt, ctx, step)

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
        self._write_binding(stmt.name.id, "input", stmt, value, ctx)
        return value

    async def _output(self, stmt: n.Output, ctx: Ctx, step: str) -> Value:
        value = await self._eval(stmt.value, ctx, step, name=stmt.name.id)
        ctx.scope.declare(stmt.name.id, value)
        self.outputs[stmt.name.id] = value
        self._write_binding(stmt.name.id, "output", stmt, value, ctx)
        return value

    async def _binding(self, stmt: n.Binding, ctx: Ctx, step: str) -> Value:
        target = stmt.target
        name = target.id if isinstance(target, n.Name) else None
        value = await self._eval(stmt.value, ctx, step, name=name)
        const = stmt.kind == "const"
        if isinstance(target, n.Name):
            ctx.scope.declare(target.id, value, const=const)
            self._write_binding(target.id, stmt.kind, stmt, value, ctx)
            return value
        for item in target.names:
            part = self._property(value, item.id, item)
            ctx.scope.declare(item.id, part, const=const)
            self._write_binding(item.id, stmt.kind, stmt, part, ctx)
        return value

    async def _assign(self, stmt: n.Assign, ctx: Ctx, step: str) -> Value:
        name = stmt.target.id
        owner = ctx.scope.owner(name)
        if owner is None:
            raise ProseRuntimeError(f"undefined variable {name!r}", where=self._where(stmt))
        if name in owner.consts:
            raise ProseRuntimeError(f"cannot reassign const {name!r}", where=self._where(stmt))
        value = await self._eval(stmt.value, ctx, step, name=name)
        owner.vars[name] = value
        kind = "let"
        if owner is self.root and name in self.outputs:
            self.outputs[name] = value  # `output` works like `let`: reassignment updates it
            kind = "output"
        self._write_binding(name, kind, stmt, value, ctx)
        return value

    async def _expression(self, expr: Any, ctx: Ctx, step: str) -> Value:
        return await self._eval(expr, ctx, step)

    async def _session_statement(self, stmt: n.Session, ctx: Ctx, step: str) -> Value:
        return await self._session(stmt, ctx, step, name=None)

    async def _do_block(self, stmt: n.DoBlock, ctx: Ctx, step: str) -> Value:
        return await self._body(stmt.body, ctx, step)

    async def _do_call(self, stmt: n.DoCall, ctx: Ctx, step: str) -> Value:
        block = self.blocks.get(stmt.name.id)
        if block is None:
            raise ProseRuntimeError(f"undefined block {stmt.name.id!r}", where=self._where(stmt))
        if ctx.depth + 1 > self.config.max_depth:
            raise ProseRuntimeError(
                f"RecursionLimitExceeded: block {block.name.id!r} exceeded max depth "
                f"{self.config.max_depth}",
                where=self._where(stmt),
            )
        args = [await self._eval(a, ctx, step) for a in stmt.args]
        scope = Scope(self.root)
        for index, param in enumerate(block.params):
            scope.define(param.id, args[index] if index < len(args) else None, const=True)
        self.shared.execution_ids += 1
        execution_id = self.shared.execution_ids
        self.store.state(f"{step}→ block:{block.name.id}#{execution_id}")
        frame = Ctx(scope, ctx.history, ctx.depth + 1, execution_id, ctx.in_pipeline, None)
        value = await self._body(block.body, frame, steps.call(step, block.name.id))
        self.store.state(f"{step}→ #{execution_id} done")
        return value

    async def _arrow(self, stmt: n.Arrow, ctx: Ctx, step: str) -> Value:
        value: Value = None
        for number, part in enumerate(stmt.steps, start=1):
            value = await self._stmt(part, ctx, f"{step}>>{number}")
        return value

    async def _throw(self, stmt: n.Throw, ctx: Ctx, step: str) -> Value:
        if stmt.message is None:
            if ctx.caught is None:
                raise ProseRuntimeError(
                    "`throw` without a message is only valid inside `catch`",
                    where=self._where(stmt),
                )
            raise ctx.caught
        message = self._interpolate(stmt.message, ctx)
        raise ThrownError(message, where=self._where(stmt))

    async def _try(self, stmt: n.Try, ctx: Ctx, step: str) -> Value:
        try:
            return await self._body(stmt.body, ctx, steps.clause(step, "try"))
        except ProseError as error:
            self.store.state(f"{step}→ ✗ {error.message}")
            self.shared.emit("error_caught", step, error=str(error), kind=error.kind)
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
            return await self._body(stmt.catch.body, handler, steps.clause(step, "catch"))
        finally:
            # Runs after success or a program error; not when the task is being cancelled.
            if stmt.finally_body is not None and not _cancelling():
                await self._body(stmt.finally_body, ctx, steps.clause(step, "finally"))

    async def _if(self, stmt: n.If, ctx: Ctx, step: str) -> Value:
        for number, branch in enumerate(stmt.branches, start=1):
            if await self._condition(branch.condition, ctx, steps.judgment(step, f"c{number}")):
                return await self._body(branch.body, ctx, steps.clause(step, f"c{number}"))
        if stmt.else_body is not None:
            return await self._body(stmt.else_body, ctx, steps.clause(step, "else"))
        return None

    async def _choice(self, stmt: n.Choice, ctx: Ctx, step: str) -> Value:
        labels = [self._interpolate(o.label, ctx) for o in stmt.options]
        criteria = self._discretion_text(stmt.criteria)
        judge_step = steps.judgment(step)
        context = self._judgment_context(ctx, judge_step)
        question = judgments.choice_question(criteria, labels, context)
        chosen = await self._judge(
            step=judge_step,
            kind="choice",
            question=question,
            parse=lambda text: judgments.parse_selection(text, labels),
            schema=judgments.selection_schema(labels),
            node=stmt,
            summary=criteria,
        )
        assert isinstance(chosen, judgments.Selection)
        self.store.state(f"{step}→ choice **{criteria}** → {chosen.label!r} ({chosen.reason})")
        option = stmt.options[chosen.index]
        return await self._body(option.body, ctx, steps.clause(step, f"option{chosen.index + 1}"))

    # --- loops -------------------------------------------------------------------------

    async def _repeat(self, stmt: n.Repeat, ctx: Ctx, step: str) -> Value:
        count = await self._eval(stmt.count, ctx, step)
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise ProseRuntimeError(
                f"repeat count must be a non-negative integer, got {count!r}",
                where=self._where(stmt),
            )
        results = []
        for index in range(count):
            scope = ctx.scope.child()
            if stmt.index is not None:
                scope.define(stmt.index.id, index, const=True)
            value = await self._body(stmt.body, ctx.with_scope(scope), steps.iteration(step, index))
            results.append(value)
        return results

    async def _for_each(self, stmt: n.ForEach, ctx: Ctx, step: str) -> Value:
        items = as_collection(await self._eval(stmt.collection, ctx, step))

        def scope_for(index: int, item: Value) -> Scope:
            # Concurrent iterations each get a frame, so a `let` in the body is theirs alone.
            scope = Scope(ctx.scope) if stmt.parallel else ctx.scope.child()
            scope.define(stmt.item.id, item, const=True)
            if stmt.index is not None:
                scope.define(stmt.index.id, index, const=True)
            return scope

        if not stmt.parallel:
            results = []
            for index, item in enumerate(items):
                scope = scope_for(index, item)
                results.append(
                    await self._body(stmt.body, ctx.with_scope(scope), steps.iteration(step, index))
                )
            return results
        join, on_fail, count = self._modifiers(stmt.modifiers, stmt)

        async def one(index: int, item_ctx: Ctx) -> Value:
            item_ctx.scope = scope_for(index, items[index])
            return await self._body(stmt.body, item_ctx, steps.iteration(step, index))

        if join == "all":
            return await self._fan_out(len(items), one, ctx, on_fail, stmt, step)
        needed = min(1 if join == "first" else count, len(items))
        return await self._fan_out_race(len(items), needed, join, one, ctx, on_fail, stmt, step)

    async def _loop(self, stmt: n.Loop, ctx: Ctx, step: str) -> Value:
        limit = self._loop_limit(stmt)
        shown_max = "∞" if limit is None else str(limit)
        condition = self._discretion_text(stmt.condition) if stmt.condition is not None else None
        value: Value = None
        index = 0
        while True:
            # The reference's order: condition first, then the limit, then the body.
            if stmt.kind != "loop" and stmt.condition is not None:
                holds = await self._condition(
                    stmt.condition, ctx, steps.judgment(step, f"#{index}")
                )
                if holds == (stmt.kind == "until"):
                    self.store.state(f"{step}→ loop:{index}/{shown_max} exit(**{condition}**)")
                    return value
            if limit is not None and index >= limit:
                self.store.state(f"{step}→ loop:{index}/{shown_max} exit(max)")
                return value
            self.store.state(f"{step}→ loop:{index + 1}/{shown_max}")
            scope = ctx.scope.child()
            if stmt.index is not None:
                scope.define(stmt.index.id, index, const=True)
            value = await self._body(
                stmt.body, ctx.with_scope(scope), steps.loop_iteration(step, index)
            )
            index += 1

    def _loop_limit(self, stmt: n.Loop) -> int | None:
        for modifier in stmt.modifiers:
            if modifier.name is not None and modifier.name.id == "max":
                value = _literal(modifier.value)
                if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                    raise ProseRuntimeError(
                        f"max iterations must be a positive integer, got {value!r}",
                        where=self._where(modifier),
                    )
                return value
        return None

    # --- pipelines ---------------------------------------------------------------------

    async def _pipeline(self, stmt: n.Pipeline, ctx: Ctx, step: str) -> Value:
        value = await self._eval(stmt.source, ctx, step)
        for stage, op in enumerate(stmt.ops, start=1):
            items = as_collection(value)
            if op.op == "map":
                value = [
                    await self._stage_item(op, ctx, ctx, step, stage, i, item)
                    for i, item in enumerate(items)
                ]
            elif op.op == "pmap":

                async def one(
                    index: int,
                    item_ctx: Ctx,
                    op: n.PipeOp = op,
                    stage: int = stage,
                    items: list[Value] = items,
                ) -> Value:
                    return await self._stage_item(
                        op, ctx, item_ctx, step, stage, index, items[index]
                    )

                value = await self._fan_out(len(items), one, ctx, "fail-fast", op, step)
            elif op.op == "filter":
                kept = []
                for i, item in enumerate(items):
                    answer = await self._stage_item(op, ctx, ctx, step, stage, i, item)
                    verdict_step = steps.judgment(steps.stage_item(step, stage, i))
                    if await self._filter_verdict(answer, item, op, verdict_step):
                        kept.append(item)
                value = kept
            elif op.op == "reduce":
                value = await self._reduce(op, items, ctx, step, stage)
            else:
                raise ProseRuntimeError(
                    f"unknown pipeline operation {op.op!r}", where=self._where(op)
                )
        return value

    async def _stage_item(
        self, op: n.PipeOp, ctx: Ctx, item_ctx: Ctx, step: str, stage: int, index: int, item: Value
    ) -> Value:
        scope = Scope(ctx.scope)  # a frame: pipeline bodies keep their `let`s to themselves
        scope.define("item", item, const=True)
        run_ctx = Ctx(scope, item_ctx.history, ctx.depth, ctx.execution_id, True, ctx.caught)
        return await self._body(op.body, run_ctx, steps.stage_item(step, stage, index))

    async def _reduce(
        self, op: n.PipeOp, items: list[Value], ctx: Ctx, step: str, stage: int
    ) -> Value:
        if not items:
            return None
        acc_name = op.accumulator.id if op.accumulator else "acc"
        item_name = op.item.id if op.item else "item"
        acc = items[0]
        for index in range(1, len(items)):
            scope = Scope(ctx.scope)
            scope.define(acc_name, acc, const=True)
            scope.define(item_name, items[index], const=True)
            run_ctx = Ctx(scope, ctx.history, ctx.depth, ctx.execution_id, True, ctx.caught)
            acc = await self._body(op.body, run_ctx, steps.stage_item(step, stage, index))
        return acc

    async def _filter_verdict(self, answer: Value, item: Value, op: n.PipeOp, step: str) -> bool:
        literal = judgments.literal_verdict(render(answer))
        if literal is not None:
            self.shared.emit(
                "decision", step, kind="filter", verdict=literal, reason="literal answer"
            )
            self.store.state(f"{step}→ filter → {'keep' if literal else 'drop'} (literal answer)")
            return literal
        question = judgments.filter_question(render(answer), render(item))
        verdict = await self._judge(
            step=step,
            kind="filter",
            question=question,
            parse=judgments.parse_verdict,
            schema=judgments.VERDICT_SCHEMA,
            node=op,
            summary="filter",
        )
        assert isinstance(verdict, judgments.Verdict)
        keep = "keep" if verdict.value else "drop"
        self.store.state(f"{step}→ filter → {keep} ({verdict.reason})")
        return verdict.value

    # --- parallel ----------------------------------------------------------------------

    def _modifiers(self, modifiers: tuple[n.Modifier, ...], node: Any) -> tuple[str, str, int]:
        join, on_fail, count = "all", "fail-fast", 1
        for modifier in modifiers:
            value = _literal(modifier.value)
            key = modifier.name.id if modifier.name is not None else None
            if key is None and value in _JOINS:
                join = str(value)
            elif key == "on-fail" and value in _ON_FAIL:
                on_fail = str(value)
            elif key == "count" and isinstance(value, int) and value >= 1:
                count = value
            else:
                raise ProseRuntimeError(
                    f"invalid parallel modifier {value!r}", where=self._where(modifier)
                )
        return join, on_fail, count

    def _race_plan(self, step: str, count: int, needed: int) -> tuple[Sequence[int], int]:
        """Which of `count` racers to start and how many wins end the race. A resumed race
        runs only the racers that finished the first time, until all its winners are back
        (served from the journal); the losers it cancelled are not sent again."""
        decided = self.shared.replay.races.get(step)
        if decided is None:
            return range(count), needed
        return decided.ran, len(decided.won)

    async def _parallel(self, stmt: n.Parallel, ctx: Ctx, step: str) -> Value:
        join, on_fail, count = self._modifiers(stmt.modifiers, stmt)
        needed = {"all": len(stmt.branches), "first": 1, "any": count}[join]
        names = [b.name.id if b.name else "" for b in stmt.branches]
        self.store.state(f"{step}→ ∥start {','.join(x or str(i + 1) for i, x in enumerate(names))}")
        contexts = [ctx.forked() for _ in stmt.branches]

        async def run_branch(index: int) -> Value:
            branch = stmt.branches[index]
            where = steps.branch(step, index + 1)
            if branch.name is not None and isinstance(branch.body, n.Session):
                value = await self._session(branch.body, contexts[index], where, branch.name.id)
            else:
                value = await self._stmt(branch.body, contexts[index], where)
            if branch.name is not None:
                ctx.scope.declare(branch.name.id, value)
                self._write_binding(branch.name.id, "let", branch, value, ctx)
            return value

        ran, needed = self._race_plan(step, len(stmt.branches), needed)
        tasks = {asyncio.ensure_future(run_branch(i)): i for i in ran}
        results: dict[int, Value] = {}
        failures: dict[int, ProseError] = {}
        pending = set(tasks)
        try:
            while pending and len(results) < needed:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in sorted(done, key=tasks.__getitem__):
                    index = tasks[task]
                    error = task.exception()
                    if error is None:
                        results[index] = task.result()
                    elif isinstance(error, ProseError):
                        failures[index] = error
                        self.store.state(f"{steps.branch(step, index + 1)}→ ✗ {error.message}")
                        if on_fail == "fail-fast":
                            raise error
                    else:
                        raise error
                if join == "first" and on_fail == "fail-fast" and failures:
                    break
        finally:
            await _cancel_all(pending)
        if pending and join != "all" and len(results) >= needed:
            self.shared.emit("race_decided", step, won=sorted(results), failed=sorted(failures))
        self.store.state(f"{step}→ ∥done")
        ctx.history.join([contexts[i].history for i in sorted(results)])
        if len(results) < needed and join != "all" and on_fail != "ignore":
            raise ParallelFailed(
                f"parallel ({join}) needed {needed} successful branch(es), got {len(results)}",
                where=self._where(stmt),
            )
        for index, error in failures.items():
            failed = ErrorValue(error.message, error.kind, error.where)
            if on_fail == "continue":
                results[index] = failed
            branch = stmt.branches[index]
            if branch.name is not None and on_fail in ("continue", "ignore"):
                value = failed if on_fail == "continue" else None
                ctx.scope.declare(names[index], value)
                self._write_binding(names[index], "let", branch, value, ctx)
        if join == "first":
            return results[min(results)] if results else None
        ordered = sorted(results)
        if any(names):
            return {names[i] or f"branch_{i + 1}": results[i] for i in ordered}
        return [results[i] for i in ordered]

    async def _fan_out(
        self,
        count: int,
        run_one: Callable[[int, Ctx], Awaitable[Value]],
        ctx: Ctx,
        on_fail: str,
        node: Any,
        step: str,
    ) -> list[Value]:
        """`pmap` and `parallel for`: a bounded pool of workers, results in input order.
        Fail-fast cancels every other item on the first error."""
        results: list[Value] = [None] * count
        failed: list[bool] = [False] * count
        histories: list[History | None] = [None] * count
        cursor = iter(range(count))

        async def worker() -> None:
            for index in cursor:
                item_ctx = ctx.forked()
                histories[index] = item_ctx.history
                try:
                    results[index] = await run_one(index, item_ctx)
                except ProseError as error:
                    if on_fail == "fail-fast":
                        raise
                    failed[index] = True
                    results[index] = ErrorValue(error.message, error.kind, error.where)

        workers = [
            asyncio.ensure_future(worker()) for _ in range(min(count, self.config.max_concurrency))
        ]
        try:
            await _gather_fail_fast(workers)
        finally:
            await _cancel_all(set(workers))
        ctx.history.join([h for h in histories if h is not None])
        if on_fail == "ignore":
            return [r for r, bad in zip(results, failed, strict=True) if not bad]
        return results

    async def _fan_out_race(
        self,
        count: int,
        needed: int,
        join: str,
        run_one: Callable[[int, Ctx], Awaitable[Value]],
        ctx: Ctx,
        on_fail: str,
        node: Any,
        step: str,
    ) -> Value:
        """`parallel ("first"|"any") for`: items run as for `_fan_out` until `needed` have
        succeeded; the rest are cancelled, as the losers of `parallel ("first"):` are.
        "first" gives the winner's value, "any" the successful results in input order."""
        succeeded: dict[int, Value] = {}
        failed: list[int] = []
        histories: dict[int, History] = {}
        enough = asyncio.Event()
        ran, needed = self._race_plan(step, count, needed)
        cursor = iter(ran)

        async def worker() -> None:
            for index in cursor:
                if enough.is_set():
                    return
                item_ctx = ctx.forked()
                try:
                    value = await run_one(index, item_ctx)
                except ProseError as error:
                    self.store.state(f"{steps.iteration(step, index)}→ ✗ {error.message}")
                    if on_fail == "fail-fast":
                        raise
                    failed.append(index)
                    continue
                succeeded[index] = value
                histories[index] = item_ctx.history
                if len(succeeded) >= needed:
                    enough.set()
                    return

        workers = [
            asyncio.ensure_future(worker()) for _ in range(min(count, self.config.max_concurrency))
        ]
        everyone = asyncio.ensure_future(_gather_fail_fast(workers))
        race = asyncio.ensure_future(enough.wait())
        try:
            await asyncio.wait({everyone, race}, return_when=asyncio.FIRST_COMPLETED)
            if everyone.done():
                everyone.result()  # re-raises a fail-fast error
        finally:
            await _cancel_all({*workers, everyone, race})
        if enough.is_set():
            self.shared.emit("race_decided", step, won=sorted(succeeded), failed=sorted(failed))
        ctx.history.join([histories[i] for i in sorted(histories)])
        if len(succeeded) < needed and on_fail != "ignore":
            raise ParallelFailed(
                f"parallel ({join}) for needed {needed} successful item(s), got {len(succeeded)}",
                where=self._where(node),
            )
        if join == "first":
            return succeeded[min(succeeded)] if succeeded else None
        return [succeeded[i] for i in sorted(succeeded)]

    # --- sessions ----------------------------------------------------------------------

    async def _session(self, node: n.Session, ctx: Ctx, step: str, name: str | None) -> Value:
        props = {p.name.id: p.value for p in node.properties}
        agent = self._agent_of(node)
        model = self._model_of(node, props, agent)
        session_prompt = node.prompt if node.prompt is not None else props.get("prompt")
        if node.prompt is not None and isinstance(props.get("prompt"), n.StringLit):
            # `session "Title"` with a `prompt:` property: the property is the prompt and the
            # inline string the session's title (docs/decisions.md, Issue 20 item 1)
            self.store.state(f"{step}→ title: {self._interpolate(node.prompt, ctx)}")
            session_prompt = props["prompt"]
        if session_prompt is not None and not isinstance(session_prompt, n.StringLit):
            session_prompt = None
        if session_prompt is not None:
            task = self._interpolate(session_prompt, ctx)
            system = self._interpolate(agent.prompt, ctx) if agent and agent.prompt else None
        elif agent is not None and agent.prompt is not None:
            task, system = self._interpolate(agent.prompt, ctx), None
        else:
            task, system = NO_TASK, None
        memory: AgentMemory | None = None
        memory_text: str | None = None
        if agent is not None and agent.persist is not None:
            memory = self._memory(agent)
        if node.kind == "resume":
            if agent is None or memory is None:
                raise ProseRuntimeError(
                    f"`resume:` requires a persistent agent; add `persist:` to agent "
                    f"{agent.name if agent else '?'!r}",
                    where=self._where(node),
                    code="E017",
                )
            memory_text = memory.read()
            if memory_text is None and step not in self.shared.replay.sessions:
                raise ProseRuntimeError(
                    f"no memory exists yet for agent {agent.name!r}; use `session:` first",
                    where=self._where(node),
                    code="E018",
                )
        label = name or (node.name.id if node.name else None)
        if label is None and not ctx.in_pipeline:
            label = self._anon_name(step)
        context_items = self._session_context(
            props.get("context"), ctx, step, len(task) + len(system or ""), memory_text
        )
        if memory_text is not None:
            memory_text = context_items.pop(0).text
        text = user_message(task, context_items, memory_text)
        request = ModelRequest(
            model=model,
            messages=(Message("user", text),),
            system=system,
            max_tokens=self.config.max_tokens,
        )
        retries, backoff = self._retry_policy(props, node)
        response = await self._call_model(
            step,
            request,
            alias=model,
            agent=agent.name if agent else None,
            where=node,
            retries=retries,
            backoff=backoff,
            label=label,
        )
        answer = response.text
        if memory is not None and agent is not None:
            await self._update_memory(agent, memory, step, task, answer)
        shown = label or f"session {step}"
        ctx.history.add(shown, answer)
        if label is not None and name is None and node.name is None:
            self._write_binding(label, "let", node, answer, ctx)
        elif node.name is not None and name is None:
            ctx.scope.declare(node.name.id, answer)
            self._write_binding(node.name.id, "let", node, answer, ctx)
        if not ctx.in_pipeline:
            self.store.state(f"{step}→ {name or label} ✓")
        return answer

    def _agent_of(self, node: n.Session) -> AgentSpec | None:
        if node.agent is None:
            return None
        agent = self.agents.get(node.agent.id)
        if agent is None:
            raise ProseRuntimeError(
                f"undefined agent {node.agent.id!r}", where=self._where(node), code="E007"
            )
        return agent

    def _model_of(self, node: n.Session, props: dict[str, Any], agent: AgentSpec | None) -> str:
        if "model" in props:
            return str(_literal(props["model"]))
        if agent is not None and agent.model:
            return agent.model
        return self.config.default_model

    def _retry_policy(self, props: dict[str, Any], node: n.Session) -> tuple[int, str]:
        retries = _literal(props["retry"]) if "retry" in props else 0
        backoff = str(_literal(props["backoff"])) if "backoff" in props else "none"
        if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
            raise ProseRuntimeError(
                f"retry must be a positive integer, got {retries!r}", where=self._where(node)
            )
        if backoff not in ("none", "linear", "exponential"):
            raise ProseRuntimeError(
                f"backoff must be none, linear or exponential, got {backoff!r}",
                where=self._where(node),
            )
        return retries, backoff

    def _anon_name(self, step: str) -> str:
        served = self.shared.replay.sessions.get(step)
        if served is not None and served.get("binding"):
            name = str(served["binding"])
            number = name.removeprefix("anon_")
            if number.isdigit():  # later new sessions must not reuse the number
                self.shared.anon_names = max(self.shared.anon_names, int(number))
            return name
        self.shared.anon_names += 1
        return f"anon_{self.shared.anon_names:03d}"

    def _session_context(
        self, expr: Any, ctx: Ctx, step: str, fixed: int = 0, memory: str | None = None
    ) -> list[ContextItem]:
        """The context items (after the memory, when given, as the first item), cut to fit
        the budget that `fixed` characters of task and system prompt leave."""
        if expr is None:
            items = self._default_context(ctx, step)
        else:
            items = self._context_items(expr, ctx)
        if memory is not None:
            items.insert(0, ContextItem("memory", memory))
        budget = self.config.context_budget - fixed
        if budget < 0:
            # The task itself is over budget: it is sent whole (cutting it would change the
            # instruction), and that is recorded too.
            self.shared.emit("prompt_over_budget", step, task_chars=fixed)
            self.store.state(f"{step}→ prompt:over budget by {-budget} chars")
            budget = 0
        fitted, trims = fit_to_budget(items, budget)
        for trim in trims:
            self.shared.emit("context_trimmed", step, label=trim.label, omitted_chars=trim.omitted)
            self.store.state(f"{step}→ context:trimmed {trim.label} -{trim.omitted} chars")
        return fitted

    def _default_context(self, ctx: Ctx, step: str) -> list[ContextItem]:
        """The thread's most recent outputs; older ones left out are noted in the prompt, the
        journal (`context_windowed`) and state.md."""
        limit = self.config.history_items
        items = ctx.history.recent(limit)
        hidden = len(ctx.history) - len(items)
        if hidden > 0:
            items.insert(0, window_note(hidden, len(items)))
            self.shared.emit("context_windowed", step, omitted_items=hidden, shown_items=limit)
            self.store.state(f"{step}→ context:window -{hidden} earlier outputs")
        return items

    def _context_items(self, expr: Any, ctx: Ctx) -> list[ContextItem]:
        if isinstance(expr, n.ArrayLit):
            items: list[ContextItem] = []
            for element in expr.elements:
                items.extend(self._context_items(element, ctx))
            return items
        if isinstance(expr, n.ObjectContext):
            return [ContextItem(x.id, render(self._lookup(x.id, x, ctx))) for x in expr.names]
        if isinstance(expr, n.Name):
            return [ContextItem(expr.id, render(self._lookup(expr.id, expr, ctx)))]
        if isinstance(expr, n.Attribute):
            return [ContextItem(_dotted(expr), render(self._attribute(expr, ctx)))]
        if isinstance(expr, n.StringLit):
            return [ContextItem("context", self._interpolate(expr, ctx))]
        if isinstance(expr, n.NumberLit):
            return [ContextItem("context", str(expr.value))]
        raise ProseRuntimeError("context must name variables", where=self._where(expr))

    async def _call_model(
        self,
        step: str,
        request: ModelRequest,
        *,
        alias: str,
        agent: str | None,
        where: Any,
        retries: int = 0,
        backoff: str = "none",
        label: str | None = None,
        event: str = "session",
    ) -> ModelResponse:
        shared = self.shared
        served = shared.replay.sessions.get(step)
        if served is not None:
            response = ModelResponse.from_dict(served["response"])
            shared.stats.served += 1
            shared.stats.count(response.model or alias, response)
            shared.emit("session_served", step, binding=label)
            return response
        try:
            provider, model_id = shared.router.route(alias)
        except ProviderConfigError as error:
            raise RunAborted(str(error)) from None
        # The alias becomes the provider's model id (positional: cheaper than `replace`).
        request = ModelRequest(
            model_id,
            request.messages,
            request.system,
            request.max_tokens,
            request.temperature,
            request.response_schema,
        )
        shared.emit("session_started", step, agent=agent, model=alias, binding=label, kind=event)
        # With a `retry:` the program owns the retries: each attempt is one request, with no
        # transient retries of the provider behind it, so attempts never multiply. Without
        # one, the provider's transient-retry policy applies. The concurrency limit is the
        # provider's own (per provider, per attempt).
        send = provider.complete if retries == 0 else single_attempt(provider)
        attempt = 0
        while True:
            attempt += 1
            started = time.perf_counter()
            try:
                response = await send(request)
            except asyncio.CancelledError:
                shared.emit("session_cancelled", step, attempt=attempt)
                raise
            except ProviderConfigError as error:
                raise RunAborted(str(error)) from None
            except ProviderError as error:
                shared.emit("session_failed", step, attempt=attempt, error=str(error))
                # A server asking for a longer wait than the limit ends the retries too.
                if attempt > retries or isinstance(error, RetryAfterTooLongError):
                    raise SessionFailed(str(error), where=self._where(where)) from None
                self.store.state(f"{step}→ retry:{attempt}/{retries}")
                delay = _backoff_delay(backoff, attempt, self.config.retry_base_delay)
                if isinstance(error, TransientProviderError) and error.retry_after:
                    delay = max(delay, error.retry_after)  # the server's `retry-after` is a floor
                if delay > 0:
                    await asyncio.sleep(delay)
                continue
            elapsed = time.perf_counter() - started
            shared.stats.sent += 1
            shared.stats.count(response.model or model_id, response)
            shared.emit(
                "session_finished",
                step,
                request=request.to_dict(),
                response=response.to_dict(),
                agent=agent,
                model=alias,
                binding=label,
                attempt=attempt,
                elapsed=round(elapsed, 6),
                kind=event,
            )
            return response

    # --- judgments ---------------------------------------------------------------------

    async def _condition(self, condition: n.Discretion, ctx: Ctx, step: str) -> bool:
        text = self._discretion_text(condition)
        question = judgments.condition_question(text, self._judgment_context(ctx, step))
        verdict = await self._judge(
            step=step,
            kind="condition",
            question=question,
            parse=judgments.parse_verdict,
            schema=judgments.VERDICT_SCHEMA,
            node=condition,
            summary=text,
        )
        assert isinstance(verdict, judgments.Verdict)
        self.store.state(f"{step}→ **{text}** → {str(verdict.value).lower()} ({verdict.reason})")
        return verdict.value

    def _judgment_context(self, ctx: Ctx, step: str) -> str:
        items = self._session_context(None, ctx, step)
        return "\n\n".join(f"### {i.label}\n{i.text}" for i in items)

    async def _judge(
        self,
        *,
        step: str,
        kind: str,
        question: str,
        parse: Callable[[str], object | None],
        schema: dict[str, Any],
        node: Any,
        summary: str,
    ) -> object:
        served = self.shared.replay.decisions.get(step)
        if served is not None:
            result = parse(str(served["answer"]))
            if result is not None:
                self.shared.stats.served += 1
                self.shared.emit("decision_served", step, kind=kind)
                return result
        messages: tuple[Message, ...] = (Message("user", question),)
        alias = self.config.evaluator_model
        for attempt in (1, 2):
            request = ModelRequest(
                model=alias,
                messages=messages,
                system=judgments.SYSTEM,
                max_tokens=200,
                temperature=0.0,
                response_schema=schema,
            )
            response = await self._call_model(
                f"{step}~{attempt}",
                request,
                alias=alias,
                agent="evaluator",
                where=node,
                event="judgment",
            )
            result = parse(response.text)
            if result is not None:
                reason = getattr(result, "reason", "")
                verdict = getattr(result, "value", getattr(result, "label", None))
                self.shared.emit(
                    "decision",
                    step,
                    kind=kind,
                    question=summary,
                    answer=response.text,
                    verdict=verdict,
                    reason=reason,
                    attempts=attempt,
                )
                return result
            messages = (
                *messages,
                Message("assistant", response.text),
                Message("user", judgments.reask(question)),
            )
        self.shared.emit("decision_failed", step, kind=kind, question=summary)
        raise JudgmentError(
            f"the evaluator gave no usable {kind} answer for **{summary}** (asked twice)",
            where=self._where(node),
        )

    # --- persistent agents -------------------------------------------------------------

    def _memory(self, agent: AgentSpec) -> AgentMemory:
        from openprose.vm.memory import AgentMemory

        return AgentMemory.for_agent(
            agent.name,
            str(agent.persist),
            run_agents=self.store.agents,
            project_dir=self.shared.project_dir,
        )

    async def _update_memory(
        self, agent: AgentSpec, memory: AgentMemory, step: str, task: str, answer: str
    ) -> None:
        # Concurrent sessions of one agent update its memory one after the other, each from
        # the memory the previous update left (no update is lost).
        lock = self.shared.memory_locks.setdefault(memory.folder, asyncio.Lock())
        async with lock:
            await self._rewrite_memory(agent, memory, step, task, answer)

    async def _rewrite_memory(
        self, agent: AgentSpec, memory: AgentMemory, step: str, task: str, answer: str
    ) -> None:
        mstep = steps.memory_update(step)
        served = self.shared.replay.memories.get(mstep)
        if served is not None:
            memory.write(str(served["memory"]), task, segment=int(served["segment"]), replayed=True)
            return
        prompt = memory_update_message(agent.name, memory.read() or "", task, answer)
        system = f"You are agent {agent.name}, keeping your own memory file."
        request = ModelRequest(
            model=agent.model or self.config.default_model,
            messages=(Message("user", prompt),),
            system=system,
            max_tokens=self.config.max_tokens,
        )
        response = await self._call_model(
            mstep,
            request,
            alias=agent.model or self.config.default_model,
            agent=agent.name,
            where=None,
            event="memory",
        )
        segment = memory.write(response.text, task)
        self.shared.emit(
            "memory_updated", mstep, agent=agent.name, memory=response.text, segment=segment
        )

    # --- program invocation ------------------------------------------------------------

    async def _program_call(self, stmt: n.ProgramCall, ctx: Ctx, step: str) -> Value:
        name = stmt.callee.id
        loaded = self.imports.get(name)
        if loaded is None:
            raise ProseRuntimeError(
                f"unknown program {name!r}: no `use` imports it",
                where=self._where(stmt),
                code="E025",
            )
        declared = loaded.inputs
        args: dict[str, Value] = {}
        for arg in stmt.args:
            if arg.name.id not in declared:
                raise ProseRuntimeError(
                    f"program {name!r} declares no input {arg.name.id!r} "
                    f"(inputs: {', '.join(declared) or 'none'})",
                    where=self._where(arg),
                    code="E027",
                )
            args[arg.name.id] = await self._eval(arg.value, ctx, step)
        missing = [x for x in declared if x not in args]
        if missing:
            raise ProseRuntimeError(
                f"program {name!r} needs input(s) {', '.join(missing)}",
                where=self._where(stmt),
                code="E026",
            )
        store = self.store.namespace(loaded.namespace, loaded.text, loaded.spec)
        child = Interpreter(
            loaded.program,
            loaded.text,
            self.shared,
            store,
            inputs=args,
            imports=loaded.imports,
            step_prefix=steps.program_call(step, name),
        )
        self.store.state(f"{step}→ call {loaded.spec}")
        try:
            outputs = await child.run()
        finally:
            store.close()
        result = ProgramResult(loaded.spec, dict(outputs))
        store.write_outputs({k: to_json(v) for k, v in outputs.items()})
        ctx.history.add(name, render(result))
        return result

    # --- expressions -------------------------------------------------------------------

    async def _eval(self, expr: Any, ctx: Ctx, step: str, name: str | None = None) -> Value:
        if isinstance(expr, n.StringLit):
            return self._interpolate(expr, ctx)
        if isinstance(expr, n.NumberLit):
            return expr.value
        if isinstance(expr, n.Name):
            return self._lookup(expr.id, expr, ctx)
        if isinstance(expr, n.Attribute):
            return self._attribute(expr, ctx)
        if isinstance(expr, n.ArrayLit):
            return [await self._eval(e, ctx, f"{step}[{i}]") for i, e in enumerate(expr.elements)]
        if isinstance(expr, n.ObjectContext):
            return {x.id: self._lookup(x.id, x, ctx) for x in expr.names}
        if isinstance(expr, n.Discretion):
            return self._discretion_text(expr)
        if isinstance(expr, n.Session):
            return await self._session(expr, ctx, step, name=name)
        return await self._stmt(expr, ctx, step)

    def _lookup(self, name: str, node: Any, ctx: Ctx) -> Value:
        try:
            return ctx.scope.lookup(name)
        except KeyError:
            raise ProseRuntimeError(
                f"undefined variable {name!r}", where=self._where(node)
            ) from None

    def _attribute(self, expr: n.Attribute, ctx: Ctx) -> Value:
        if isinstance(expr.value, n.Name):
            base = self._lookup(expr.value.id, expr.value, ctx)
        else:
            base = self._attribute(expr.value, ctx)
        return self._property(base, expr.attr, expr)

    def _property(self, value: Value, attr: str, node: Any) -> Value:
        if isinstance(value, ProgramResult):
            if attr not in value.outputs:
                raise ProseRuntimeError(
                    f"program {value.program!r} has no output {attr!r} "
                    f"(outputs: {', '.join(value.outputs) or 'none'})",
                    where=self._where(node),
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
        raise ProseRuntimeError(f"value has no property {attr!r}", where=self._where(node))

    def _interpolate(self, literal: n.StringLit, ctx: Ctx) -> str:
        if len(literal.parts) == 1 and isinstance(literal.parts[0], str):
            return literal.parts[0]
        out = []
        for part in literal.parts:
            if isinstance(part, str):
                out.append(part)
                continue
            value = self._lookup(part.name, part, ctx)
            for attr in part.path:
                value = self._property(value, attr, part)
            out.append(render(value))
        return "".join(out)

    @staticmethod
    def _discretion_text(node: n.Discretion) -> str:
        return " ".join(node.text.split())

    # --- bookkeeping -------------------------------------------------------------------

    def _write_binding(self, name: str, kind: str, node: Any, value: Value, ctx: Ctx) -> None:
        if ctx.in_pipeline and kind == "let" and name.startswith("anon_"):
            return
        source = self._source_of(node)
        self.store.write_binding(name, kind, source, render(value), ctx.execution_id or None)

    def _source_of(self, node: Any) -> str:
        span = getattr(node, "span", None)
        if span is None:
            return ""
        lines = self.text[span.start : span.end].splitlines()
        return "\n".join(lines[:12] + (["..."] if len(lines) > 12 else []))

    def _where(self, node: Any) -> str:
        return location(self.program.path, getattr(node, "span", None))

    def _agent_spec(self, stmt: n.AgentDef) -> AgentSpec:
        props = {p.name.id: p.value for p in stmt.properties}
        model = props.get("model")
        prompt = props.get("prompt")
        persist = props.get("persist")
        skills = props.get("skills")
        permissions = props.get("permissions")
        return AgentSpec(
            name=stmt.name.id,
            model=None if model is None else str(_literal(model)),
            prompt=prompt if isinstance(prompt, n.StringLit) else None,
            persist=None if persist is None else _persist_value(persist),
            skills=tuple(str(s) for s in (_literal(skills) or [])) if skills is not None else (),
            permissions=(
                {r.name.id: _literal(r.value) for r in permissions.rules}
                if isinstance(permissions, n.PermissionsBlock)
                else {}
            ),
        )


# --- helpers -------------------------------------------------------------------------------


def _literal(expr: Any) -> Any:
    if isinstance(expr, n.StringLit):
        return expr.value
    if isinstance(expr, n.NumberLit):
        return expr.value
    if isinstance(expr, n.Name):
        return expr.id
    if isinstance(expr, n.ArrayLit):
        return [_literal(e) for e in expr.elements]
    return None


def _persist_value(expr: Any) -> str:
    if isinstance(expr, n.StringLit):
        return f"path:{expr.value}"
    return str(_literal(expr))


def _dotted(expr: n.Attribute | n.Name) -> str:
    if isinstance(expr, n.Name):
        return expr.id
    return f"{_dotted(expr.value)}.{expr.attr}"


def _slug(spec: str) -> str:
    return spec.rstrip("/").rsplit("/", 1)[-1].removesuffix(".prose")


def _backoff_delay(backoff: str, attempt: int, base: float) -> float:
    if backoff == "linear":
        return base
    if backoff == "exponential":
        return float(base * 2 ** (attempt - 1))
    return 0.0


def _cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


async def _cancel_all(tasks: Collection[asyncio.Future[Any]]) -> None:
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.gather(*tasks, return_exceptions=True)


async def _gather_fail_fast(tasks: Sequence[asyncio.Future[None]]) -> None:
    pending = set(tasks)
    while pending:
        done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            error = task.exception()
            if error is not None:
                raise error


def _walk_statements(body: tuple[Any, ...]) -> Any:
    """Every statement, nested ones included (for hoisting and contracts)."""
    for stmt in body:
        yield stmt
        for attr in ("body", "else_body", "finally_body"):
            inner = getattr(stmt, attr, None)
            if isinstance(inner, tuple):
                yield from _walk_statements(inner)
        if isinstance(stmt, n.Try) and stmt.catch is not None:
            yield from _walk_statements(stmt.catch.body)
        if isinstance(stmt, n.If):
            for branch in stmt.branches:
                yield from _walk_statements(branch.body)
        if isinstance(stmt, n.Choice):
            for option in stmt.options:
                yield from _walk_statements(option.body)
        if isinstance(stmt, n.Parallel):
            yield from _walk_statements(tuple(b.body for b in stmt.branches))
        if isinstance(stmt, n.Binding | n.Output | n.Assign):
            yield from _walk_statements((stmt.value,))
        if isinstance(stmt, n.Pipeline):
            for op in stmt.ops:
                yield from _walk_statements(op.body)

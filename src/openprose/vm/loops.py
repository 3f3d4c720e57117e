"""Repetition: `repeat N`, `for x in xs` (also `parallel for`), and `loop` / `loop until` /
`loop while` with their optional `max:`."""

from __future__ import annotations

from openprose import nodes as n
from openprose.record import steps
from openprose.vm.errors import ProseRuntimeError
from openprose.vm.expressions import discretion_text, literal
from openprose.vm.frame import Ctx
from openprose.vm.machine import Machine
from openprose.vm.parallel import fan_out, fan_out_race, modifiers
from openprose.vm.scope import Scope
from openprose.vm.values import Value, as_collection


async def repeat(vm: Machine, stmt: n.Repeat, ctx: Ctx, step: str) -> Value:
    count = await vm.eval(stmt.count, ctx, step)
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise ProseRuntimeError(
            f"repeat count must be a non-negative integer, got {count!r}",
            where=vm.expressions.where(stmt),
        )
    if not stmt.body:  # an empty body (W100) does nothing, however many times
        return [None] * count
    results = []
    for index in range(count):
        scope = ctx.scope.child()
        if stmt.index is not None:
            scope.define(stmt.index.id, index, const=True)
        value = await vm.body(stmt.body, ctx.with_scope(scope), steps.iteration(step, index))
        results.append(value)
    return results


async def for_each(vm: Machine, stmt: n.ForEach, ctx: Ctx, step: str) -> Value:
    items = as_collection(await vm.eval(stmt.collection, ctx, step))

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
                await vm.body(stmt.body, ctx.with_scope(scope), steps.iteration(step, index))
            )
        return results
    join, on_fail, count = modifiers(stmt.modifiers, vm.expressions)
    finished: dict[int, Scope] = {}  # the frames of the iterations that ended well

    async def one(index: int, item_ctx: Ctx) -> Value:
        item_ctx.scope = scope_for(index, items[index])
        value = await vm.body(stmt.body, item_ctx, steps.iteration(step, index))
        finished[index] = item_ctx.scope
        return value

    if join == "all":
        value = await fan_out(vm, len(items), one, ctx, on_fail, step)
    else:
        needed = min(1 if join == "first" else count, len(items))
        value = await fan_out_race(vm, len(items), needed, join, one, ctx, on_fail, stmt, step)
    _publish(vm, stmt, ctx, [finished[i] for i in sorted(finished)])
    return value


def _publish(vm: Machine, stmt: n.ForEach, ctx: Ctx, frames: list[Scope]) -> None:
    """The flat names the iterations of a `parallel for` bound stay visible after it, as
    after a `for`: each holds what the last iteration (in input order) gave it."""
    loop_names = {stmt.item.id} | ({stmt.index.id} if stmt.index is not None else set())
    last: dict[str, tuple[Value, bool]] = {}
    for frame in frames:
        for name, value in frame.vars.items():
            if name not in loop_names:
                last[name] = (value, name in frame.consts)
    for name, (value, const) in last.items():
        kind = "const" if const else "let"
        if name in vm.outputs:  # an `output` in the body: the last item's, not the last done
            ctx.scope.declare_output(name, value)
            vm.outputs[name] = value
            kind = "output"
        else:
            ctx.scope.declare(name, value, const=const)
        vm.bindings.write(name, kind, stmt, value, ctx)


async def loop(vm: Machine, stmt: n.Loop, ctx: Ctx, step: str) -> Value:
    limit = _limit(vm, stmt)
    shown_max = "∞" if limit is None else str(limit)
    condition = discretion_text(stmt.condition) if stmt.condition is not None else None
    value: Value = None
    index = 0
    # `loop:` with neither a condition nor a max ends only by a failure; an iteration that
    # asked no model anything cannot change that, so it would spin forever without a call
    # (the session budget never trips): stop it with an error instead.
    endless = stmt.kind == "loop" and stmt.condition is None and limit is None
    stats = vm.shared.stats
    while True:
        # The reference's order: condition first, then the limit, then the body.
        if stmt.kind != "loop" and stmt.condition is not None:
            holds = await vm.judge.condition(stmt.condition, ctx, steps.judgment(step, f"#{index}"))
            if holds == (stmt.kind == "until"):
                vm.store.state(f"{step}→ loop:{index}/{shown_max} exit(**{condition}**)")
                return value
        if limit is not None and index >= limit:
            vm.store.state(f"{step}→ loop:{index}/{shown_max} exit(max)")
            return value
        vm.store.state(f"{step}→ loop:{index + 1}/{shown_max}")
        scope = ctx.scope.child()
        if stmt.index is not None:
            scope.define(stmt.index.id, index, const=True)
        calls = stats.sent + stats.served + stats.in_flight
        value = await vm.body(stmt.body, ctx.with_scope(scope), steps.loop_iteration(step, index))
        index += 1
        if endless and stats.sent + stats.served + stats.in_flight == calls:
            raise ProseRuntimeError(
                "`loop:` has no condition and no (max: N), and its body asked no model "
                "anything: it would repeat forever",
                where=vm.expressions.where(stmt),
            )


def _limit(vm: Machine, stmt: n.Loop) -> int | None:
    for modifier in stmt.modifiers:
        if modifier.name is not None and modifier.name.id == "max":
            value = literal(modifier.value)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ProseRuntimeError(
                    f"max iterations must be a positive integer, got {value!r}",
                    where=vm.expressions.where(modifier),
                )
            return value
    return None

"""Pipelines: `items | map: … | pmap: … | filter: … | reduce(acc, x): …`, stage by stage."""

from __future__ import annotations

from collections.abc import Awaitable

from openprose import nodes as n
from openprose.record import steps
from openprose.vm.errors import ProseRuntimeError
from openprose.vm.frame import Ctx
from openprose.vm.machine import Machine
from openprose.vm.parallel import fan_out
from openprose.vm.scope import Scope
from openprose.vm.values import Value, as_collection


async def pipeline(vm: Machine, stmt: n.Pipeline, ctx: Ctx, step: str) -> Value:
    value = await vm.eval(stmt.source, ctx, step)
    for stage, op in enumerate(stmt.ops, start=1):
        items = as_collection(value)
        if op.op == "map":
            value = [
                await _stage_item(vm, op, ctx, ctx, step, stage, i, item)
                for i, item in enumerate(items)
            ]
        elif op.op == "pmap":

            def one(
                index: int,
                item_ctx: Ctx,
                op: n.PipeOp = op,
                stage: int = stage,
                items: list[Value] = items,
            ) -> Awaitable[Value]:
                return _stage_item(vm, op, ctx, item_ctx, step, stage, index, items[index])

            value = await fan_out(vm, len(items), one, ctx, "fail-fast")
        elif op.op == "filter":
            kept = []
            for i, item in enumerate(items):
                answer = await _stage_item(vm, op, ctx, ctx, step, stage, i, item)
                verdict_step = steps.judgment(steps.stage_item(step, stage, i))
                if await vm.judge.keep(answer, item, op, verdict_step):
                    kept.append(item)
            value = kept
        elif op.op == "reduce":
            value = await _reduce(vm, op, items, ctx, step, stage)
        else:
            raise ProseRuntimeError(
                f"unknown pipeline operation {op.op!r}", where=vm.expressions.where(op)
            )
    return value


def _stage_item(
    vm: Machine,
    op: n.PipeOp,
    ctx: Ctx,
    item_ctx: Ctx,
    step: str,
    stage: int,
    index: int,
    item: Value,
) -> Awaitable[Value]:
    scope = Scope(ctx.scope)  # a frame: pipeline bodies keep their `let`s to themselves
    scope.define("item", item, const=True)
    run_ctx = Ctx(scope, item_ctx.history, ctx.depth, ctx.execution_id, True, ctx.caught)
    return vm.body(op.body, run_ctx, steps.stage_item(step, stage, index))


async def _reduce(
    vm: Machine, op: n.PipeOp, items: list[Value], ctx: Ctx, step: str, stage: int
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
        acc = await vm.body(op.body, run_ctx, steps.stage_item(step, stage, index))
    return acc

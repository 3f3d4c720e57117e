"""Concurrency: `parallel:` blocks, and the worker pools behind `pmap` and `parallel for`.

Join strategies ("all", "first", "any" with `count`) decide how many successes end the wait;
on-fail policies ("fail-fast", "continue", "ignore") decide what a failure does. The losers
of a decided race are cancelled, and the race is journaled so a resumed run replays it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Any

from openprose import nodes as n
from openprose.record import events as ev
from openprose.record import steps
from openprose.vm.errors import ParallelFailed, ProseError, ProseRuntimeError, failed_calls
from openprose.vm.expressions import Expressions, literal
from openprose.vm.frame import Ctx
from openprose.vm.machine import Machine
from openprose.vm.prompts import ForkOutputs
from openprose.vm.runtime import Shared
from openprose.vm.values import Absent, ErrorValue, Value

JOINS = ("all", "first", "any")
ON_FAIL = ("fail-fast", "continue", "ignore")

RunOne = Callable[[int, Ctx], Awaitable[Value]]


def modifiers(written: tuple[n.Modifier, ...], expressions: Expressions) -> tuple[str, str, int]:
    """(join, on-fail, count) of a `parallel (...)` modifier list."""
    join, on_fail, count = "all", "fail-fast", 1
    for modifier in written:
        value = literal(modifier.value)
        key = modifier.name.id if modifier.name is not None else None
        if key is None and value in JOINS:
            join = str(value)
        elif key == "on-fail" and value in ON_FAIL:
            on_fail = str(value)
        elif key == "count" and isinstance(value, int) and value >= 1:
            count = value
        else:
            raise ProseRuntimeError(
                f"invalid parallel modifier {value!r}", where=expressions.where(modifier)
            )
    return join, on_fail, count


def race_plan(shared: Shared, step: str, count: int, needed: int) -> tuple[Sequence[int], int]:
    """Which of `count` racers to start and how many wins end the race. A resumed race
    runs only the racers that finished the first time, until all its winners are back
    (served from the journal); the losers it cancelled are not sent again."""
    decided = shared.replay.races.get(step)
    if decided is None:
        return range(count), needed
    return decided.ran, len(decided.won)


async def run_parallel(vm: Machine, stmt: n.Parallel, ctx: Ctx, step: str) -> Value:
    join, on_fail, count = modifiers(stmt.modifiers, vm.expressions)
    # A count above the branch count is only a warning (W143): it waits for every branch,
    # as `parallel ("any", count: N) for` does when N exceeds the items.
    needed = {"all": len(stmt.branches), "first": 1, "any": min(count, len(stmt.branches))}[join]
    names = [b.name.id if b.name else "" for b in stmt.branches]
    vm.store.state(f"{step}→ ∥start {','.join(x or str(i + 1) for i, x in enumerate(names))}")
    contexts = [ctx.forked() for _ in stmt.branches]

    async def run_branch(index: int) -> Value:
        tracer = vm.shared.tracer
        if tracer is None:
            return await branch_body(index)
        branch = stmt.branches[index]
        where = steps.branch(step, index + 1)
        with tracer.statement("branch", where, vm.expressions.path, branch.span.line):
            return await branch_body(index)

    async def branch_body(index: int) -> Value:
        branch = stmt.branches[index]
        where = steps.branch(step, index + 1)
        if branch.name is not None and isinstance(branch.body, n.Session):
            value = await vm.sessions.run(branch.body, contexts[index], where, branch.name.id)
        else:
            value = await vm.stmt(branch.body, contexts[index], where)
        if branch.name is not None:
            ctx.scope.declare(branch.name.id, value)
            vm.bindings.write(branch.name.id, "let", branch, value, ctx)
        return value

    ran, needed = race_plan(vm.shared, step, len(stmt.branches), needed)
    tasks = {asyncio.ensure_future(run_branch(i)): i for i in ran}
    results: dict[int, Value] = {}
    failures: dict[int, ProseError] = {}
    pending = set(tasks)
    try:
        while pending and len(results) < needed:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            # every outcome taken, even when the first pause (two branches waiting for a
            # person) ends the loop: none is left "never retrieved" on stderr
            outcomes = {task: task.exception() for task in done}
            for task in sorted(done, key=tasks.__getitem__):
                index = tasks[task]
                error = outcomes[task]
                if error is None:
                    results[index] = task.result()
                elif isinstance(error, ProseError):
                    failures[index] = error
                    vm.store.state(f"{steps.branch(step, index + 1)}→ ✗ {error.message}")
                    if on_fail == "fail-fast":
                        raise error
                else:
                    raise error
    finally:
        await cancel_all(pending)
    if pending and join != "all" and len(results) >= needed:
        vm.shared.emit(ev.RaceDecided(step=step, won=sorted(results), failed=sorted(failures)))
    vm.store.state(f"{step}→ ∥done")
    ctx.history.join([contexts[i].history for i in sorted(results)])
    short = len(results) < needed and join != "all"
    if short and on_fail != "ignore":
        raise _carrying(
            ParallelFailed(
                _shortfall(join, needed, len(results), failures, len(stmt.branches)),
                where=vm.expressions.where(stmt),
            ),
            failures.values(),
        )
    handled(vm.shared, step, failures.values())
    # Every named branch is bound: a failure as its error value (`continue`) or a note
    # (`ignore`), a race loser — cancelled, or never started again on resume — as "(cancelled)".
    unfinished: dict[int, Value] = {}
    for index, error in failures.items():
        if on_fail == "continue":
            unfinished[index] = ErrorValue(error.message, error.kind, error.where)
        else:
            unfinished[index] = Absent.failed(error.message)
    for index in range(len(stmt.branches)):
        if index not in results and index not in failures:
            unfinished[index] = Absent.cancelled()
    for index, value in sorted(unfinished.items()):
        branch = stmt.branches[index]
        if branch.name is not None:
            ctx.scope.declare(names[index], value)
            vm.bindings.write(names[index], "let", branch, value, ctx)
    return _joined(join, on_fail, names, results, unfinished, len(failures) if short else None)


def _joined(
    join: str,
    on_fail: str,
    names: list[str],
    results: dict[int, Value],
    unfinished: dict[int, Value],
    short_after: int | None,
) -> Value:
    """The block's value. "The first successful result wins": a failure is never the value
    of "first", and "any" gives its successes; only "all" with `continue` keeps failures
    in place, as error values."""
    if join == "first":
        if short_after is not None:  # `ignore`, and no branch succeeded
            return Absent.failed(f"no branch succeeded ({short_after} failed)")
        return results[min(results)]
    shown = dict(results)
    if join == "all" and on_fail == "continue":
        shown.update(unfinished)
    ordered = sorted(shown)
    if any(names):
        return {names[i] or f"branch_{i + 1}": shown[i] for i in ordered}
    return [shown[i] for i in ordered]


def handled(shared: Shared, step: str, errors: Collection[ProseError]) -> None:
    """Failures a block absorbed (`on-fail`, or a race that still got its successes): a
    resumed run is served the same failures (see `ModelCalls.call`)."""
    calls = failed_calls(errors)
    if calls:
        shared.emit(ev.FailureHandled(step=step, failures=calls))


def _carrying(error: ParallelFailed, errors: Collection[ProseError]) -> ParallelFailed:
    """A block's failure carries its branches' failed calls, for a `catch` around it."""
    error.failed_calls = failed_calls(errors)
    return error


# How a shortfall names what raced: (after "parallel (join) ", counted, plural).
_RACERS = {"branch": ("", "branch(es)", "branches"), "item": ("for ", "item(s)", "items")}


def _shortfall(
    join: str,
    needed: int,
    got: int,
    failures: dict[int, ProseError],
    total: int,
    racer: str = "branch",
) -> str:
    """Why a race ended without enough successes, naming the failures."""
    prefix, counted, plural = _RACERS[racer]
    text = f"parallel ({join}) {prefix}needed {needed} successful {counted}, got {got}"
    if not failures:
        return text
    shown = "; ".join(f"{racer} {i + 1}: {e.message}" for i, e in sorted(failures.items())[:3])
    more = "; ..." if len(failures) > 3 else ""
    if not got and len(failures) == total:
        return f"{text}: all {total} {plural} failed ({shown}{more})"
    return f"{text}: {len(failures)} failed ({shown}{more})"


async def fan_out(
    vm: Machine, count: int, run_one: RunOne, ctx: Ctx, on_fail: str, step: str = ""
) -> list[Value]:
    """`pmap` and `parallel for`: a bounded pool of workers, results in input order.
    Fail-fast cancels every other item on the first error."""
    results: list[Value] = [None] * count
    failed = bytearray(count)  # 1 where the item failed (a byte per item, not a pointer)
    errors: list[ProseError] = []
    # Items' outputs are held only while they can still be in the joined thread's window:
    # a fan-out's memory is its results, not one history per item.
    outputs = ForkOutputs(ctx.history.keep)
    cursor = iter(range(count))

    async def worker() -> None:
        for index in cursor:
            item_ctx = ctx.forked()
            try:
                results[index] = await run_one(index, item_ctx)
            except ProseError as error:
                if on_fail == "fail-fast":
                    raise
                failed[index] = 1
                errors.append(error)
                results[index] = ErrorValue(error.message, error.kind, error.where)
            outputs.add(index, item_ctx.history)

    workers = [
        asyncio.ensure_future(worker()) for _ in range(min(count, vm.config.max_concurrency))
    ]
    try:
        await gather_fail_fast(workers)
    finally:
        await cancel_all(set(workers))
    ctx.history.join_forks(outputs)
    handled(vm.shared, step, errors)
    if on_fail == "ignore":
        return [r for r, bad in zip(results, failed, strict=True) if not bad]
    return results


async def fan_out_race(
    vm: Machine,
    count: int,
    needed: int,
    join: str,
    run_one: RunOne,
    ctx: Ctx,
    on_fail: str,
    node: Any,
    step: str,
) -> Value:
    """`parallel ("first"|"any") for`: items run as for `fan_out` until `needed` have
    succeeded; the rest are cancelled, as the losers of `parallel ("first"):` are.
    "first" gives the winner's value, "any" the successful results in input order."""
    succeeded: dict[int, Value] = {}
    failures: dict[int, ProseError] = {}
    outputs = ForkOutputs(ctx.history.keep)
    enough = asyncio.Event()
    ran, needed = race_plan(vm.shared, step, count, needed)
    cursor = iter(ran)

    async def worker() -> None:
        for index in cursor:
            if enough.is_set():
                return
            item_ctx = ctx.forked()
            try:
                value = await run_one(index, item_ctx)
            except ProseError as error:
                vm.store.state(f"{steps.iteration(step, index)}→ ✗ {error.message}")
                if on_fail == "fail-fast":
                    raise
                failures[index] = error
                continue
            succeeded[index] = value
            outputs.add(index, item_ctx.history)
            if len(succeeded) >= needed:
                enough.set()
                return

    workers = [
        asyncio.ensure_future(worker()) for _ in range(min(count, vm.config.max_concurrency))
    ]
    everyone = asyncio.ensure_future(gather_fail_fast(workers))
    race = asyncio.ensure_future(enough.wait())
    try:
        await asyncio.wait({everyone, race}, return_when=asyncio.FIRST_COMPLETED)
        if everyone.done():
            everyone.result()  # re-raises a fail-fast error
    finally:
        await cancel_all({*workers, everyone, race})
    if enough.is_set():
        vm.shared.emit(ev.RaceDecided(step=step, won=sorted(succeeded), failed=sorted(failures)))
    ctx.history.join_forks(outputs)
    if len(succeeded) < needed and on_fail != "ignore":
        raise _carrying(
            ParallelFailed(
                _shortfall(join, needed, len(succeeded), failures, count, "item"),
                where=vm.expressions.where(node),
            ),
            failures.values(),
        )
    handled(vm.shared, step, failures.values())
    if join == "first":
        if not succeeded:  # `ignore`, and no item succeeded
            return Absent.failed(f"no item succeeded ({len(failures)} failed)")
        return succeeded[min(succeeded)]
    return [succeeded[i] for i in sorted(succeeded)]


async def cancel_all(tasks: Collection[asyncio.Future[Any]]) -> None:
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.gather(*tasks, return_exceptions=True)


async def gather_fail_fast(tasks: Sequence[asyncio.Future[None]]) -> None:
    pending = set(tasks)
    while pending:
        done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            error = task.exception()
            if error is not None:
                raise error

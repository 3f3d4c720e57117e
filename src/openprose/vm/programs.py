"""Program invocation: `name(input: value, …)` runs an imported program in its own
interpreter and namespace, and gives back its outputs."""

from __future__ import annotations

from openprose import nodes as n
from openprose.record import steps
from openprose.vm.errors import ProseRuntimeError
from openprose.vm.frame import Ctx
from openprose.vm.machine import Machine
from openprose.vm.values import ProgramResult, Value, render, to_json


async def call_program(vm: Machine, stmt: n.ProgramCall, ctx: Ctx, step: str) -> Value:
    where = vm.expressions.where
    name = stmt.callee.id
    loaded = vm.imports.get(name)
    if loaded is None:
        raise ProseRuntimeError(
            f"unknown program {name!r}: no `use` imports it", where=where(stmt), code="E025"
        )
    declared = loaded.inputs
    args: dict[str, Value] = {}
    for arg in stmt.args:
        if arg.name.id not in declared:
            raise ProseRuntimeError(
                f"program {name!r} declares no input {arg.name.id!r} "
                f"(inputs: {', '.join(declared) or 'none'})",
                where=where(arg),
                code="E027",
            )
        args[arg.name.id] = await vm.eval(arg.value, ctx, step)
    missing = [x for x in declared if x not in args]
    if missing:
        raise ProseRuntimeError(
            f"program {name!r} needs input(s) {', '.join(missing)}",
            where=where(stmt),
            code="E026",
        )
    store = vm.store.namespace(loaded.namespace, loaded.text, loaded.spec)
    child = vm.spawn(loaded, store, args, steps.program_call(step, name))
    vm.store.state(f"{step}→ call {loaded.spec}")
    try:
        outputs = await child.run()
    finally:
        store.close()
    result = ProgramResult(loaded.spec, dict(outputs))
    vm.shared.commit()  # its outputs.json must not say more than the journal holds
    store.write_outputs({k: to_json(v) for k, v in outputs.items()})
    ctx.history.add(name, render(result))
    return result

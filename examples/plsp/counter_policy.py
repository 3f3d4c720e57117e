"""A policy written in Python, with a custom action: count to 3, beeping on each step.

Run offline (the reference engine answers instead of a model):

    python examples/plsp/counter_policy.py

Swap `dry_run_model()` for any async `(system, prompt) -> str` callable to use a model.
"""

from __future__ import annotations

import asyncio

from plsp import ActionRegistry, Instruction, Loop, PolicyContext, Ref
from plsp.providers import dry_run_model

actions = ActionRegistry()


@actions.action()
def beep(times: int) -> str:
    return "beep" * times


def policy(context: PolicyContext) -> Instruction | None:
    if context.cycle == 1:
        return Instruction().set("n", 0)
    count = context.state.resolve(Ref("n"))
    if count.dumps() == "3":
        return None
    step = int(count.dumps()) + 1
    return Instruction().upd("n", step).sig("beep", Ref("n"))


async def main() -> None:
    loop = Loop(dry_run_model(), policy, actions=actions,
                on_cycle=lambda r: print(r.instr, "->", r.next, [a.value for a in r.actions]))
    result = await loop.run()
    print("done:", result.stop_reason, result.state.dumps())


if __name__ == "__main__":
    asyncio.run(main())

"""Agents: their definitions as the run sees them, and the memory of persistent ones.

After each session of a persistent agent, the agent itself rewrites its memory (one journaled
model call); concurrent sessions of one agent update it one after the other."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from openprose import nodes as n
from openprose.providers.base import Message, ModelRequest
from openprose.record import events as ev
from openprose.record import steps
from openprose.record.runstore import RunStore
from openprose.vm.calls import ModelCalls
from openprose.vm.expressions import literal
from openprose.vm.prompts import memory_update_message
from openprose.vm.runtime import AgentSpec, Shared

if TYPE_CHECKING:
    from openprose.vm.memory import AgentMemory


def agent_spec(stmt: n.AgentDef) -> AgentSpec:
    props = {p.name.id: p.value for p in stmt.properties}
    model = props.get("model")
    prompt = props.get("prompt")
    persist = props.get("persist")
    skills = props.get("skills")
    permissions = props.get("permissions")
    return AgentSpec(
        name=stmt.name.id,
        model=None if model is None else str(literal(model)),
        prompt=prompt if isinstance(prompt, n.StringLit) else None,
        persist=None if persist is None else _persist_value(persist),
        skills=tuple(str(s) for s in (literal(skills) or [])) if skills is not None else (),
        permissions=(
            {r.name.id: literal(r.value) for r in permissions.rules}
            if isinstance(permissions, n.PermissionsBlock)
            else {}
        ),
    )


def _persist_value(expr: Any) -> str:
    if isinstance(expr, n.StringLit):
        return f"path:{expr.value}"
    return str(literal(expr))


class Memories:
    """Opens and updates persistent agents' memories."""

    def __init__(self, shared: Shared, store: RunStore, calls: ModelCalls) -> None:
        self.shared = shared
        self.store = store
        self.calls = calls

    def open(self, agent: AgentSpec) -> AgentMemory:
        from openprose.vm.memory import AgentMemory

        return AgentMemory.for_agent(
            agent.name,
            str(agent.persist),
            run_agents=self.store.agents,
            project_dir=self.shared.project_dir,
        )

    async def update(
        self,
        agent: AgentSpec,
        memory: AgentMemory,
        step: str,
        task: str,
        answer: str,
        *,
        ignored: str | None = None,
    ) -> None:
        """`ignored`: the memory a `session:` found when it started. The reference's
        `session:` "ignores existing memory, starts fresh", so the update does not build on
        it — only on what concurrent sessions of the agent wrote since."""
        # Concurrent sessions of one agent update its memory one after the other, each from
        # the memory the previous update left (no update is lost).
        lock = self.shared.memory_locks.setdefault(memory.folder, asyncio.Lock())
        async with lock:
            mstep = steps.memory_update(step)
            served = self.shared.replay.memories.get(mstep)
            if served is not None:
                memory.write(
                    str(served["memory"]), task, segment=int(served["segment"]), replayed=True
                )
                return
            config = self.shared.config
            before = memory.read() or ""
            if before == ignored:
                before = ""
            prompt = memory_update_message(agent.name, before, task, answer)
            system = f"You are agent {agent.name}, keeping your own memory file."
            request = ModelRequest(
                model=agent.model or config.default_model,
                messages=(Message("user", prompt),),
                system=system,
                max_tokens=config.max_tokens,
            )
            response = await self.calls.call(
                mstep,
                request,
                alias=agent.model or config.default_model,
                agent=agent.name,
                where=None,
                event="memory",
            )
            segment = memory.write(response.text, task)
            self.shared.emit(
                ev.MemoryUpdated(
                    step=mstep, agent=agent.name, memory=response.text, segment=segment
                )
            )
            self.shared.commit()  # the segment file exists: a resume must not write it again

"""`session` and `resume:` statements, and agent memory (E003, E007, E017, E018, W011).

Whether a persistent agent has memory depends on where its memory lives:

* ``persist: true`` — under the run's folder, so it exists only once a ``session:`` (or
  ``resume:``) of the agent has run earlier in this program;
* ``persist: project`` / ``user`` / ``"path"`` — on disk, so it also exists when
  ``memory.md`` is already there; without a project directory that is deferred to run time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from openprose import nodes as n
from openprose.checker.agents import check_inline_prompt, check_properties
from openprose.checker.state import AgentInfo, Checker, Handler, head

Memory = Literal["exists", "absent", "unknown"]


def memory_dir(ck: Checker, name: str, info: AgentInfo) -> Path | None:
    """Where the agent's memory lives on disk before the run, or None when unknowable here."""
    if info.persist == "user":
        return Path.home() / ".prose" / "agents" / name
    if info.persist == "path" and info.persist_path is not None:
        path = Path(info.persist_path)
        if path.is_absolute():
            return path
        return None if ck.project_dir is None else ck.project_dir / path
    if info.persist == "project" and ck.project_dir is not None:
        return ck.project_dir / ".prose" / "agents" / name
    return None


def memory_on_disk(ck: Checker, name: str, info: AgentInfo) -> tuple[Memory, Path | None]:
    if info.persist == "true":
        return "absent", None  # execution-scoped memory starts empty with every run
    directory = memory_dir(ck, name, info)
    if directory is None:
        return "unknown", None
    return ("exists" if (directory / "memory.md").is_file() else "absent"), directory


def _session(ck: Checker, node: n.Session) -> None:
    if node.prompt is not None:
        check_inline_prompt(ck, node.prompt)
    properties = check_properties(ck, node.properties, "session")
    inline_twice = properties.get("prompt") if node.prompt is not None else None
    if inline_twice is not None:
        ck.emit(
            "E009",
            inline_twice.name.span,
            "Property 'prompt' already specified (the session has an inline prompt)",
        )
    agent = node.agent
    if agent is None:
        if node.prompt is None and "prompt" not in properties:
            ck.emit(
                "E003",
                head(node.span, len(node.kind)),
                "Session requires a prompt or agent reference",
            )
        return
    info = ck.agents.get(agent.id)
    if info is None:
        if agent.id not in ck.broken:
            ck.emit("E007", agent.span, f"Agent '{agent.id}' not defined")
        return
    if node.kind == "resume":
        _resume_memory(ck, agent, info)
    else:
        _session_memory(ck, agent, info)
    if ck.order_free:  # runs only where the block is invoked: order unknown
        if node.kind == "session":
            ck.started_in_blocks.add(agent.id)
    else:
        ck.started_agents.setdefault(agent.id, node.span)


def _resume_memory(ck: Checker, agent: n.Name, info: AgentInfo) -> None:
    if info.persist == "none":
        ck.emit(
            "E017",
            agent.span,
            f"Agent '{agent.id}' must have a `persist:` property to use `resume:`",
        )
        return
    if info.persist == "invalid" or agent.id in ck.started_agents:
        return
    if ck.order_free:
        # A block body runs wherever it is invoked: any session of the agent may precede it.
        def finish() -> None:
            if agent.id not in ck.started_agents and agent.id not in ck.started_in_blocks:
                _require_memory(ck, agent, info)

        ck.finishers.append(finish)
        return
    _require_memory(ck, agent, info)


def _require_memory(ck: Checker, agent: n.Name, info: AgentInfo) -> None:
    state, directory = memory_on_disk(ck, agent.id, info)
    if state == "exists":
        return
    if state == "unknown":
        ck.emit(
            "I001",
            agent.span,
            f"whether '{agent.id}' has memory to resume is checked at run time: its memory "
            f"(persist: {_persist_text(info)}) is under the project directory, which is not "
            "known here (prose check --project-dir DIR)",
        )
    elif directory is None:
        ck.emit(
            "E018",
            agent.span,
            f"No memory exists for agent '{agent.id}' here: its memory (persist: true) is "
            f"created by a `session: {agent.id}` earlier in the run; use `session:` for the "
            "first invocation",
        )
    else:
        ck.emit(
            "E018",
            agent.span,
            f"No memory file exists for agent '{agent.id}' ({directory / 'memory.md'}); "
            "use `session:` for the first invocation",
        )


def _session_memory(ck: Checker, agent: n.Name, info: AgentInfo) -> None:
    if info.persist in ("none", "invalid"):
        return
    earlier = ck.started_agents.get(agent.id)
    if earlier is not None:
        ck.emit(
            "W011",
            agent.span,
            f"Agent '{agent.id}' has memory from line {earlier.line}: `session:` will "
            "ignore it; use `resume:` to continue",
        )
        return
    state, directory = memory_on_disk(ck, agent.id, info)
    if state == "exists":
        ck.emit(
            "W011",
            agent.span,
            f"Agent '{agent.id}' has memory ({directory}): `session:` will ignore it; use "
            "`resume:` to continue",
        )
    elif state == "unknown":
        ck.emit(
            "I001",
            agent.span,
            f"whether `session:` would ignore existing memory of '{agent.id}' is checked at "
            f"run time: its memory (persist: {_persist_text(info)}) is under the project "
            "directory, which is not known here (prose check --project-dir DIR)",
        )


def _persist_text(info: AgentInfo) -> str:
    return f'"{info.persist_path}"' if info.persist == "path" else info.persist


HANDLERS: dict[type, Handler] = {n.Session: _session}

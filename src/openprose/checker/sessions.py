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
from openprose.diagnostics import Edit, Fix
from openprose.suggest import closest

Memory = Literal["exists", "absent", "unknown"]


def memory_dir(ck: Checker, name: str, info: AgentInfo) -> Path | None:
    """Where the agent's memory lives on disk before the run, or None when unknowable here
    (and always None unless the check may read the disk: a check must not depend on what
    this machine happens to hold unless the user asks, with --project-dir)."""
    if not ck.memory_on_disk:
        return None
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
    # `session "Check X"` with a `prompt:` property is in the grammar: the inline string is
    # the session's title, the property its prompt (docs/decisions.md, Issue 20).
    agent = node.agent
    if agent is None:
        if node.prompt is None and node.kind == "session":
            prompt = properties.get("prompt")
            ck.emit(
                "E003",
                head(node.span, len(node.kind)),
                "Session requires a prompt or agent reference"
                + (" on its line (`prompt:` alone is not enough)" if prompt else ""),
                help='write the prompt on the session line: session "..."' if prompt else None,
                fix=_inline_prompt_fix(ck, node, prompt) if prompt else None,
            )
        return
    info = ck.agents.get(agent.id)
    if info is None:
        if agent.id not in ck.broken:
            guess = closest(agent.id, ck.agents) if ck.agents else None
            ck.emit(
                "E007",
                agent.span,
                f"Agent '{agent.id}' not defined"
                + (f" (did you mean `{guess}`?)" if guess else ""),
                help=f"write `{guess}`" if guess else None,
                fix=Fix.nearest_word(agent.span, agent.id, guess) if guess else None,
            )
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


def _inline_prompt_fix(ck: Checker, node: n.Session, prompt: n.Property) -> Fix | None:
    """``session`` + ``prompt: "..."`` → ``session "..."``: the string moves onto the session
    line and its property line goes (the other properties stay)."""
    value = prompt.value
    if not isinstance(value, n.StringLit) or not ck.source_text:
        return None
    text = ck.source_text
    keyword_end = node.span.start + len(node.kind)
    line_start = text.rfind("\n", 0, prompt.span.start) + 1
    line_end = text.find("\n", prompt.span.end)
    line_end = len(text) if line_end == -1 else line_end + 1
    if text[line_start : prompt.span.start].strip() or text[prompt.span.end : line_end].strip():
        return None  # something else (another property, a comment) shares the line
    if node.span.line == prompt.span.line:
        return None  # an inline property: `session prompt: "..."`
    literal = text[value.span.start : value.span.end]
    edits = (
        Edit(ck.span_at(keyword_end, keyword_end), " " + literal),
        Edit(ck.span_at(line_start, line_end), ""),
    )
    return Fix("move the prompt onto the session line", edits)


def _persist_fix(ck: Checker, agent: n.AgentDef) -> Fix | None:
    """`resume:` of an agent without `persist:`: the author means the agent to remember, so
    the fix gives it `persist: true` (memory for this run), as a line under its last
    property. Unsafe: the agent's sessions then keep memory, which they did not."""
    text = ck.source_text
    if not text or not agent.properties:
        return None
    last = agent.properties[-1]
    first = agent.properties[0]
    line_start = text.rfind("\n", 0, first.span.start) + 1
    indent = text[line_start : first.span.start]
    if indent.strip() or last.span.end_line != last.span.line and "\n" in indent:
        return None
    end = text.find("\n", last.span.end)
    if end == -1:
        return None
    at = ck.span_at(end + 1, end + 1)
    return Fix(
        f"add `persist: true` to agent '{agent.name.id}'",
        (Edit(at, f"{indent}persist: true\n"),),
        safe=False,
    )


def _resume_memory(ck: Checker, agent: n.Name, info: AgentInfo) -> None:
    if info.persist == "none":
        ck.emit(
            "E017",
            agent.span,
            f"Agent '{agent.id}' must have a `persist:` property to use `resume:`",
            help=f"add `persist: true` to agent '{agent.id}' (line {info.node.span.line}), "
            "or use `session:`",
            fix=_persist_fix(ck, info.node),
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


def _keyword_fix(ck: Checker, agent: n.Name, old: str, new: str, *, safe: bool) -> Fix | None:
    """`resume: a` → `session: a`: the first invocation of an agent whose memory cannot
    exist yet (persist: true, nothing earlier in the run), the reference's own advice. (Not
    offered the other way for W011: the earlier session may be in a branch not taken.)"""
    text = ck.source_text
    line_start = text.rfind("\n", 0, agent.span.start) + 1
    before = text[line_start : agent.span.start]
    at = before.rfind(old)
    if at == -1 or before[at:].replace(" ", "") != f"{old}:":
        return None
    start = line_start + at
    return Fix(f"write `{new}:`", (Edit(ck.span_at(start, start + len(old)), new),), safe=safe)


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
            fix=_keyword_fix(ck, agent, "resume", "session", safe=True),
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

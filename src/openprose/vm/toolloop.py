"""The tool loop of a session: model → tool calls → results → model, until a final answer.

Each model turn is an ordinary journaled model call (turn 0 under the session's step, turn
n under `{step}~t{n}`), so a resume serves it and a replay cassette holds it. Every tool
call (`tool_call`), permission decision (`permission`) and result (`tool_result`) is
journaled as it happens, so each result is in the journal before the next model call. A
resumed run never runs a completed tool call again: its journaled result is used. Only a
call in flight at the crash (a `tool_call` without its `tool_result`) runs again.

Calls of one model turn run concurrently when they only look (read, list, search, fetch,
load a skill); a call that changes something (write, edit, command) runs alone, in the
order the model gave, so "write then read back" means what it says.

Tool calls are bounded per model turn and per session (`CallLimits`, from `[vm]`): a call
past a limit is not run; its result is an error naming the limit and its setting, journaled
like any other result, so the model can answer with what it has and a resume serves it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from openprose.providers.base import Message, ModelRequest, ModelResponse, ToolCall, ToolResult
from openprose.record import events as ev
from openprose.record.steps import turn_step
from openprose.vm.runtime import ToolTurns
from openprose.vm.tools.approvals import ApprovalPending
from openprose.vm.tools.toolbox import Toolbox

__all__ = [
    "CallLimits",
    "ToolLoopExhausted",
    "run_tool_loop",
    "tool_system_prompt",
    "turn_step",
]

Emit = Callable[[ev.Event], None]
# send(request, turn, new_messages): new_messages = messages added since the previous turn
# (None on the first turn), so the call journals only that delta.
Send = Callable[[ModelRequest, int, int | None], Awaitable[ModelResponse]]


@dataclass(frozen=True, slots=True)
class CallLimits:
    """How many tool calls one session may make: per model turn and in all."""

    per_turn: int = 32  # [vm] max_tool_calls_per_turn
    per_session: int = 200  # [vm] max_tool_calls_per_session

    def runnable(self, asked: int, made_before: int) -> int:
        """How many of a turn's `asked` calls run, after `made_before` in earlier turns."""
        return max(0, min(asked, self.per_turn, self.per_session - made_before))

    def refusal(self, asked: int, made_before: int) -> str:
        """The result of every call of the turn past `runnable`."""
        if asked > self.per_turn and made_before + self.per_turn <= self.per_session:
            return (
                f"not run: this turn asked for {asked} tool calls and at most {self.per_turn} "
                f"run per turn ([vm] max_tool_calls_per_turn = {self.per_turn})"
            )
        return (
            f"not run: this session reached its limit of {self.per_session} tool calls "
            f"([vm] max_tool_calls_per_session = {self.per_session}); answer with what you have"
        )


class ToolLoopExhausted(Exception):
    """The model still asked for tools after the turn limit."""


def tool_system_prompt(system: str | None, toolbox: Toolbox) -> str:
    """The agent's system prompt with a note on its tools and the names and descriptions of
    its skills (their instructions load on demand with `load_skill`)."""
    lines = [
        (
            "You can act with the tools offered. Paths are relative to the project root. "
            "Call tools as needed; when the task is done, answer with your final text and no "
            "tool calls. Actions your permissions do not allow are refused."
        )
    ]
    if toolbox.skills:
        lines.append("\nYour skills (load one with load_skill before you use it):")
        lines.extend(skill.listing() for skill in toolbox.skills.values())
    note = "\n".join(lines)
    return f"{system}\n\n{note}" if system else note


async def run_tool_loop(
    request: ModelRequest,
    *,
    step: str,
    toolbox: Toolbox,
    journaled: ToolTurns,
    max_turns: int,
    send: Send,
    emit: Emit,
    limits: CallLimits = CallLimits(),
) -> tuple[ModelResponse, int]:
    """Drive the conversation until the model answers without tool calls; returns the final
    response and the number of model turns. `send(request, turn, new_messages)` makes one
    journaled model call (served from the journal on resume) under `turn_step(step, turn)`;
    turns after the first journal only the messages added since the turn before."""
    messages = list(request.messages)
    new_messages: int | None = None
    made = 0  # tool calls of earlier turns, refused ones included
    for turn in range(max_turns):
        current = ModelRequest(
            request.model,
            tuple(messages),
            request.system,
            request.max_tokens,
            request.temperature,
            request.response_schema,
            toolbox.specs,
        )
        response = await send(current, turn, new_messages)
        if not response.tool_calls:
            return response, turn + 1
        calls = response.tool_calls
        results = await _run_calls(step, turn, calls, toolbox, journaled, emit, limits, made)
        made += len(calls)
        messages.append(Message("assistant", response.text, tool_calls=response.tool_calls))
        messages.append(Message("user", "", tool_results=results))
        new_messages = 2
    raise ToolLoopExhausted(
        f"the model still asked for tools after {max_turns} turns "
        f"([vm] max_turns = {max_turns}); the session has no final answer"
    )


async def _run_calls(
    step: str,
    turn: int,
    calls: tuple[ToolCall, ...],
    toolbox: Toolbox,
    journaled: ToolTurns,
    emit: Emit,
    limits: CallLimits,
    made_before: int,
) -> tuple[ToolResult, ...]:
    results: list[ToolResult | None] = [None] * len(calls)

    async def one(index: int) -> None:
        results[index] = await _run_call(step, turn, index, calls[index], toolbox, journaled, emit)

    runnable = limits.runnable(len(calls), made_before)
    batch: list[int] = []
    for index, call in enumerate(calls[:runnable]):
        if toolbox.mutating(call.name):
            await _gather(batch, one)
            batch = []
            await one(index)
        else:
            batch.append(index)
    await _gather(batch, one)
    why = limits.refusal(len(calls), made_before)
    for index in range(runnable, len(calls)):
        results[index] = _refused(step, turn, index, calls[index], why, journaled, emit)
    return tuple(r for r in results if r is not None)


async def _gather(indexes: list[int], one: Callable[[int], Awaitable[None]]) -> None:
    if len(indexes) == 1:
        await one(indexes[0])
    elif indexes:
        tasks = [asyncio.ensure_future(one(i)) for i in indexes]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise


def _refused(
    step: str,
    turn: int,
    index: int,
    call: ToolCall,
    why: str,
    journaled: ToolTurns,
    emit: Emit,
) -> ToolResult:
    """The result of a call over a limit, journaled with its call like any other (so
    `prose show`, the audit trail and traces list it), though nothing ran."""
    done = journaled.results.get((step, turn, index))
    if done is not None:
        return ToolResult(call.id, str(done["content"]), bool(done.get("is_error")))
    emit(ev.ToolCalled(step=step, turn=turn, index=index, call=call.to_dict()))
    emit(
        ev.ToolResulted(
            step=step,
            turn=turn,
            index=index,
            call_id=call.id,
            tool=call.name,
            content=why,
            is_error=True,
            omitted_bytes=0,
        )
    )
    return ToolResult(call.id, why, True)


async def _run_call(
    step: str,
    turn: int,
    index: int,
    call: ToolCall,
    toolbox: Toolbox,
    journaled: ToolTurns,
    emit: Emit,
) -> ToolResult:
    done = journaled.results.get((step, turn, index))
    if done is not None:  # completed before a crash or a wait: never run again
        return ToolResult(call.id, str(done["content"]), bool(done.get("is_error")))
    emit(ev.ToolCalled(step=step, turn=turn, index=index, call=call.to_dict()))

    def decided(fields: dict[str, Any]) -> None:
        emit(ev.PermissionDecided(step=step, turn=turn, index=index, **fields))

    try:
        outcome = await toolbox.call(call, f"{step}~t{turn}.{index}", on_decision=decided)
    except ApprovalPending as pending:
        asked = pending.request
        emit(
            ev.ApprovalRequested(
                step=step, turn=turn, index=index, id=asked.id, kind=asked.kind,
                action=asked.action, tool=asked.tool, agent=asked.agent, digest=asked.digest,
            )
        )  # fmt: skip
        raise
    emit(
        ev.ToolResulted(
            step=step,
            turn=turn,
            index=index,
            call_id=call.id,
            tool=call.name,
            content=outcome.content,
            is_error=outcome.is_error,
            omitted_bytes=outcome.omitted_bytes,
        )
    )
    return ToolResult(call.id, outcome.content, outcome.is_error)

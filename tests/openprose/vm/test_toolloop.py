"""The tool loop on its own: which calls of a turn run together, and what each turn sends."""

from __future__ import annotations

import asyncio
from typing import Any

from openprose.providers.base import Message, ModelRequest, ModelResponse, ToolCall
from openprose.record.events import Event, ToolCalled, ToolResulted
from openprose.vm.runtime import ToolTurns
from openprose.vm.toolloop import run_tool_loop
from openprose.vm.tools.registry import BUILTINS
from openprose.vm.tools.toolbox import ToolOutcome


class SlowToolbox:
    """Each call takes 50 ms; records when every call starts and ends."""

    specs = ()

    def __init__(self) -> None:
        self.log: list[tuple[str, str]] = []

    async def call(self, call: ToolCall, call_key: str = "", **_: Any) -> ToolOutcome:
        self.log.append(("start", call.id))
        await asyncio.sleep(0.05)
        self.log.append(("end", call.id))
        return ToolOutcome(f"result of {call.id}")

    def mutating(self, name: str) -> bool:
        return BUILTINS[name].mutating


def test_reads_of_a_turn_run_together_and_writes_alone_in_order() -> None:
    calls = (
        ToolCall("r1", "read_file", {"path": "a"}),
        ToolCall("r2", "list_files", {}),
        ToolCall("w1", "write_file", {"path": "b", "content": "x"}),
        ToolCall("r3", "read_file", {"path": "b"}),
        ToolCall("r4", "search_files", {"pattern": "x"}),
        ToolCall("c1", "run_command", {"command": "true"}),
    )
    sent: list[tuple[ModelRequest, int, int | None]] = []

    async def send(request: ModelRequest, turn: int, new: int | None) -> ModelResponse:
        sent.append((request, turn, new))
        return ModelResponse("", tool_calls=calls) if turn == 0 else ModelResponse("done")

    toolbox = SlowToolbox()
    request = ModelRequest("m", (Message("user", "task"),))
    response, turns = asyncio.run(
        run_tool_loop(
            request,
            step="1",
            toolbox=toolbox,  # type: ignore[arg-type]
            journaled=ToolTurns(),
            max_turns=5,
            send=send,
            emit=lambda event: None,
        )
    )
    assert response.text == "done" and turns == 2
    assert toolbox.log == [
        ("start", "r1"),
        ("start", "r2"),
        ("end", "r1"),
        ("end", "r2"),
        ("start", "w1"),  # a write waits for the reads before it, and runs alone
        ("end", "w1"),
        ("start", "r3"),
        ("start", "r4"),
        ("end", "r3"),
        ("end", "r4"),
        ("start", "c1"),
        ("end", "c1"),
    ]
    results = sent[1][0].messages[-1].tool_results
    assert [r.call_id for r in results] == ["r1", "r2", "w1", "r3", "r4", "c1"]  # model order
    assert [new for _, _, new in sent] == [None, 2]  # turn 1 journals the two new messages


def _loop_with(turns: list[tuple[ToolCall, ...]], limits: Any) -> tuple[SlowToolbox, list[Any]]:
    """Run the loop over scripted turns of tool calls; the toolbox records what ran and the
    emitted events are returned."""
    events: list[Event] = []

    async def send(request: ModelRequest, turn: int, new: int | None) -> ModelResponse:
        if turn < len(turns):
            return ModelResponse("", tool_calls=turns[turn])
        return ModelResponse("done")

    toolbox = SlowToolbox()
    asyncio.run(
        run_tool_loop(
            ModelRequest("m", (Message("user", "task"),)),
            step="1",
            toolbox=toolbox,  # type: ignore[arg-type]
            journaled=ToolTurns(),
            max_turns=len(turns) + 2,
            send=send,
            emit=events.append,
            limits=limits,
        )
    )
    return toolbox, events


def test_calls_past_the_turn_limit_are_refused_with_the_setting_named() -> None:
    from openprose.vm.toolloop import CallLimits

    calls = tuple(ToolCall(f"r{i}", "read_file", {"path": "a"}) for i in range(7))
    toolbox, events = _loop_with([calls], CallLimits(per_turn=3, per_session=100))
    assert [cid for what, cid in toolbox.log if what == "start"] == ["r0", "r1", "r2"]
    results = [e for e in events if isinstance(e, ToolResulted)]
    assert len(results) == 7  # every call has its result: the API needs one per call id
    refused = [r for r in results if r.is_error]
    assert [r.call_id for r in refused] == ["r3", "r4", "r5", "r6"]
    assert "asked for 7 tool calls" in refused[0].content
    assert "[vm] max_tool_calls_per_turn = 3" in refused[0].content
    journaled = [e.call["id"] for e in events if isinstance(e, ToolCalled)]
    assert journaled == [f"r{i}" for i in range(7)]  # listed by `prose show` with their results


def test_the_session_limit_counts_every_turn() -> None:
    from openprose.vm.toolloop import CallLimits

    turn = tuple(ToolCall(f"w{i}", "write_file", {"path": "a", "content": ""}) for i in range(2))
    toolbox, events = _loop_with([turn, turn, turn], CallLimits(per_turn=10, per_session=5))
    assert len([1 for what, _ in toolbox.log if what == "start"]) == 5
    refused = [e for e in events if isinstance(e, ToolResulted) and e.is_error]
    assert len(refused) == 1 and (refused[0].turn, refused[0].index) == (2, 1)
    assert "[vm] max_tool_calls_per_session = 5" in refused[0].content


def test_a_resume_serves_refused_calls_from_the_journal() -> None:
    from openprose.vm.toolloop import CallLimits

    calls = tuple(ToolCall(f"r{i}", "read_file", {"path": "a"}) for i in range(3))
    journaled = ToolTurns()
    for index in range(3):
        journaled.results[("1", 0, index)] = {"content": f"old {index}", "is_error": index == 2}
    events: list[Event] = []

    async def send(request: ModelRequest, turn: int, new: int | None) -> ModelResponse:
        return ModelResponse("", tool_calls=calls) if turn == 0 else ModelResponse("done")

    toolbox = SlowToolbox()
    asyncio.run(
        run_tool_loop(
            ModelRequest("m", (Message("user", "task"),)),
            step="1",
            toolbox=toolbox,  # type: ignore[arg-type]
            journaled=journaled,
            max_turns=3,
            send=send,
            emit=events.append,
            limits=CallLimits(per_turn=2),
        )
    )
    assert toolbox.log == [] and events == []  # all three served, none run or journaled again

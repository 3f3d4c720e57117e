"""The tool loop on its own: which calls of a turn run together, and what each turn sends."""

from __future__ import annotations

import asyncio
from typing import Any

from openprose.providers.base import Message, ModelRequest, ModelResponse, ToolCall
from openprose.vm.runtime import ToolTurns
from openprose.vm.toolloop import run_tool_loop
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
            emit=lambda *a, **k: None,
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

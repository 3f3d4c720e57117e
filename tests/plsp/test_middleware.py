from __future__ import annotations

from typing import Any

import pytest

from plsp.actions import ActionRegistry
from plsp.instr import Instruction
from plsp.middleware import SYSTEM_PROMPT, Loop, PolicyContext
from plsp.syntax import parse
from tests.plsp.scripted import ScriptedModel

FIRST = Instruction().set("u", "op").set("t", 75).sig("ping", "$u")
SECOND = Instruction().upd("t", 82).sig("ping", "hot")


def recording_registry(calls: list[tuple[str, str]]) -> ActionRegistry:
    registry = ActionRegistry()

    @registry.action()
    def ping(message: str) -> str:
        calls.append(("ping", message))
        return f"pong {message}"

    return registry


def two_step_policy(context: PolicyContext) -> Instruction | None:
    return {1: FIRST, 2: SECOND}.get(context.cycle)


async def test_correct_model_runs_the_loop() -> None:
    calls: list[tuple[str, str]] = []
    logs: list[tuple[int, list[Any]]] = []
    model = ScriptedModel(
        ['S{$u:"op";$t:75;!ping,"$u";}S', 'S{$u:"op";$t:82;!ping,"hot";>"t",$t;}S']
    )
    loop = Loop(
        model,
        two_step_policy,
        actions=recording_registry(calls),
        logs=lambda cycle, data: logs.append((cycle, data)),
        goal="watch t",
    )
    result = await loop.run()
    assert result.stop_reason == "policy"
    assert result.state.dumps() == 'S{$u:"op";$t:82;!ping,"hot";>"t",$t;}S'
    assert calls == [("ping", "$u"), ("ping", "hot")]
    assert logs == [(2, ["t", 82])]
    system, first_prompt = model.prompts[0]
    assert system.startswith(SYSTEM_PROMPT) and system.endswith("Goal of this loop: watch t")
    assert first_prompt == FIRST.dumps() + "\nS{}S"
    assert model.prompts[1][1] == SECOND.dumps() + '\nS{$u:"op";$t:75;!ping,"$u";}S'
    assert [c.accepted for c in result.cycles] == [True, True]
    assert result.cycles[0].actions[0].value == "pong $u"


async def test_dropped_variable_is_re_asked_once_with_the_violation() -> None:
    model = ScriptedModel(
        [
            'S{$u:"op";$t:75;!ping,"$u";}S',
            'S{$t:82;!ping,"hot";}S',
            'S{$u:"op";$t:82;!ping,"hot";}S',
        ]
    )
    calls: list[tuple[str, str]] = []
    result = await Loop(model, two_step_policy, actions=recording_registry(calls)).run()
    second = result.cycles[1]
    assert second.accepted and len(second.attempts) == 2
    assert [v.kind for v in second.attempts[0].violations] == ["dropped_variable"]
    retry_prompt = model.prompts[2][1]
    assert retry_prompt.startswith(SECOND.dumps() + '\nS{$u:"op";$t:75;!ping,"$u";}S\n')
    assert '- dropped_variable: $u is missing (expected "op")' in retry_prompt
    assert calls == [("ping", "$u"), ("ping", "hot")]


async def test_ignored_set_twice_rejects_the_cycle_and_keeps_the_state() -> None:
    seen: list[PolicyContext] = []

    def policy(context: PolicyContext) -> Instruction | None:
        seen.append(context)
        return FIRST if context.cycle == 1 else SECOND if context.cycle <= 3 else None

    calls: list[tuple[str, str]] = []
    model = ScriptedModel(
        ['S{$u:"op";$t:75;!ping,"$u";}S']
        + ['S{$u:"op";$t:75;!ping,"hot";}S'] * 2
        + ['S{$u:"op";$t:82;!ping,"hot";}S']
    )
    result = await Loop(model, policy, actions=recording_registry(calls)).run()
    rejected = result.cycles[1]
    assert not rejected.accepted and len(rejected.attempts) == 2
    assert rejected.actions == [] and rejected.next == 'S{$u:"op";$t:75;!ping,"hot";}S'
    assert [v.kind for v in rejected.violations] == ["wrong_value"]
    assert seen[2].state.dumps() == 'S{$u:"op";$t:75;!ping,"$u";}S'
    assert seen[2].last is rejected and seen[2].results == {}
    assert result.cycles[2].accepted and result.state.variables["t"].dumps() == "82"
    assert calls == [("ping", "$u"), ("ping", "hot")]


async def test_chatter_is_re_asked_in_strict_mode_and_tolerated_otherwise() -> None:
    chatty = 'Sure!\nS{$u:"op";$t:75;!ping,"$u";}S'
    strict = await Loop(
        ScriptedModel([chatty, 'S{$u:"op";$t:75;!ping,"$u";}S']),
        lambda c: FIRST if c.cycle == 1 else None,
        actions=recording_registry([]),
    ).run()
    assert len(strict.cycles[0].attempts) == 2 and strict.cycles[0].accepted
    lenient = await Loop(
        ScriptedModel([chatty]),
        lambda c: FIRST if c.cycle == 1 else None,
        actions=recording_registry([]),
        strict=False,
    ).run()
    cycle = lenient.cycles[0]
    assert cycle.accepted and len(cycle.attempts) == 1
    assert [(v.kind, v.blocking) for v in cycle.violations] == [("stray_text", False)]


async def test_unknown_action_is_reported_and_never_executed() -> None:
    calls: list[tuple[str, str]] = []
    instr = Instruction().sig("format_disk", "/").sig("ping", "after")
    model = ScriptedModel(['S{!format_disk,"/";!ping,"after";}S'])
    result = await Loop(
        model, lambda c: instr if c.cycle == 1 else None, actions=recording_registry(calls)
    ).run()
    cycle = result.cycles[0]
    assert cycle.accepted
    assert [str(v) for v in cycle.violations] == [
        "unknown_action: !format_disk is not registered; not executed"
    ]
    assert calls == [("ping", "after")]
    assert [a.name for a in cycle.actions] == ["ping"]


async def test_unrequested_action_blocks_the_reply() -> None:
    calls: list[tuple[str, str]] = []
    model = ScriptedModel(['S{$a:1;!ping,"x";}S'] * 2)
    result = await Loop(
        model,
        lambda c: "INSTR:@set:$a=1;" if c.cycle == 1 else None,
        actions=recording_registry(calls),
    ).run()
    assert not result.cycles[0].accepted and calls == []


async def test_failed_action_is_a_non_blocking_violation() -> None:
    registry = ActionRegistry()

    def boom(reason: str) -> None:
        raise OSError(reason)

    registry.register("boom", boom)
    result = await Loop(
        ScriptedModel(['S{!boom,"x";}S']),
        lambda c: Instruction().sig("boom", "x") if c.cycle == 1 else None,
        actions=registry,
    ).run()
    assert result.cycles[0].accepted
    assert [str(v) for v in result.cycles[0].violations] == ["action_failed: !boom: OSError: x"]


async def test_stops_after_max_cycles_and_repeated_rejections() -> None:
    def always(context: PolicyContext) -> str:
        return "INSTR:@set:$a=1;"

    done = await Loop(ScriptedModel(["S{$a:1}S"] * 3), always, max_cycles=3).run()
    assert done.stop_reason == "max_cycles" and len(done.cycles) == 3
    broken = await Loop(ScriptedModel(["nope"] * 4), always, max_rejections=2).run()
    assert broken.stop_reason == "rejected" and len(broken.cycles) == 2
    assert [v.kind for v in broken.cycles[0].violations] == ["no_block"]


async def test_async_policy_and_initial_state() -> None:
    async def policy(context: PolicyContext) -> Instruction | None:
        return Instruction().upd("n", 2) if context.cycle == 1 else None

    model = ScriptedModel(["S{$n:2}S"])
    result = await Loop(model, policy, retries=0).run(parse("S{$n:1}S"))
    assert result.state.dumps() == "S{$n:2;}S"
    assert model.prompts[0][1].endswith("\nS{$n:1;}S")


async def test_model_errors_propagate() -> None:
    model = ScriptedModel([])
    with pytest.raises(AssertionError, match="unexpected model call"):
        await Loop(model, lambda c: "INSTR:").run()


async def test_wrong_types_from_model_or_policy_are_clear_errors() -> None:
    async def silent(system: str, prompt: str) -> Any:
        return None

    with pytest.raises(TypeError, match="the model returned NoneType; expected the reply"):
        await Loop(silent, lambda c: "INSTR:").run()
    model = ScriptedModel(["S{}S"])
    with pytest.raises(TypeError, match="the policy returned int; expected an Instruction"):
        await Loop(model, lambda c: 42).run()  # type: ignore[arg-type, return-value]


async def test_trace_record_holds_the_three_artifacts() -> None:
    result = await Loop(
        ScriptedModel(['x S{$u:"op";$t:75;!ping,"$u";}S', 'S{$u:"op";$t:75;!ping,"$u";}S']),
        lambda c: FIRST if c.cycle == 1 else None,
        actions=recording_registry([]),
    ).run()
    record = result.cycles[0].to_json()
    assert record["instr"] == FIRST.dumps() and record["previous"] == "S{}S"
    assert record["reply"] == 'S{$u:"op";$t:75;!ping,"$u";}S'
    assert record["next"] == 'S{$u:"op";$t:75;!ping,"$u";}S' and record["accepted"]
    assert [a["reply"][:1] for a in record["attempts"]] == ["x", "S"]
    assert record["attempts"][0]["violations"][0]["kind"] == "stray_text"
    assert record["actions"] == [{"name": "ping", "args": ["$u"], "ok": True, "result": "pong $u"}]


def test_python_policy_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    import runpy
    from pathlib import Path

    example = Path(__file__).parents[2] / "examples" / "plsp" / "counter_policy.py"
    runpy.run_path(str(example), run_name="__main__")
    out = capsys.readouterr().out
    assert "INSTR:@upd:$n=3;@sig:!beep,$n; -> S{$n:3;!beep,$n;}S ['beepbeepbeep']" in out
    assert out.endswith("done: policy S{$n:3;!beep,$n;}S\n")


async def test_a_huge_number_in_a_log_is_routed_as_text() -> None:
    huge = "9" * 5000
    logs: list[list[Any]] = []
    result = await Loop(
        ScriptedModel([f"S{{>{huge};}}S"]),
        lambda c: f"INSTR:@sig:>{huge};" if c.cycle == 1 else None,
        logs=lambda cycle, data: logs.append(data),
    ).run()
    assert result.cycles[0].accepted and logs == [[huge]]


async def test_a_plain_function_can_be_the_model() -> None:
    asked: list[str] = []

    def model(system: str, prompt: str) -> str:
        asked.append(prompt)
        return "S{$a:1}S"

    result = await Loop(model, lambda c: "INSTR:@set:$a=1;" if c.cycle == 1 else None).run()
    assert result.cycles[0].accepted and asked == ["INSTR:@set:$a=1;\nS{}S"]

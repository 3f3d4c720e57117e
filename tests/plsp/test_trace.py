from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plsp.actions import ActionRegistry, builtin_actions
from plsp.instr import Instruction, parse_instr
from plsp.middleware import Loop
from plsp.trace import TraceError, TraceWriter, check_trace, read_trace
from tests.plsp.scripted import ScriptedModel


async def write_trace(path: Path, replies: list[str]) -> None:
    instructions = [
        Instruction().set("a", 1),
        Instruction().upd("a", 2),
        Instruction().set("b", "x"),
    ]
    with TraceWriter(path) as trace:
        loop = Loop(
            ScriptedModel(replies),
            lambda c: instructions[c.cycle - 1] if c.cycle <= 3 else None,
            on_cycle=trace.write,
        )
        await loop.run()


async def test_trace_has_one_record_per_cycle_and_checks_clean(tmp_path: Path) -> None:
    path = tmp_path / "t.ndjson"
    await write_trace(path, ["S{$a:1}S", "S{$a:2}S", 'S{$a:2;$b:"x"}S'])
    records = [record for _, record in read_trace(path)]
    assert [r["cycle"] for r in records] == [1, 2, 3]
    assert records[1]["previous"] == "S{$a:1;}S" and records[1]["instr"] == "INSTR:@upd:$a=2;"
    checks = check_trace(path)
    assert [c.ok for c in checks] == [True, True, True]


async def test_check_reports_rejected_cycles(tmp_path: Path) -> None:
    path = tmp_path / "t.ndjson"
    await write_trace(path, ["S{$a:1}S", "S{$a:1}S", "S{$a:1}S", 'S{$a:1;$b:"x"}S'])
    checks = check_trace(path)
    assert [c.ok for c in checks] == [True, False, True]
    assert checks[1].problems == ()
    assert [v.kind for v in checks[1].violations] == ["wrong_value"]


async def test_check_detects_tampering(tmp_path: Path) -> None:
    path = tmp_path / "t.ndjson"
    await write_trace(path, ["S{$a:1}S", "S{$a:2}S", 'S{$a:2;$b:"x"}S'])
    lines = path.read_text().splitlines()
    second = json.loads(lines[1])
    second["reply"] = "S{$a:3}S"  # accepted although it drifts
    third = json.loads(lines[2])
    third["previous"] = "S{$a:9;}S"  # breaks the chain of states
    path.write_text("\n".join([lines[0], json.dumps(second), json.dumps(third)]) + "\n")
    checks = check_trace(path)
    assert checks[0].ok
    assert any("recorded accepted=True but the reply fails" in p for p in checks[1].problems)
    assert any("recorded next S{$a:2;}S differs" in p for p in checks[1].problems)
    assert any(
        "does not continue the last accepted state S{$a:2;}S" in p for p in checks[2].problems
    )


async def test_check_confirms_the_actions_that_ran(tmp_path: Path) -> None:
    registry = builtin_actions(sleep=_no_sleep)
    path = tmp_path / "t.ndjson"
    with TraceWriter(path) as trace:
        policy = [
            parse_instr("INSTR:@set:$a=1;@sig:!wait,5;@sig:!zap,$a;"),
            parse_instr("INSTR:@set:$a=2;"),
        ]
        loop = Loop(
            ScriptedModel(["S{$a:1;!wait,5;!zap,$a;}S", "S{$a:1;}S", "S{$a:1;}S"]),
            lambda c: policy[c.cycle - 1] if c.cycle <= 2 else None,
            actions=registry,
            on_cycle=trace.write,
        )
        await loop.run()
    assert [c.ok for c in check_trace(path)] == [True, False]  # cycle 2 is rejected
    first, second = (json.loads(line) for line in path.read_text().splitlines())
    assert [a["name"] for a in first["actions"]] == ["wait"]  # !zap: unknown, never run
    tampered = [
        (
            {**first, "actions": [*first["actions"], {"name": "zap", "args": [1], "ok": True}]},
            "recorded actions",
        ),
        ({**first, "actions": [{**first["actions"][0], "args": [9]}]}, "recorded actions"),
        ({**first, "actions": []}, "recorded actions"),
        ({**second, "actions": first["actions"]}, "a rejected cycle ran actions ['wait']"),
    ]
    for record, problem in tampered:
        path.write_text(json.dumps(record) + "\n")
        assert any(problem in p for p in check_trace(path)[0].problems), record


async def _no_sleep(seconds: float) -> None:
    return None


def test_malformed_traces_are_errors(tmp_path: Path) -> None:
    path = tmp_path / "bad.ndjson"
    path.write_text('{"cycle": 1}\n')
    with pytest.raises(TraceError, match=r"bad.ndjson:1: missing \['instr', 'reply'\]: a trace"):
        read_trace(path)
    path.write_text("\n{oops\n")
    with pytest.raises(TraceError, match="bad.ndjson:2: not JSON"):
        read_trace(path)
    path.write_text(
        '{"cycle": 1, "instr": "x", "previous": "S{}S", "reply": "", "accepted": false}\n'
    )
    [check] = check_trace(path)
    assert not check.ok and "unreadable INSTR/previous" in check.problems[0]


def test_a_minimal_trace_of_instr_and_reply_is_checked(tmp_path: Path) -> None:
    """Another tool's trace: only instr and reply. The previous state is the last accepted
    one; what a line leaves out is not checked, the reply still is."""
    path = tmp_path / "t.ndjson"
    lines = [
        {"instr": "INSTR: @set:$a=1;", "reply": "S{$a:1;}S"},
        {"instr": "INSTR: @upd:$a=2;", "reply": "S{$a:3;}S"},
        {"instr": "INSTR: @upd:$a=2;", "reply": "S{$a:2;}S"},
        {"cycle": 5, "instr": "INSTR: @upd:$a=4;", "reply": "S{$a:4;}S"},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    checks = check_trace(path)
    assert [c.ok for c in checks] == [True, False, True, False]
    assert "wrong_value" in str(checks[1].violations[0].kind)
    assert checks[3].problems[0].startswith("cycle 5 where cycle 4 was expected")


async def test_check_confirms_the_logs_that_were_routed(tmp_path: Path) -> None:
    path = tmp_path / "t.ndjson"
    with TraceWriter(path) as trace:
        instr = parse_instr('INSTR:@set:$t=78.5;@sig:>"hot",$t;')
        loop = Loop(
            ScriptedModel(['S{$t:78.5;>"hot",$t;}S']),
            lambda c: instr if c.cycle == 1 else None,
            on_cycle=trace.write,
        )
        await loop.run()
    [record] = (json.loads(line) for line in path.read_text().splitlines())
    assert record["logs"] == [["hot", 78.5]] and check_trace(path)[0].ok
    for logs in ([["hot", 80]], [], [["hot", 78.5], ["extra"]]):
        path.write_text(json.dumps({**record, "logs": logs}) + "\n")
        [check] = check_trace(path)
        assert not check.ok and "recorded logs" in check.problems[0], logs


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.fixed_dictionaries(
        {
            "cycle": JSON,
            "instr": st.sampled_from(["INSTR:", "INSTR:@sig:!wait,1;", "x"]),
            "previous": st.sampled_from(["S{}S", "S{$a:1}S", "S{"]),
            "reply": st.sampled_from(["S{}S", "S{!wait,1}S", "S{>1}S", "junk"]),
            "accepted": st.booleans(),
        },
        optional={
            "next": st.none() | st.sampled_from(["S{}S", "S{!wait,1;}S"]),
            "strict": st.booleans(),
            "violations": JSON,
            "actions": JSON,
            "logs": JSON,
            "attempts": JSON,
        },
    )
)
def test_fuzz_any_record_gets_a_verdict(tmp_path: Path, record: dict[str, object]) -> None:
    path = tmp_path / "fuzz.ndjson"
    path.write_text(json.dumps(record) + "\n")
    [check] = check_trace(path)  # never raises: every oddity is a problem or a violation
    assert check.ok == (not check.problems and not any(v.blocking for v in check.violations))


def test_violations_that_are_not_a_list_are_a_problem(tmp_path: Path) -> None:
    path = tmp_path / "t.ndjson"
    path.write_text(
        json.dumps(
            {
                "cycle": 1,
                "instr": "INSTR:",
                "previous": "S{}S",
                "reply": "S{}S",
                "next": "S{}S",
                "accepted": True,
                "violations": 5,
            }
        )
        + "\n"
    )
    [check] = check_trace(path)
    assert check.problems == ("'violations' must be a list",)


async def test_check_confirms_the_cycle_numbers(tmp_path: Path) -> None:
    path = tmp_path / "t.ndjson"
    await write_trace(path, ["S{$a:1}S", "S{$a:2}S", 'S{$a:2;$b:"x"}S'])
    first, _, third = path.read_text().splitlines()
    path.write_text(f"{first}\n{third}\n")  # the second cycle is missing
    checks = check_trace(path)
    assert (
        checks[0].ok
        and checks[1].problems[0]
        == "cycle 3 where cycle 2 was expected (one line per cycle, counting from 1)"
    )
    path.write_text(json.dumps({**json.loads(first), "cycle": True}) + "\n")
    assert check_trace(path)[0].problems[0].startswith("cycle true where cycle 1")


async def test_an_action_result_that_is_not_json_is_written_as_its_repr(tmp_path: Path) -> None:
    registry = ActionRegistry()
    registry.register("raw", lambda: b"\x00bytes")
    path = tmp_path / "t.ndjson"
    instr = Instruction().sig("raw")
    with TraceWriter(path) as trace:
        await Loop(
            ScriptedModel(["S{!raw}S"]),
            lambda c: instr if c.cycle == 1 else None,
            actions=registry,
            on_cycle=trace.write,
        ).run()
    [record] = (json.loads(line) for line in path.read_text().splitlines())
    assert record["actions"] == [{"name": "raw", "args": [], "ok": True, "result": "b'\\x00bytes'"}]
    assert check_trace(path)[0].ok


REPLY_ALPHABET = 'S{}$:;,>!"#.0123456789abtwaiz \n'
GOOD_REPLIES = [
    "S{$a:1;!wait,5;!zap;}S",
    'S{$a:1;$b:"x";>$b,$a;}S',
    "junk S{$a:1;!wait,5;!zap}S",
    'S{$a:2;$b:"x";}S',
]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.one_of(st.sampled_from(GOOD_REPLIES), st.text(alphabet=REPLY_ALPHABET, max_size=30)),
        min_size=8,
        max_size=8,
    ),
    st.booleans(),
)
def test_online_and_offline_verdicts_agree(
    tmp_path: Path, replies: list[str], strict: bool
) -> None:
    instructions = [
        parse_instr("INSTR:@set:$a=1;@sig:!wait,5;@sig:!zap;"),
        parse_instr('INSTR:@set:$b="x";@sig:>$b,$a;'),
        parse_instr("INSTR:@upd:$a=2;@if:$a>1?@sig:!wait,$a;"),
    ]
    path = tmp_path / "t.ndjson"

    async def run() -> None:
        with TraceWriter(path) as trace:
            await Loop(
                ScriptedModel(list(replies)),
                lambda c: instructions[c.cycle - 1] if c.cycle <= 3 else None,
                actions=builtin_actions(sleep=_no_sleep),
                on_cycle=trace.write,
                strict=strict,
                max_rejections=3,
            ).run()

    asyncio.run(run())
    records = [record for _, record in read_trace(path)]
    checks = check_trace(path)
    assert [c.problems for c in checks] == [()] * len(records)
    assert [c.ok for c in checks] == [r["accepted"] for r in records]

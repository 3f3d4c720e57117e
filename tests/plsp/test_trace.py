from __future__ import annotations

import json
from pathlib import Path

import pytest

from plsp.actions import builtin_actions
from plsp.instr import Instruction, parse_instr
from plsp.middleware import Loop
from plsp.trace import TraceError, TraceWriter, check_trace, read_trace
from tests.plsp.scripted import ScriptedModel


async def write_trace(path: Path, replies: list[str]) -> None:
    instructions = [Instruction().set("a", 1), Instruction().upd("a", 2),
                    Instruction().set("b", "x")]
    with TraceWriter(path) as trace:
        loop = Loop(ScriptedModel(replies),
                    lambda c: instructions[c.cycle - 1] if c.cycle <= 3 else None,
                    on_cycle=trace.write)
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
    assert any("does not continue the last accepted state S{$a:2;}S" in p
               for p in checks[2].problems)


async def test_check_confirms_the_actions_that_ran(tmp_path: Path) -> None:
    registry = builtin_actions(sleep=_no_sleep)
    path = tmp_path / "t.ndjson"
    with TraceWriter(path) as trace:
        policy = [parse_instr("INSTR:@set:$a=1;@sig:!wait,5;@sig:!zap,$a;"),
                  parse_instr("INSTR:@set:$a=2;")]
        loop = Loop(ScriptedModel(["S{$a:1;!wait,5;!zap,$a;}S", "S{$a:1;}S", "S{$a:1;}S"]),
                    lambda c: policy[c.cycle - 1] if c.cycle <= 2 else None,
                    actions=registry, on_cycle=trace.write)
        await loop.run()
    assert [c.ok for c in check_trace(path)] == [True, False]  # cycle 2 is rejected
    first, second = (json.loads(line) for line in path.read_text().splitlines())
    assert [a["name"] for a in first["actions"]] == ["wait"]  # !zap: unknown, never run
    tampered = [
        ({**first, "actions": [*first["actions"], {"name": "zap", "args": [1], "ok": True}]},
         "recorded actions"),
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
    with pytest.raises(TraceError, match=r"bad.ndjson:1: missing \['accepted'"):
        read_trace(path)
    path.write_text("\n{oops\n")
    with pytest.raises(TraceError, match="bad.ndjson:2: not JSON"):
        read_trace(path)
    path.write_text('{"cycle": 1, "instr": "x", "previous": "S{}S", "reply": "", '
                    '"accepted": false}\n')
    [check] = check_trace(path)
    assert not check.ok and "unreadable INSTR/previous" in check.problems[0]

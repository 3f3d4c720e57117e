"""Loops, pipelines, conditionals, choice and the evaluator's structured judgments."""

from __future__ import annotations

from typing import Any

import pytest


def tasks(provider: Any) -> list[str]:
    return [
        p.split("\n", 1)[0]
        for p in provider.prompts()
        if not p.startswith(("Condition:", "Choice:", "Filter", "Your reply"))
    ]


def test_repeat_and_for_with_index(vm: Any) -> None:
    provider = vm.spy()
    source = """repeat 3 as i:
  session "Idea {i}"
let fruits = ["apple", "banana"]
for fruit, n in fruits:
  session "Describe {fruit} at {n}"
for topic in ["AI", "space"]:
  session "Research {topic}"
"""
    result = vm.run(source, provider)
    assert result.status == "succeeded"
    assert tasks(provider) == [
        "Idea 0",
        "Idea 1",
        "Idea 2",
        "Describe apple at 0",
        "Describe banana at 1",
        "Research AI",
        "Research space",
    ]


def test_for_over_json_list_input(vm: Any) -> None:
    provider = vm.spy()
    source = 'input topics: "list"\nfor t in topics:\n  session "On {t}"\n'
    vm.run(source, provider, inputs={"topics": ["x", "y", "z"]})
    assert tasks(provider) == ["On x", "On y", "On z"]


@pytest.mark.parametrize(
    "answer",
    ['["x", "y"]', '```json\n["x", "y"]\n```', '```\n["x", "y"]\n```\n'],
    ids=["bare", "fenced-json", "fenced"],
)
def test_a_session_answering_a_json_array_feeds_a_loop(vm: Any, answer: str) -> None:
    # chat models often wrap the array in a Markdown fence: the fence is not part of it
    provider = vm.spy([{"match": "^List", "answer": answer}])
    source = 'let topics = session "List two topics"\nfor t in topics:\n  session "On {t}"\n'
    vm.run(source, provider)
    assert tasks(provider)[1:] == ["On x", "On y"]


def test_text_around_a_fence_keeps_the_answer_one_item(vm: Any) -> None:
    provider = vm.spy([{"match": "^List", "answer": 'Here:\n```json\n["x", "y"]\n```'}])
    source = 'let topics = session "List two topics"\nfor t in topics:\n  session "On it"\n'
    vm.run(source, provider)
    assert tasks(provider)[1:] == ["On it"]


def test_loop_until_checks_condition_before_each_iteration(vm: Any) -> None:
    provider = vm.spy(vm.verdicts(("Condition: the draft is polished", [False, False, True])))
    source = """loop until **the draft is polished** (max: 10) as attempt:
  session "Revise {attempt}"
"""
    result = vm.run(source, provider)
    assert tasks(provider) == ["Revise 0", "Revise 1"]
    decisions = vm.events(result, "decision")
    assert [d["verdict"] for d in decisions] == [False, False, True]
    assert [d["step"] for d in decisions] == ["1?#0", "1?#1", "1?#2"]
    assert "exit(**the draft is polished**)" in (result.run_dir / "state.md").read_text()


def test_loop_until_true_at_start_runs_no_iteration(vm: Any) -> None:
    provider = vm.spy(vm.verdicts(("Condition: done", True)))
    vm.run('loop until **done** (max: 3):\n  session "Work"\n', provider)
    assert tasks(provider) == []


def test_loop_while_and_max_limit(vm: Any) -> None:
    provider = vm.spy(vm.verdicts(("Condition: items remain", True)))
    result = vm.run('loop while **items remain** (max: 3):\n  session "Process"\n', provider)
    assert tasks(provider) == ["Process"] * 3
    # The reference checks the condition first, then the limit: 4 checks for 3 iterations.
    assert len(vm.events(result, "decision")) == 4
    assert "loop:3/3 exit(max)" in (result.run_dir / "state.md").read_text()


def test_plain_loop_with_max(vm: Any) -> None:
    provider = vm.spy()
    vm.run('loop (max: 2) as k:\n  session "Step {k}"\n', provider)
    assert tasks(provider) == ["Step 0", "Step 1"]


def test_pipelines_chain_map_filter_reduce_pmap(vm: Any) -> None:
    rules = [
        {"match": r"^Keep\? blockchain", "answer": "no"},
        {"match": r"^Keep\? IoT", "answer": "Hmm, it depends"},
        {"match": r"^Keep\?", "answer": "yes"},
        {
            "match": "^Filter verdict",
            "answer": '```json\n{"verdict": false, "reason": "vague"}\n```',
        },
        {"match": "^Pitch", "answer": lambda r: "P(" + r.last_user_text().split()[1] + ")"},
        {"match": "^Merge", "answer": lambda r: "M[" + r.last_user_text().split("\n")[0][6:] + "]"},
        {"match": "^Shout", "answer": lambda r: r.last_user_text().split()[1].upper()},
    ]
    provider = vm.spy(rules)
    source = """let topics = ["quantum", "blockchain", "ML", "IoT"]
let pitched = topics
  | filter:
      session "Keep? {item}"
  | map:
      session "Pitch {item}"
let loud = pitched | pmap:
  session "Shout {item}"
output combined = loud | reduce(acc, x):
  session "Merge {acc}+{x}"
"""
    result = vm.run(source, provider)
    assert result.status == "succeeded", result.error
    assert result.outputs["combined"] == "M[P(QUANTUM)+P(ML)]"
    filters = vm.events(result, "decision")
    assert [d["verdict"] for d in filters] == [True, False, True, False]
    assert filters[1]["reason"] == "literal answer" and filters[3]["reason"] == "vague"
    state = (result.run_dir / "state.md").read_text()
    assert "2:1[1]?→ filter → drop (literal answer)" in state
    assert "2:1[3]?→ filter → drop (vague)" in state and "2:1[0]?→ filter → keep" in state


def test_if_elif_else_and_choice(vm: Any) -> None:
    rules = vm.verdicts(
        ("Condition: the code has security", False),
        ("Condition: the code has performance", 'Sure! {"verdict": "yes", "reason": "slow loop"}'),
    ) + [{"match": "^Choice:", "answer": '{"option": "Minor", "reason": "small"}'}]
    provider = vm.spy(rules)
    source = """let analysis = session "Analyze"
if **the code has security vulnerabilities**:
  session "Fix security"
elif **the code has performance issues**:
  session "Optimize"
else:
  session "Proceed"
choice **the severity of issues**:
  option "Critical":
    session "Stop deployment"
  option "Minor":
    session "Log issues"
"""
    result = vm.run(source, provider)
    assert tasks(provider) == ["Analyze", "Optimize", "Log issues"]
    kinds = [(d["kind"], d["verdict"], d["reason"]) for d in vm.events(result, "decision")]
    assert kinds == [
        ("condition", False, "scripted"),
        ("condition", True, "slow loop"),
        ("choice", "Minor", "small"),
    ]
    state = (result.run_dir / "state.md").read_text()
    assert "**the code has performance issues** → true (slow loop)" in state
    assert "choice **the severity of issues** → 'Minor' (small)" in state
    # The evaluator sees the earlier outputs as context.
    assert "### analysis" in provider.sent("^Condition: the code has security")[0].last_user_text()


def test_judgment_reasks_once_then_fails_with_location(vm: Any) -> None:
    provider = vm.spy(
        [
            {"match": "^Your reply could not be read.*\n*.*Condition: flaky", "answer": "true"},
            {"match": "^Condition: flaky", "answer": "I am not sure at all"},
            {"match": "^Your reply could not be read", "answer": "still no idea"},
            {"match": "^Condition: hopeless", "answer": "???"},
        ]
    )
    source = """if **flaky**:
  session "Went ahead"
if **hopeless**:
  session "Never"
"""
    result = vm.run(source, provider)
    assert "Went ahead" in tasks(provider)
    assert result.status == "failed"
    assert "main.prose:3:4" in (result.error or "") and "hopeless" in (result.error or "")
    reask = provider.requests[1]
    assert [m.role for m in reask.messages] == ["user", "assistant", "user"]
    assert reask.model == "haiku"


def test_choice_accepts_option_number(vm: Any) -> None:
    provider = vm.spy([{"match": "^Choice:", "answer": '{"option": 2, "reason": "n"}'}])
    source = (
        'choice **pick**:\n  option "A":\n    session "Do A"\n  option "B":\n    session "Do B"\n'
    )
    vm.run(source, provider)
    assert tasks(provider) == ["Do B"]


def test_evaluator_model_is_configurable(vm: Any) -> None:
    from openprose.vm.runner import VMConfig

    provider = vm.spy(vm.verdicts(("Condition: x", True)))
    vm.run('if **x**:\n  session "y"\n', provider, config=VMConfig(evaluator_model="judge-1"))
    assert provider.requests[0].model == "judge-1"


def test_judgments_send_the_shape_of_their_answer_as_a_response_schema(vm: Any) -> None:
    import jsonschema

    rules = vm.verdicts(("Condition: ready", True)) + [
        {"match": "^Choice:", "answer": '{"option": "Later", "reason": "r"}'}
    ]
    provider = vm.spy(rules)
    source = """if **ready**:
  session "Go"
choice **when**:
  option "Now":
    session "A"
  option "Later":
    session "B"
"""
    vm.run(source, provider)
    condition = provider.sent("^Condition: ready")[0].response_schema
    choice = provider.sent("^Choice:")[0].response_schema
    assert condition is not None and choice is not None
    assert choice["properties"]["option"]["enum"] == ["Now", "Later"]
    jsonschema.validate({"verdict": False, "reason": "no"}, condition)
    jsonschema.validate({"option": "Now", "reason": "soon"}, choice)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"option": "Never", "reason": "x"}, choice)
    # Sessions are free text: no schema.
    sessions = [r for r in provider.requests if not r.last_user_text().startswith("C")]
    assert len(sessions) == 2 and all(r.response_schema is None for r in sessions)
    journal = [e for e in vm.events_in(next(vm.project.glob(".prose/runs/*"))) if e.get("request")]
    assert any(e["request"].get("response_schema") == choice for e in journal)

"""Sessions, agents, context, variables, interpolation, blocks and arrows."""

from __future__ import annotations

from typing import Any

from openprose.vm.runner import VMConfig


def test_agent_prompt_becomes_system_and_session_model_overrides(vm: Any) -> None:
    provider = vm.spy()
    source = """agent researcher:
  model: sonnet
  prompt: "You are a research assistant"

session: researcher
  prompt: "Research quantum computing"
  model: opus
session: researcher
session "plain"
"""
    result = vm.run(source, provider)
    assert result.status == "succeeded"
    first, second, third = provider.requests
    assert first.system == "You are a research assistant"
    assert first.last_user_text().startswith("Research quantum computing")
    assert first.model == "opus"
    # Without a session prompt the agent's prompt is the task itself.
    assert second.system is None and second.model == "sonnet"
    assert second.last_user_text().startswith("You are a research assistant")
    assert third.model == VMConfig().default_model and third.system is None


def test_context_forms(vm: Any) -> None:
    provider = vm.spy(
        [{"match": "^Research", "answer": "R-OUT"}, {"match": "^Analyze", "answer": "A-OUT"}]
    )
    source = """let research = session "Research it"
let analysis = session "Analyze it"
session "Single"
  context: research
session "Array"
  context: [research, analysis]
session "Object"
  context: { research, analysis }
session "Fresh"
  context: []
session "Default"
"""
    vm.run(source, provider)
    by_task = {p.split("\n", 1)[0]: p for p in provider.prompts()}
    assert "### research\nR-OUT" in by_task["Single"] and "A-OUT" not in by_task["Single"]
    assert "### research\nR-OUT" in by_task["Array"] and "### analysis\nA-OUT" in by_task["Array"]
    assert "### analysis\nA-OUT" in by_task["Object"]
    assert by_task["Fresh"] == "Fresh"
    # Without `context:` a session sees the earlier outputs of its thread, oldest first.
    default = by_task["Default"]
    assert default.index("R-OUT") < default.index("A-OUT")


def test_let_assign_const_and_interpolation(vm: Any) -> None:
    provider = vm.spy([{"match": "^Draft", "answer": "v1"}, {"match": "^Improve", "answer": "v2"}])
    source = """input topic: "what to write about"
let draft = session "Draft about {topic}"
draft = session "Improve {draft}"
  context: draft
const label = "final"
output result = session "Publish {draft} as {label}"
"""
    result = vm.run(source, provider, inputs={"topic": "owls"})
    assert provider.prompts()[0].startswith("Draft about owls")
    assert provider.prompts()[1].startswith("Improve v1")
    assert provider.prompts()[2].startswith("Publish v2 as final")
    assert result.outputs == {"result": "ok"}


def test_missing_and_unknown_inputs_are_errors(vm: Any) -> None:
    source = 'input topic: "t"\nsession "x {topic}"\n'
    missing = vm.run(source, vm.spy())
    assert missing.status == "failed" and "E026" in (missing.error or "")
    assert "main.prose:1:1" in (missing.error or "")
    unknown = vm.run(source, vm.spy(), inputs={"topic": "a", "other": "b"})
    assert unknown.status == "failed" and "E027" in (unknown.error or "")


def test_blocks_hoisting_params_and_arrow(vm: Any) -> None:
    provider = vm.spy()
    source = """do review("quantum", "strict")
block review(topic, mode):
  session "Review {topic} in {mode} mode"
let flow = session "Plan" -> session "Execute" -> session "Check"
let result = do:
  session "Gather"
  session "Process"
"""
    result = vm.run(source, provider)
    assert result.status == "succeeded"
    assert [p.split("\n", 1)[0] for p in provider.prompts()] == [
        "Review quantum in strict mode",
        "Plan",
        "Execute",
        "Check",
        "Gather",
        "Process",
    ]
    state = (result.run_dir / "state.md").read_text()
    assert "1→ block:review#1" in state and "1→ #1 done" in state


def test_recursion_depth_limit(vm: Any) -> None:
    source = """block forever(n):
  do forever(n)
do forever(1)
"""
    result = vm.run(source, vm.spy(), config=VMConfig(max_depth=7))
    assert result.status == "failed"
    assert "RecursionLimitExceeded" in (result.error or "") and "max depth 7" in (
        result.error or ""
    )
    assert "main.prose:2:3" in (result.error or "")


def test_recursive_calls_get_distinct_steps(vm: Any) -> None:
    provider = vm.spy()
    source = """block countdown(n):
  session "Level {n}"
  repeat 1:
    do inner(n)
block inner(n):
  session "Inner {n}"
do countdown("a")
do countdown("b")
"""
    result = vm.run(source, provider)
    from openprose.vm.journal import read_journal

    steps = [
        e["step"]
        for e in read_journal(result.run_dir / "journal.jsonl")
        if e["ev"] == "session_finished"
    ]
    assert len(steps) == 4 and len(set(steps)) == 4
    assert "3>countdown.1" in steps and "4>countdown.2[0].1>inner.1" in steps


def test_program_failure_names_location(vm: Any) -> None:
    result = vm.run('session "a"\nthrow "Precondition not met"\n', vm.spy())
    assert result.status == "failed"
    assert result.error is not None and "main.prose:2:1" in result.error
    assert "Precondition not met" in result.error


def test_context_budget_trims_with_a_note(vm: Any) -> None:
    provider = vm.spy([{"match": "^Big", "answer": "x" * 5000}])
    source = 'let big = session "Big"\nsession "Use"\n  context: big\n'
    result = vm.run(source, provider, config=VMConfig(context_budget=1000))
    use = provider.prompts()[1]
    assert "4000 characters of big omitted" in use
    from openprose.vm.journal import read_journal

    trims = [
        e for e in read_journal(result.run_dir / "journal.jsonl") if e["ev"] == "context_trimmed"
    ]
    assert trims and trims[0]["omitted_chars"] == 4000
    assert "context:trimmed big" in (result.run_dir / "state.md").read_text()


def test_flat_names_outlive_their_body_and_outputs_follow_reassignment(vm: Any) -> None:
    echo = {"match": "^Inner", "answer": lambda r: "in-" + r.last_user_text().split()[1]}
    provider = vm.spy([*vm.verdicts(("Condition: always", True)), echo])
    source = """output best = "none"
for x in ["a", "b"]:
  let inner = session "Inner {x}"
  best = inner
if **always**:
  let late = session "Late"
session "After {inner} {late}"
let shared = ["p", "q", "r"] | pmap:
  let mine = session "Inner {item}"
  session "Echo {mine}"
"""
    result = vm.run(source, provider)
    assert result.status == "succeeded", result.error
    assert provider.sent("^After")[0].last_user_text().startswith("After in-b ok")
    # Concurrent pipeline items each keep their own `mine`.
    echoes = sorted(p.split("\n")[0] for p in provider.prompts() if p.startswith("Echo"))
    assert echoes == ["Echo in-p", "Echo in-q", "Echo in-r"]
    assert result.outputs == {"best": "in-b"}


def test_final_result_without_declared_outputs(vm: Any) -> None:
    # prose.md: "Return outputs to caller (or final result if no outputs declared)".
    provider = vm.spy([{"match": "^Draft", "answer": "DRAFT"}, {"match": "^Polish", "answer": "DONE"}])
    result = vm.run('session "Draft it"\ndo:\n  session "Polish it"\n', provider)
    assert result.outputs == {} and result.result == "DONE"
    assert result.to_json()["result"] == "DONE"
    declared = vm.run('output final = session "Draft it"\nsession "Polish it"\n', provider)
    assert declared.outputs == {"final": "DRAFT"} and declared.result is None
    assert "result" not in declared.to_json()

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
    assert "RecursionLimitExceeded" in (result.error or "") and "exceeded max_depth 7" in (
        result.error or ""
    )
    assert "main.prose:2:3" in (result.error or "")


def test_a_block_s_own_max_depth_wins(vm: Any) -> None:
    # reference VM: `block process(chunk, depth) (max_depth: 50):` configures one block
    source = """block forever(n) (max_depth: 3):
  session "round {n}"
  do forever(n)
do forever(1)
"""
    provider = vm.spy()
    result = vm.run(source, provider, config=VMConfig(max_depth=50))
    assert result.status == "failed" and "exceeded max_depth 3" in (result.error or "")
    assert len(provider.requests) == 3


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
    from openprose.record.journal import read_journal

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
    # The task ("Use", 3 characters) counts against the budget too.
    assert "4003 characters of big omitted" in use
    from openprose.record.journal import read_journal

    trims = [
        e for e in read_journal(result.run_dir / "journal.jsonl") if e["ev"] == "context_trimmed"
    ]
    assert trims and trims[0]["omitted_chars"] == 4003
    assert "context:trimmed big" in (result.run_dir / "state.md").read_text()


def test_budget_covers_task_system_and_memory(vm: Any) -> None:
    memory = {"match": "^Update your memory", "answer": "M" * 3000}
    provider = vm.spy([memory, {"match": "^Big", "answer": "x" * 3000}])
    source = """agent keeper:
  persist: true
  prompt: "You keep notes"
let big = session "Big"
session: keeper
  prompt: "Note it"
  context: []
resume: keeper
  prompt: "Recall"
  context: big
session "{big}"
"""
    result = vm.run(source, provider, config=VMConfig(context_budget=1000))
    assert result.status == "succeeded", result.error
    recall = provider.sent("^Recall")[0]
    # 1000 - len("Recall") - len("You keep notes") = 980 characters for memory and context,
    # shared evenly: each is cut to 490 with a note (memory.md ends with a newline: 3001).
    text = recall.last_user_text()
    assert "2511 characters of memory omitted" in text and "2510 characters of big omitted" in text
    trimmed = [
        (e["label"], e["omitted_chars"])
        for e in vm.events(result, "context_trimmed")
        if e["step"] == "4"
    ]
    assert trimmed == [("memory", 2511), ("big", 2510)]
    # A task alone over the budget is sent whole (its context cut to the notes), recorded.
    assert provider.sent("^xxx")[0].last_user_text().startswith("x" * 3000)
    over = vm.events(result, "prompt_over_budget")
    assert [(e["step"], e["task_chars"]) for e in over] == [("5", 3000)]
    assert "5→ prompt:over budget by 2000 chars" in (result.run_dir / "state.md").read_text()


def test_default_context_window_notes_what_it_leaves_out(vm: Any) -> None:
    idea = {"match": "^Idea", "answer": lambda r: "idea-" + r.last_user_text().split()[1]}
    provider = vm.spy([idea, *vm.verdicts(("^Condition: the ideas suffice", True))])
    source = """repeat 5 as i:
  session "Idea {i}"
session "Pick the best idea above"
if **the ideas suffice**:
  session "Done"
session "Fresh"
  context: []
"""
    result = vm.run(source, provider, config=VMConfig(history_items=3))
    assert result.status == "succeeded"
    pick = provider.sent("^Pick")[0].last_user_text()
    # The three most recent outputs, after a note counting the two left out.
    assert "2 earlier output(s) of this thread are not shown" in pick
    assert "idea-0" not in pick and "idea-1" not in pick
    assert pick.index("not shown") < pick.index("idea-2") < pick.index("idea-4")
    condition = provider.sent("^Condition: the ideas suffice")[0].last_user_text()
    assert "3 earlier output(s) of this thread are not shown" in condition
    assert "not shown" not in provider.sent("^Fresh")[0].last_user_text()
    windows = [(e["step"], e["omitted_items"]) for e in vm.events(result, "context_windowed")]
    # The fifth idea already saw four earlier ones; judgments add no output of their own.
    assert windows == [("1[4].1", 1), ("2", 2), ("3?c1", 3), ("3/c1.1", 3)]
    state = (result.run_dir / "state.md").read_text()
    assert "2→ context:window -2 earlier outputs" in state
    small = vm.run('session "A"\nsession "B"\n', vm.spy(), config=VMConfig(history_items=3))
    assert vm.events(small, "context_windowed") == []


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
    provider = vm.spy(
        [{"match": "^Draft", "answer": "DRAFT"}, {"match": "^Polish", "answer": "DONE"}]
    )
    result = vm.run('session "Draft it"\ndo:\n  session "Polish it"\n', provider)
    assert result.outputs == {} and result.result == "DONE"
    assert result.to_json()["result"] == "DONE"
    declared = vm.run('output final = session "Draft it"\nsession "Polish it"\n', provider)
    assert declared.outputs == {"final": "DRAFT"} and declared.result is None
    assert "result" not in declared.to_json()


def test_inline_string_with_a_prompt_property_is_the_title(vm: Any) -> None:
    # issue 20 item 1: `session "Title"` + `prompt:` is in the grammar; the property is what
    # the model is asked, the inline string titles the session in the run's state.
    provider = vm.spy()
    source = 'session "Check X"\n  prompt: """\nLook at X carefully.\n"""\n'
    result = vm.run(source, provider)
    assert result.status == "succeeded"
    (request,) = provider.requests
    assert request.last_user_text().startswith("Look at X carefully.")
    assert "Check X" not in request.last_user_text()
    state = (result.run_dir / "state.md").read_text(encoding="utf-8")
    assert "title: Check X" in state


def test_named_try_is_a_parallel_branch(vm: Any) -> None:
    # issue 20 item 2: `name = try:` inside `parallel:` names the branch's result
    provider = vm.spy(
        [
            {"match": "^B", "answer": "x", "failures": ["error"] * 10},
            {"match": "^fallback", "answer": "FB"},
        ]
    )
    source = (
        'parallel:\n  a = session "A"\n  b = try:\n    session "B"\n  catch:\n'
        '    session "fallback"\nsession "Join"\n  context: { a, b }\n'
    )
    result = vm.run(source, provider)
    assert result.status == "succeeded"
    (join,) = provider.sent("^Join")
    assert "### b\nFB" in join.last_user_text()

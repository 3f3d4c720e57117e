"""Runtime conformance: each construct's observable behaviour against the reference's rule
(seed 004 and reference/openprose/prose.md). One test per finding; see docs/decisions.md,
"Conformance (runtime semantics)"."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from openprose.providers import ModelRequest, ModelResponse
from tests.openprose.vm.test_vm_resume import Crash, CrashAfter


def tasks(provider: Any) -> list[str]:
    return [
        p.split("\n", 1)[0]
        for p in provider.prompts()
        if not p.startswith(("Condition:", "Choice:", "Filter", "Your reply", "Update your memory"))
    ]


class CrashOn:
    """Answers like `inner` until a prompt matches `pattern`; then the process 'dies'."""

    name = "scripted"

    def __init__(self, inner: Any, pattern: str) -> None:
        self.inner, self.pattern = inner, pattern

    async def complete(self, request: ModelRequest) -> ModelResponse:
        import re

        if re.search(self.pattern, request.last_user_text()):
            raise Crash
        response: ModelResponse = await self.inner.complete(request)
        return response

    async def aclose(self) -> None:
        return None


def crash_then_resume(vm: Any, source: str, first: Any, crash_on: str, second: Any) -> Any:
    runs = vm.project / ".prose" / "runs"
    before = set(runs.iterdir()) if runs.exists() else set()
    with pytest.raises(Crash):
        vm.run(source, CrashOn(first, crash_on))
    (run_dir,) = set(runs.iterdir()) - before
    return vm.resume(run_dir, second)


# --- parallel: join strategies -------------------------------------------------------------


@pytest.mark.parametrize("form", ["block", "for"])
def test_any_count_above_the_branches_waits_for_all_of_them(vm: Any, form: str) -> None:
    # Seed, Parallel Blocks: "Count exceeds branches" is a warning (W143), so the program
    # runs; both forms then wait for every branch (it used to fail the block form only).
    source = (
        'let got = parallel ("any", count: 3):\n  session "A"\n  session "B"\n'
        if form == "block"
        else 'let got = parallel ("any", count: 3) for x in ["A", "B"]:\n  session "{x}"\n'
    )
    provider = vm.spy([{"match": "^A", "answer": "a"}, {"match": "^B", "answer": "b"}])
    result = vm.run(source + 'output seen = session "See {got}"\n', provider)
    assert result.status == "succeeded", result.error
    assert sorted(tasks(provider)[:2]) == ["A", "B"]
    assert result.outputs["seen"] == "ok"
    assert provider.sent("^See")[0].last_user_text().startswith("See [1] a\n\n[2] b")


# --- blocks ----------------------------------------------------------------------------------


def test_recursion_limit_reads_as_the_reference_prints_it_and_can_be_caught(vm: Any) -> None:
    # prose.md, Recursion Depth Limits: "[Error] RecursionLimitExceeded: block 'process'
    # exceeded max_depth 50". It is a program error, so `try`/`catch` sees it.
    source = """block process(chunk) (max_depth: 2):
  session "Split {chunk}"
  do process(chunk)
try:
  do process("data")
catch as err:
  session "Recover from {err.message}"
"""
    provider = vm.spy()
    result = vm.run(source, provider)
    assert result.status == "succeeded", result.error
    recovered = "Recover from RecursionLimitExceeded: block 'process' exceeded max_depth 2"
    assert tasks(provider) == ["Split data"] * 2 + [recovered]


# --- persistent agents -----------------------------------------------------------------------

MEMORY_ECHO = {
    # The new memory names what the update saw as the memory so far, and the task.
    "match": "^Update your memory",
    "answer": lambda r: (
        "had["
        + r.last_user_text().split("## Memory so far\n")[1].split("\n")[0]
        + "] then "
        + r.last_user_text().split("## This session's task\n")[1].split("\n")[0]
    ),
}


def test_session_on_a_persistent_agent_starts_its_memory_fresh(vm: Any) -> None:
    # Seed, Resume Statement: `session:` "Ignores existing memory, starts fresh"; prose.md:
    # "First invocation OR re-initialize (starts fresh)"; `resume:` "Loads memory, continues".
    agent = 'agent captain:\n  persist: project\n  prompt: "You coordinate"\n'
    earlier = vm.run(agent + 'session: captain\n  prompt: "Old plan"\n', vm.spy([MEMORY_ECHO]))
    assert earlier.status == "succeeded", earlier.error
    memory = vm.project / ".prose" / "agents" / "captain" / "memory.md"
    assert memory.read_text().strip() == "had[(empty)] then Old plan"

    provider = vm.spy([MEMORY_ECHO])
    source = agent + 'session: captain\n  prompt: "New plan"\nresume: captain\n  prompt: "Step 1"\n'
    result = vm.run(source, provider)
    assert result.status == "succeeded", result.error
    assert "## Your memory" not in provider.sent("^New plan")[0].last_user_text()
    # The re-initialized memory holds only the new session; `resume:` builds on it.
    assert (
        "## Your memory\nhad[(empty)] then New plan" in provider.sent("^Step 1")[0].last_user_text()
    )
    assert memory.read_text().strip() == "had[had[(empty)] then New plan] then Step 1"


# --- variables ---------------------------------------------------------------------------------


def test_an_assignment_in_another_branch_binds_the_flat_variable(vm: Any) -> None:
    # Seed, Flat Namespace: one name is one variable, and "Variables in different
    # if/elif/else branches with same name" collide; so a program declares it in one branch
    # and assigns it in the others. The checker warns (W156) and the program runs; the
    # assignment used to fail with "undefined variable" when the `let` branch was not taken.
    source = """if **the first holds**:
  let verdict = session "One"
  output best = session "Best one"
else:
  verdict = session "Two"
  best = session "Best two"
session "Use {verdict}"
"""
    provider = vm.spy([*vm.verdicts(("Condition:", False)), {"match": "^Two", "answer": "two"}])
    result = vm.run(source, provider)
    assert result.status == "succeeded", result.error
    assert tasks(provider) == ["Two", "Best two", "Use two"]
    assert result.outputs == {"best": "ok"}  # `output` is declared in the branch not taken
    assert "two" in (result.run_dir / "bindings" / "verdict.md").read_text()
    # A name the program binds nowhere is still an error.
    broken = vm.run('nothing = session "x"\n', vm.spy())
    assert broken.status == "failed" and "undefined variable 'nothing'" in (broken.error or "")


def test_reassigning_an_output_in_a_block_updates_the_output(vm: Any) -> None:
    # Seed, Output Bindings: `output` "works like `let`", so reassignment updates it. In a
    # block's frame it did not: the output kept its first value. `prose check --fix`'s
    # rewrite of an output declared in each branch (E024) relies on it.
    source = """block triage(report):
  output action = ""
  choice **how urgent the report is**:
    option "Now":
      action = session "Page the on-call engineer"
    option "Later":
      action = session "File a ticket"
do triage("disk full")
output total = "none"
total = session "Count the tickets"
"""
    provider = vm.spy(
        [
            {"match": "^Choice:", "answer": "Later"},
            {"match": "^File", "answer": "TICKET-7"},
            {"match": "^Count", "answer": "3"},
        ]
    )
    result = vm.run(source, provider)
    assert result.status == "succeeded", result.error
    assert result.outputs == {"action": "TICKET-7", "total": "3"}
    assert "kind: output" in (result.run_dir / "bindings" / "action__1.md").read_text()


@pytest.mark.parametrize("body", ["", '  let x = "same"\n', '  for t in []:\n    session "t"\n'])
def test_an_endless_loop_that_asks_nothing_stops_with_an_error(vm: Any, body: str) -> None:
    # Seed, Unbounded Loops: `loop:` without a condition or max "runs indefinitely (warning
    # issued)", stopped by the runtime's safeguards. The session budget is one, but a body
    # that asks no model anything never reaches it: the run spun forever. Now an error
    # (a program error: `try`/`catch` sees it).
    source = "try:\n  loop:\n" + "".join("  " + line + "\n" for line in body.splitlines())
    source += 'catch as err:\n  session "Report {err}"\n'
    provider = vm.spy()
    result = vm.run(source, provider)
    assert result.status == "succeeded", result.error
    (report,) = provider.sent("^Report")
    assert "would repeat forever" in report.last_user_text()
    # A body that asks a model something is stopped by the session budget, as before.
    ticking = vm.run('loop:\n  session "tick"\n', vm.spy(), config=replace(vm.FAST, max_sessions=3))
    assert ticking.status == "stopped"


def test_names_bound_in_a_parallel_for_stay_visible_after_it_as_after_a_for(vm: Any) -> None:
    # Seed, Flat Namespace: a name bound in a body is the program's one variable of that
    # name, and `parallel for` "is equivalent to" the sequential fan-out. After a `for` the
    # name holds the last iteration's value; after a `parallel for` it was "unbound: the
    # statement that binds it did not run" — although it ran.
    for keyword in ("for", "parallel for"):
        # In the parallel form "c" finishes first: the last *item* still wins.
        provider = vm.spy(
            [
                {"match": "^Do a", "answer": "Ra", "latency_ms": 40},
                {"match": "^Do b", "answer": "Rb", "latency_ms": 40},
                {"match": "^Do c", "answer": "Rc"},
                {"match": "^Out", "answer": lambda r: "O" + r.last_user_text().split()[1]},
            ]
        )
        source = f"""{keyword} t, i in ["a", "b", "c"]:
  let r = session "Do {{t}}"
  output o = session "Out {{t}}"
session "After {{r}}"
"""
        result = vm.run(source, provider)
        assert result.status == "succeeded", result.error
        assert result.outputs == {"o": "Oc"}, keyword
        assert provider.prompts()[-1].startswith("After Rc"), keyword
        assert "Rc" in (result.run_dir / "bindings" / "r.md").read_text()
        assert not vm.events(result, "unbound_placeholder")


# --- errors, and resuming after them -----------------------------------------------------------

TRY_CATCH = """try:
  session "Risky"
catch as err:
  session "Fallback after {err.message}"
session "After"
"""


def test_a_resumed_run_keeps_the_catch_path_it_took(vm: Any) -> None:
    # Seed, Try/Catch: "Try fails: try body (until failure) -> catch body -> finally body".
    # A resume serves finished work from the journal; a failure the program handled is
    # finished work too: asking again (and now succeeding) would take the other path while
    # the rest of the run is served answers given after the catch.
    first = vm.spy([{"match": "^Risky", "answer": "fine", "failures": ["error"]}])
    healthy = vm.spy([{"match": "^Risky", "answer": "fine"}])
    result = crash_then_resume(vm, TRY_CATCH, first, "^After", healthy)
    assert result.status == "succeeded", result.error
    assert tasks(healthy) == ["After"]  # Risky and Fallback were not asked again
    assert "### anon_002\nok" in healthy.sent("^After")[0].last_user_text()  # the fallback's
    assert [e["step"] for e in vm.events(result, "failure_served")] == ["1/try.1"]
    assert len(vm.events(result, "failure_handled")) == 2  # once per attempt


def test_resuming_a_run_that_failed_in_its_catch_asks_the_failure_again(vm: Any) -> None:
    # Seed, Throw: "`throw` inside catch: re-raise to outer handler"; unhandled, the program
    # fails. The failure was not handled in the end, so a resume retries it.
    source = TRY_CATCH.replace('session "Fallback after {err.message}"', "throw")
    first = vm.spy([{"match": "^Risky", "answer": "fine", "failures": ["error"]}])
    failed = vm.run(source, first)
    assert failed.status == "failed" and "injected error" in (failed.error or "")
    healthy = vm.spy([{"match": "^Risky", "answer": "fine"}])
    resumed = vm.resume(failed.run_dir, healthy)
    assert resumed.status == "succeeded", resumed.error
    assert tasks(healthy) == ["Risky", "After"]


@pytest.mark.parametrize("on_fail", ["continue", "ignore"])
def test_a_resumed_run_keeps_the_failures_its_parallel_block_absorbed(
    vm: Any, on_fail: str
) -> None:
    # Seed, Failure Policies: "continue: let all branches complete, then report all
    # failures"; "ignore: ignore all failures". The resumed run sees the same failure.
    source = f"""parallel (on-fail: "{on_fail}"):
  a = session "Branch A"
  b = session "Branch B"
let each = parallel (on-fail: "{on_fail}") for x in ["1", "2"]:
  session "Item {{x}}"
session "After"
  context: [b, each]
"""
    flaky = [
        {"match": "^Branch B", "answer": "b", "failures": ["error"]},
        {"match": "^Item 2", "answer": "i2", "failures": ["error"]},
    ]
    reference = vm.run(source, vm.spy(flaky))
    assert reference.status == "succeeded", reference.error
    healthy = vm.spy()
    result = crash_then_resume(vm, source, vm.spy(flaky), "^After", healthy)
    assert result.status == "succeeded", result.error
    assert tasks(healthy) == ["After"]
    expected = vm.spy(flaky)
    vm.run(source, expected)  # a third run, uninterrupted, for the prompt After should get
    assert healthy.sent("^After")[0].last_user_text() == expected.sent("^After")[0].last_user_text()
    assert "injected error" in healthy.sent("^After")[0].last_user_text()


# --- resume, construct by construct --------------------------------------------------------------

EVERY_CONSTRUCT = """agent scribe:
  model: haiku
  prompt: "You write"
block refine(text) (max_depth: 4):
  let refined = session "Refine {text}"
let topics = ["alpha", "beta", "gamma"]
for t, i in topics:
  do refine(t)
repeat 2 as k:
  session: scribe
    prompt: "Note {k}"
if **the notes are good**:
  let verdict = session "Good path"
elif **the notes are usable**:
  verdict = session "Usable path"
else:
  verdict = session "Bad path"
choice **the tone**:
  option "Formal":
    session "Formal"
  option "Casual":
    session "Casual"
let kept = topics
  | filter:
      session "Keep {item}?"
  | map:
      session "Expand {item}"
  | reduce(acc, x):
      session "Merge"
        context: [acc, x]
try:
  session "Flaky call"
    retry: 1
catch as err:
  session "Recover {err.message}"
loop until **enough** (max: 3) as round:
  session "Round {round}"
output final = session "Final {verdict}"
  context: [kept, verdict]
"""


def every_construct_rules() -> list[dict[str, Any]]:
    def verdict(r: ModelRequest) -> str:
        text = r.last_user_text()
        holds = "notes are usable" in text or ("enough" in text and "Round 1" in text)
        return f'{{"verdict": {str(holds).lower()}, "reason": "r"}}'

    return [
        {"match": "^Condition:", "answer": verdict},
        {"match": "^Choice:", "answer": '{"option": "Casual", "reason": "r"}'},
        {"match": r"^Keep beta", "answer": "no"},
        {"match": r"^Keep", "answer": "yes"},
        {"match": "^Flaky", "answer": "never", "failures": ["error", "error"]},
        {"match": "^Update your memory", "answer": "m"},
        {"match": "", "answer": lambda r: "<" + r.last_user_text().split("\n")[0] + ">"},
    ]


def test_the_reference_program_runs_every_construct_in_order(vm: Any) -> None:
    provider = vm.spy(every_construct_rules())
    result = vm.run(EVERY_CONSTRUCT, provider)
    assert result.status == "succeeded", result.error
    assert tasks(provider) == [
        "Refine alpha",
        "Refine beta",
        "Refine gamma",
        "Note 0",
        "Note 1",
        "Usable path",  # if false, elif true: the else is skipped
        "Casual",
        "Keep alpha?",
        "Keep beta?",
        "Keep gamma?",
        "Expand alpha",
        "Expand gamma",
        "Merge",
        "Flaky call",
        "Flaky call",  # retry: 1 = one more attempt
        "Recover scripted: injected error failure for rule '^Flaky'",
        "Round 0",
        "Round 1",  # `until` is checked before each round: holds once Round 1 is seen
        "Final <Usable path>",
    ]
    assert result.outputs["final"] == "<Final <Usable path>>"
    bindings = {p.name for p in (result.run_dir / "bindings").iterdir()}
    # Block-local bindings carry their execution id (prose.md, `result__43.md`).
    assert {"refined__1.md", "refined__2.md", "refined__3.md", "kept.md"} <= bindings
    final = provider.sent("^Final")[0].last_user_text()
    assert "### kept\n<Merge>" in final


@pytest.mark.parametrize("crash_after", [1, 5, 7, 9, 13, 16, 17, 19, 22])
def test_a_crash_anywhere_resumes_to_the_same_run(vm: Any, crash_after: int) -> None:
    reference = vm.run(EVERY_CONSTRUCT, vm.spy(every_construct_rules()))
    runs = vm.project / ".prose" / "runs"
    before = set(runs.iterdir())
    with pytest.raises(Crash):
        vm.run(EVERY_CONSTRUCT, CrashAfter(vm.spy(every_construct_rules()), crash_after))
    (run_dir,) = set(runs.iterdir()) - before
    again = vm.spy(every_construct_rules())
    resumed = vm.resume(run_dir, again)
    assert resumed.status == "succeeded", resumed.error
    assert resumed.outputs == reference.outputs
    served = resumed.usage["requests_served_from_journal"]
    assert served + resumed.usage["requests_sent"] == reference.usage["requests_sent"] + (
        # A failed attempt is not a finished call; a handled one is served as a failure.
        len(vm.events_in(run_dir, "failure_served"))
    )
    for name in ("kept.md", "verdict.md", "final.md", "refined__3.md"):
        assert (run_dir / "bindings" / name).read_text() == (
            reference.run_dir / "bindings" / name
        ).read_text()


def test_prose_show_of_a_resumed_catch_lists_the_error_once(
    vm: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from openprose.cli import main

    first = vm.spy([{"match": "^Risky", "answer": "fine", "failures": ["error"]}])
    result = crash_then_resume(vm, TRY_CATCH, first, "^After", vm.spy())
    capsys.readouterr()
    assert main(["show", str(result.run_dir)]) == 0
    shown = capsys.readouterr().out
    assert "1/catch.1" in shown  # the fallback ran (in the first attempt)
    assert "errors (2):" in shown  # the failed call and its catch, once each
    assert shown.count("main.prose:2:3: scripted: injected error") == 1

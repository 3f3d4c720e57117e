"""Runtime conformance: each construct's observable behaviour against the reference's rule
(seed 004 and reference/openprose/prose.md). One test per finding; see docs/decisions.md,
"Conformance (runtime semantics)"."""

from __future__ import annotations

from typing import Any

import pytest

from openprose.providers import ModelRequest, ModelResponse


def tasks(provider: Any) -> list[str]:
    return [
        p.split("\n", 1)[0]
        for p in provider.prompts()
        if not p.startswith(("Condition:", "Choice:", "Filter", "Your reply", "Update your memory"))
    ]


class Crash(BaseException):
    """Stands in for the process dying mid-run."""


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
    assert tasks(provider) == [
        "Split data",
        "Split data",
        "Recover from RecursionLimitExceeded: block 'process' exceeded max_depth 2",
    ]


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

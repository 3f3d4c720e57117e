"""parallel: join strategies, failure policies, real concurrency and cancellation."""

from __future__ import annotations

from typing import Any


def slow(
    match: str, seconds: float, answer: str = "done", failures: tuple[str, ...] = ()
) -> dict[str, Any]:
    return {
        "match": match,
        "answer": answer,
        "latency_ms": seconds * 1000,
        "failures": list(failures),
    }


def test_parallel_all_runs_concurrently_and_binds_names(vm: Any) -> None:
    provider = vm.spy([slow("^Task", 0.05)])
    source = """parallel:
  a = session "Task A"
  b = session "Task B"
  c = session "Task C"
let both = parallel:
  session "Task D"
  session "Task E"
session "Combine"
  context: { a, b, c }
"""
    result = vm.run(source, provider)
    assert result.status == "succeeded"
    assert provider.peak == 3
    combine = provider.sent("^Combine")[0].last_user_text()
    assert "### a\ndone" in combine and "### c\ndone" in combine
    state = (result.run_dir / "state.md").read_text()
    assert "1→ ∥start a,b,c" in state and "1|2→ b ✓" in state and "1→ ∥done" in state


def test_parallel_value_is_named_dict_or_list(vm: Any) -> None:
    provider = vm.spy()
    source = """let named = parallel:
  x = session "one"
  session "two"
let plain = parallel:
  session "three"
  session "four"
output shapes = session "Report"
  context: [named, plain]
"""
    assert vm.run(source, provider).status == "succeeded"
    report = provider.sent("^Report")[0].last_user_text()
    assert (
        "x:\nok" in report
        and "branch_2:\nok" in report
        and "[1] ok" in report
        and "[2] ok" in report
    )


def test_first_cancels_losers(vm: Any) -> None:
    provider = vm.spy([slow("^Fast", 0.01, "fast answer"), slow("^Slow", 5.0)])
    source = """let winner = parallel ("first"):
  session "Slow approach"
  session "Fast approach"
  session "Slow approach 2"
output w = session "Use"
  context: winner
"""
    result = vm.run(source, provider)
    assert result.status == "succeeded"
    assert provider.cancelled == 2
    assert "### winner\nfast answer" in provider.sent("^Use")[0].last_user_text()
    assert len(vm.events(result, "session_cancelled")) == 2


def test_any_with_count_waits_for_n_successes(vm: Any) -> None:
    provider = vm.spy(
        [
            slow("^A1", 0.01, "one"),
            slow("^A2", 0.02, failures=("error",)),
            slow("^A3", 0.03, "three"),
            slow("^A4", 5.0),
        ]
    )
    source = """let got = parallel ("any", count: 2, on-fail: "ignore"):
  session "A1"
  session "A2"
  session "A3"
  session "A4"
output out = session "Report"
  context: got
"""
    result = vm.run(source, provider)
    assert result.status == "succeeded", result.error
    assert provider.cancelled == 1
    report = provider.sent("^Report")[0].last_user_text()
    assert "[1] one" in report and "[2] three" in report


def test_fail_fast_cancels_siblings_and_fails(vm: Any) -> None:
    provider = vm.spy([slow("^Broken", 0.01, failures=("error",)), slow("^Long", 5.0)])
    source = """parallel:
  session "Long task"
  session "Broken task"
session "After"
"""
    result = vm.run(source, provider)
    assert result.status == "failed"
    assert "main.prose:3:3" in (result.error or "")
    assert provider.cancelled == 1
    assert provider.sent("^After") == []


def test_continue_keeps_errors_as_values(vm: Any) -> None:
    provider = vm.spy([slow("^Broken", 0.0, failures=("error",))])
    source = """parallel (on-fail: "continue"):
  good = session "Fine task"
  bad = session "Broken task"
session "Process results, including failures"
  context: { good, bad }
"""
    result = vm.run(source, provider)
    assert result.status == "succeeded"
    text = provider.sent("^Process")[0].last_user_text()
    assert "### good\nok" in text and "### bad\nsession error at" in text
    # The failed branch's binding file holds its error value, like any named result.
    bad = (result.run_dir / "bindings" / "bad.md").read_text()
    assert bad.startswith("# bad\n") and "injected error failure" in bad.split("---\n", 1)[1]


def test_ignore_always_succeeds(vm: Any) -> None:
    provider = vm.spy([slow("^Opt", 0.0, failures=("error",))])
    source = """parallel (on-fail: "ignore"):
  session "Opt 1"
parallel ("first", on-fail: "ignore"):
  session "Opt 2"
session "Continue regardless"
"""
    result = vm.run(source, provider)
    assert result.status == "succeeded"
    assert provider.sent("^Continue")


def test_any_fails_when_too_few_succeed(vm: Any) -> None:
    provider = vm.spy([slow("^Try", 0.0, failures=("error",))])
    result = vm.run('parallel ("any", on-fail: "continue"):\n  session "Try 1"\n', provider)
    assert result.status == "failed" and "needed 1" in (result.error or "")


def test_parallel_for_and_pmap_bound_concurrency(vm: Any) -> None:
    from openprose.vm.runner import VMConfig

    provider = vm.spy([slow("^Item", 0.01)])
    source = """let xs = ["a", "b", "c", "d", "e", "f"]
parallel for x, i in xs:
  session "Item {x} {i}"
let ys = xs | pmap:
  session "Item {item}"
"""
    result = vm.run(source, provider, config=VMConfig(max_concurrency=3))
    assert result.status == "succeeded"
    assert provider.peak == 3
    assert sorted(p.split("\n")[0] for p in provider.prompts()[:6]) == [
        f"Item {x} {i}" for i, x in enumerate("abcdef")
    ]


def test_pmap_fail_fast_cancels_other_items(vm: Any) -> None:
    provider = vm.spy([slow("^Item b", 0.01, failures=("error",)), slow("^Item", 5.0)])
    result = vm.run('let r = ["a", "b", "c"] | pmap:\n  session "Item {item}"\n', provider)
    assert result.status == "failed"
    assert provider.cancelled == 2


def test_cancelled_branch_stops_before_its_next_session(vm: Any) -> None:
    provider = vm.spy([slow("^Quick", 0.01, "won"), slow("^Step one", 0.2)])
    source = """let r = parallel ("first"):
  session "Quick path"
  do:
    session "Step one"
    session "Step two"
"""
    result = vm.run(source, provider)
    assert result.status == "succeeded"
    assert provider.sent("^Step two") == []
    assert provider.cancelled == 1


def test_parallel_for_first_cancels_the_other_items(vm: Any) -> None:
    provider = vm.spy([slow("^Try fast", 0.01, "fast answer"), slow("^Try", 5.0)])
    source = """let ways = ["slow", "fast", "slower"]
let winner = parallel ("first") for way in ways:
  session "Try {way}"
output w = winner
"""
    result = vm.run(source, provider)
    assert result.status == "succeeded", result.error
    assert result.outputs == {"w": "fast answer"}
    assert provider.cancelled == 2


def test_parallel_for_any_with_count_and_its_failures(vm: Any) -> None:
    from openprose.vm.runner import VMConfig

    provider = vm.spy(
        [
            slow("^Item 1", 0.01, "one"),
            slow("^Item 2", 0.02, failures=("error",)),
            slow("^Item 3", 0.03, "three"),
            slow("^Item", 5.0),
        ]
    )
    source = """let got = parallel ("any", count: 2, on-fail: "continue") for i in [1, 2, 3, 4, 5]:
  session "Item {i}"
output got = got
"""
    # Three workers: items 4 and 5 start when 1 and 2 end, and are cancelled once 3 succeeds.
    result = vm.run(source, provider, config=VMConfig(max_concurrency=3))
    assert result.status == "succeeded", result.error
    assert result.outputs == {"got": ["one", "three"]}
    assert provider.cancelled == 2 and len(provider.sent("^Item")) == 5

    def failing() -> Any:
        return vm.spy([slow("^Item", 0.0, failures=("error",) * 5)])

    failed = vm.run(source, failing())
    assert failed.status == "failed" and "needed 2 successful item(s), got 0" in (
        failed.error or ""
    )
    fail_fast = vm.run(source.replace(', on-fail: "continue"', ""), failing())
    assert fail_fast.status == "failed" and "needed" not in (fail_fast.error or "")

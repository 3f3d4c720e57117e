"""try/catch/finally, throw and rethrow, retry with backoff."""

from __future__ import annotations

import time
from typing import Any

from openprose.vm.runner import VMConfig


def tasks(provider: Any) -> list[str]:
    return [p.split("\n", 1)[0] for p in provider.prompts()]


def test_try_catch_finally_order_and_err(vm: Any) -> None:
    provider = vm.spy([{"match": "^Risky", "answer": "x", "failures": ["error"]}])
    source = """try:
  session "Acquire"
  session "Risky op"
  session "Never reached"
catch as err:
  session "Handle {err.message}"
    context: err
finally:
  session "Cleanup"
try:
  session "Fine"
finally:
  session "Cleanup 2"
"""
    result = vm.run(source, provider)
    assert result.status == "succeeded"
    assert [t.split(" ")[0] for t in tasks(provider)] == [
        "Acquire",
        "Risky",
        "Handle",
        "Cleanup",
        "Fine",
        "Cleanup",
    ]
    handle = provider.sent("^Handle")[0].last_user_text()
    assert "injected error failure" in handle and "### err\nsession error at" in handle


def test_finally_runs_when_error_propagates(vm: Any) -> None:
    provider = vm.spy()
    source = """try:
  throw "boom"
finally:
  session "Cleanup"
"""
    result = vm.run(source, provider)
    assert result.status == "failed" and "boom" in (result.error or "")
    assert tasks(provider) == ["Cleanup"]


def test_rethrow_and_nested_handlers(vm: Any) -> None:
    provider = vm.spy()
    source = """try:
  try:
    throw "inner failure"
  catch:
    session "Partial handling"
    throw
catch as outer:
  session "Outer got {outer.message}"
try:
  try:
    throw "contained"
  catch:
    session "Handled inside"
  session "Continue outer"
catch:
  session "Never"
"""
    result = vm.run(source, provider)
    assert result.status == "succeeded"
    assert tasks(provider) == [
        "Partial handling",
        "Outer got inner failure",
        "Handled inside",
        "Continue outer",
    ]


def test_retry_counts_and_success(vm: Any) -> None:
    provider = vm.spy(
        [
            {"match": "^Flaky", "answer": "finally", "failures": ["transient", "error"]},
            {"match": "^Hopeless", "answer": "x", "failures": ["error"] * 10},
        ]
    )
    source = """let a = session "Flaky API"
  retry: 3
try:
  session "Hopeless call"
    retry: 2
    backoff: linear
catch:
  session "Fallback"
"""
    result = vm.run(source, provider)
    assert result.status == "succeeded"
    assert len(provider.sent("^Flaky")) == 3
    assert len(provider.sent("^Hopeless")) == 3  # the first attempt and 2 retries
    assert "retry:1/2" in (result.run_dir / "state.md").read_text()


def test_exponential_backoff_delays(vm: Any) -> None:
    provider = vm.spy([{"match": "^Rate", "answer": "ok", "failures": ["error"] * 3}])
    source = 'session "Rate-limited"\n  retry: 3\n  backoff: exponential\n'
    started = time.perf_counter()
    result = vm.run(source, provider, config=VMConfig(retry_base_delay=0.02))
    elapsed = time.perf_counter() - started
    assert result.status == "succeeded"
    assert elapsed >= 0.02 + 0.04 + 0.08


def test_no_retry_fails_with_location(vm: Any) -> None:
    provider = vm.spy([{"match": "^Bad", "answer": "x", "failures": ["error"]}])
    result = vm.run('session "Fine"\nsession "Bad"\n', provider)
    assert result.status == "failed" and "main.prose:2:1" in (result.error or "")


def test_const_reassignment_is_a_runtime_error_if_unchecked(vm: Any) -> None:
    from openprose.parser import parse_text

    # The checker rejects this program; the interpreter refuses it too.
    parsed = parse_text('const c = "a"\nc = "b"\n', "x.prose")
    if parsed.ok:
        result = vm.run('const c = "a"\nc = "b"\n', vm.spy())
        assert result.status == "failed" and "const" in (result.error or "")


def test_program_retry_waits_at_least_the_servers_retry_after(vm: Any) -> None:
    from openprose.providers import ModelRequest, ModelResponse, TransientProviderError, Usage

    class RateLimited:
        """Refuses the first request with a 429 asking for 0.2 s, then answers."""

        name = "fake"

        def __init__(self) -> None:
            self.times: list[float] = []

        async def complete(self, request: ModelRequest) -> ModelResponse:
            self.times.append(time.perf_counter())
            if len(self.times) == 1:
                raise TransientProviderError("429 slow down", status=429, retry_after=0.2)
            return ModelResponse(text="fine", usage=Usage(1, 1), finish_reason="stop")

        async def aclose(self) -> None:
            return None

    provider = RateLimited()
    result = vm.run('output a = session "Call"\n  retry: 1\n', provider)
    assert result.status == "succeeded" and result.outputs == {"a": "fine"}
    # backoff: none (and a 1 ms base delay) would retry at once; the server asked for 0.2 s.
    assert provider.times[1] - provider.times[0] >= 0.2

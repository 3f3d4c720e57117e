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


class Failing:
    """Answers "ok" once `failures` is used up; until then raises the next error, and counts
    every request (what a server would see)."""

    name = "fake"

    def __init__(self, *failures: Exception, latency: float = 0.0) -> None:
        self.failures = list(failures)
        self.calls: list[str] = []
        self.latency = latency

    async def complete(self, request: Any) -> Any:
        import asyncio

        from openprose.providers import ModelResponse

        self.calls.append(request.last_user_text().split("\n", 1)[0])
        await asyncio.sleep(self.latency)
        if self.failures:
            raise self.failures.pop(0)
        return ModelResponse(text="ok")

    async def aclose(self) -> None:
        return None


def resilient(inner: Failing, *, attempts: int = 5, concurrency: int = 4, **policy: Any) -> Any:
    from openprose.providers import ResilientProvider, RetryPolicy

    return ResilientProvider(
        inner,
        policy=RetryPolicy(max_attempts=attempts, base_delay=0.001, max_delay=0.002, **policy),
        max_concurrency=concurrency,
    )


def test_a_program_retry_owns_the_attempts(vm: Any) -> None:
    from openprose.providers import TransientProviderError

    # retry: 3 -> at most 4 requests reach the server, not 4 x the provider's 5 attempts.
    inner = Failing(*[TransientProviderError("HTTP 503", status=503)] * 30)
    result = vm.run('session "Call"\n  retry: 3\n', resilient(inner, attempts=5))
    assert result.status == "failed" and "HTTP 503" in (result.error or "")
    assert len(inner.calls) == 4
    failed = vm.events(result, "session_failed")
    assert [e["attempt"] for e in failed] == [1, 2, 3, 4]


def test_without_retry_the_providers_transient_policy_applies(vm: Any) -> None:
    from openprose.providers import TransientProviderError

    inner = Failing(*[TransientProviderError("HTTP 503", status=503)] * 2)
    result = vm.run('output a = session "Call"\n', resilient(inner, attempts=5))
    assert result.status == "succeeded" and result.outputs == {"a": "ok"}
    assert len(inner.calls) == 3  # retried by the provider within its five attempts
    assert vm.events(result, "session_failed") == []

    always = Failing(*[TransientProviderError("HTTP 503", status=503)] * 30)
    result = vm.run('session "Call"\n', resilient(always, attempts=5))
    assert result.status == "failed" and len(always.calls) == 5


def test_a_program_retry_waits_for_the_servers_retry_after_through_the_provider(
    vm: Any,
) -> None:
    from openprose.providers import TransientProviderError

    inner = Failing(TransientProviderError("429 slow down", status=429, retry_after=0.2))
    started = time.perf_counter()
    result = vm.run('output a = session "Call"\n  retry: 2\n', resilient(inner))
    assert result.status == "succeeded" and result.outputs == {"a": "ok"}
    assert len(inner.calls) == 2 and time.perf_counter() - started >= 0.2
    assert [e["attempt"] for e in vm.events(result, "session_failed")] == [1]


def test_a_retry_after_beyond_the_limit_ends_the_program_retries(vm: Any) -> None:
    from openprose.providers import TransientProviderError

    # The server asks for 120 s, more than max_retry_after: retrying sooner would only be
    # refused again, and waiting would stall the run, so the session fails now, saying why.
    inner = Failing(*[TransientProviderError("429 slow down", status=429, retry_after=120)] * 5)
    source = 'try:\n  session "Call"\n    retry: 3\ncatch as err:\n  output e = err.message\n'
    started = time.perf_counter()
    result = vm.run(source, resilient(inner, max_retry_after=60))
    assert time.perf_counter() - started < 10
    assert result.status == "succeeded"
    assert len(inner.calls) == 1
    message = result.outputs["e"]
    assert "retry after 120 s" in message and "max_retry_after = 60 s" in message


def test_a_request_backing_off_holds_no_slot(vm: Any) -> None:
    from openprose.providers import TransientProviderError

    # One slot per provider, no VM-wide one: while A waits 0.3 s to retry, B is sent.
    inner = Failing(TransientProviderError("HTTP 503", status=503, retry_after=0.3), latency=0.02)
    source = 'parallel:\n  a = session "A"\n  b = session "B"\n'
    config = VMConfig(retry_base_delay=0.001, max_concurrency=1)
    result = vm.run(source, resilient(inner, concurrency=1), config=config)
    assert result.status == "succeeded"
    assert inner.calls == ["A", "B", "A"]


def test_exponential_backoff_of_a_huge_retry_count_stays_finite() -> None:
    from openprose.vm.calls import backoff_delay

    assert backoff_delay("exponential", 5000, 0.0) == 0.0  # no OverflowError
    assert backoff_delay("exponential", 5000, 1e-9) == 1e-9 * 2.0**60

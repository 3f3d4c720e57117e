"""The retry policy and concurrency limit, with a recording test double for the inner provider."""

from __future__ import annotations

import asyncio
import time
from email.utils import formatdate
from pathlib import Path

import pytest

from openprose.providers import (
    Message,
    ModelRequest,
    ModelResponse,
    ProviderError,
    RecordingProvider,
    ResilientProvider,
    RetryAfterTooLongError,
    RetryPolicy,
    SingleAttemptProvider,
    TransientProviderError,
    single_attempt,
)
from openprose.providers.http_errors import parse_retry_after
from openprose.providers.resilient import backoff_delay

REQUEST = ModelRequest(model="m", messages=(Message("user", "hi"),))


class FlakyProvider:
    """Raises the queued errors in turn, then answers."""

    name = "flaky"

    def __init__(self, *errors: ProviderError, hold: float = 0.0) -> None:
        self.errors = list(errors)
        self.calls = 0
        self.hold = hold
        self.in_flight = 0
        self.max_in_flight = 0

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.hold)
            if self.errors:
                raise self.errors.pop(0)
            return ModelResponse(text="ok", model=request.model, provider=self.name)
        finally:
            self.in_flight -= 1

    async def aclose(self) -> None:
        return None


ATTEMPT_S = 0.3  # how long each attempt takes on `wrap`'s clock


def wrap(inner: FlakyProvider, policy: RetryPolicy, sleeps: list[float]) -> ResilientProvider:
    async def record_sleep(delay: float) -> None:
        sleeps.append(delay)

    def clock() -> float:  # the waits between attempts, and the attempts' own time
        return sum(sleeps) + ATTEMPT_S * inner.calls

    return ResilientProvider(
        inner,
        policy=policy,
        max_concurrency=4,
        sleep=record_sleep,
        jitter=lambda: 1.0,
        clock=clock,
    )


def test_backoff_is_exponential_capped_and_jittered() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=5.0)
    assert [backoff_delay(policy, n, 1.0) for n in range(1, 6)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    assert backoff_delay(policy, 2, 0.0) == 1.0  # jitter keeps at least half the delay


async def test_transient_errors_are_retried_with_backoff() -> None:
    inner = FlakyProvider(TransientProviderError("a"), TransientProviderError("b"))
    sleeps: list[float] = []
    provider = wrap(inner, RetryPolicy(max_attempts=5, base_delay=0.5, max_delay=10), sleeps)
    assert (await provider.complete(REQUEST)).text == "ok"
    assert inner.calls == 3
    assert sleeps == [0.5, 1.0]


async def test_retry_after_raises_the_delay() -> None:
    inner = FlakyProvider(TransientProviderError("429", status=429, retry_after=7.0))
    sleeps: list[float] = []
    await wrap(inner, RetryPolicy(base_delay=0.5), sleeps).complete(REQUEST)
    assert sleeps == [7.0]


async def test_gives_up_after_max_attempts_with_the_last_error() -> None:
    errors = [TransientProviderError(f"e{i}") for i in range(5)]
    inner = FlakyProvider(*errors)
    sleeps: list[float] = []
    with pytest.raises(TransientProviderError, match="e2"):
        await wrap(inner, RetryPolicy(max_attempts=3, base_delay=0.1), sleeps).complete(REQUEST)
    assert inner.calls == 3 and len(sleeps) == 2


async def test_the_last_error_says_how_many_attempts_and_what_to_change() -> None:
    limited = [TransientProviderError("HTTP 429: slow down", status=429) for _ in range(3)]
    sleeps: list[float] = []
    policy = RetryPolicy(max_attempts=3, base_delay=0.5, max_delay=10)
    with pytest.raises(TransientProviderError) as raised:
        await wrap(FlakyProvider(*limited), policy, sleeps).complete(REQUEST)
    assert str(raised.value) == "HTTP 429: slow down"  # what a program's `catch` sees
    said = str(raised.value.note)  # what `prose run` adds to its last line
    # the wall time: 1.5 s of backoff and the three attempts' own 0.9 s
    assert said.startswith("gave up after 3 attempts over 2.4 s;")
    assert "lower --max-concurrency (now 4)" in said
    assert "[retry] max_attempts = 3 in prose.toml" in said

    failing = [TransientProviderError("HTTP 503: down", status=503) for _ in range(2)]
    with pytest.raises(TransientProviderError) as raised:
        await wrap(FlakyProvider(*failing), RetryPolicy(max_attempts=2), []).complete(REQUEST)
    said = str(raised.value.note)
    assert "gave up after 2 attempts" in said and "the server kept failing" in said
    assert "--max-concurrency" not in said  # not a rate limit: concurrency is not the cause

    from openprose.providers.base import UnreachableServerError

    refused = [UnreachableServerError("cannot connect to the server") for _ in range(2)]
    with pytest.raises(TransientProviderError) as raised:
        await wrap(FlakyProvider(*refused), RetryPolicy(max_attempts=2), []).complete(REQUEST)
    assert "check the base URL (`prose config` shows it)" in str(raised.value.note)

    with pytest.raises(TransientProviderError) as raised:
        once = RetryPolicy(max_attempts=1)
        await wrap(FlakyProvider(TransientProviderError("gone")), once, []).complete(REQUEST)
    assert str(raised.value.note).startswith("1 attempt (0.3 s), no retries;")


async def test_permanent_errors_are_not_retried() -> None:
    inner = FlakyProvider(ProviderError("bad request", status=400))
    sleeps: list[float] = []
    with pytest.raises(ProviderError, match="bad request"):
        await wrap(inner, RetryPolicy(), sleeps).complete(REQUEST)
    assert inner.calls == 1 and sleeps == []


async def test_slots_are_released_while_waiting_to_retry() -> None:
    # One slot; a request backing off must not block the next one from running.
    inner = FlakyProvider(TransientProviderError("busy"))
    backing_off, resume = asyncio.Event(), asyncio.Event()

    async def sleep_until_resumed(delay: float) -> None:
        backing_off.set()
        await resume.wait()

    provider = ResilientProvider(
        inner, policy=RetryPolicy(), max_concurrency=1, sleep=sleep_until_resumed
    )
    first = asyncio.create_task(provider.complete(REQUEST))
    await backing_off.wait()
    # would time out if the backing-off request still held the only slot
    second = await asyncio.wait_for(provider.complete(REQUEST), timeout=5)
    assert second.text == "ok" and not first.done()
    resume.set()
    assert (await first).text == "ok"
    assert inner.calls == 3


async def test_concurrency_limit_bounds_calls_in_flight() -> None:
    inner = FlakyProvider(hold=0.01)
    provider = ResilientProvider(inner, policy=RetryPolicy(), max_concurrency=5)
    await asyncio.gather(*(provider.complete(REQUEST) for _ in range(40)))
    assert inner.calls == 40 and inner.max_in_flight == 5


async def test_complete_once_makes_exactly_one_attempt() -> None:
    # For a caller that owns its retries (a program's `retry:`): no inner retry, no backoff.
    inner = FlakyProvider(TransientProviderError("503", status=503))
    sleeps: list[float] = []
    provider = wrap(inner, RetryPolicy(max_attempts=5), sleeps)
    with pytest.raises(TransientProviderError, match="503"):
        await provider.complete_once(REQUEST)
    assert inner.calls == 1 and sleeps == []
    assert (await provider.complete_once(REQUEST)).text == "ok"
    assert inner.calls == 2


async def test_complete_once_holds_a_concurrency_slot() -> None:
    inner = FlakyProvider(hold=0.01)
    provider = ResilientProvider(inner, policy=RetryPolicy(), max_concurrency=3)
    await asyncio.gather(*(provider.complete_once(REQUEST) for _ in range(12)))
    assert inner.calls == 12 and inner.max_in_flight == 3


@pytest.mark.parametrize("method", ["complete", "complete_once"])
async def test_retry_after_beyond_the_limit_is_not_retried(method: str) -> None:
    inner = FlakyProvider(*[TransientProviderError("429", status=429, retry_after=90)] * 3)
    sleeps: list[float] = []
    provider = wrap(inner, RetryPolicy(max_attempts=3, max_retry_after=60), sleeps)
    with pytest.raises(RetryAfterTooLongError) as caught:
        await getattr(provider, method)(REQUEST)
    assert inner.calls == 1 and sleeps == []
    error = caught.value
    assert (error.retry_after, error.limit, error.status) == (90, 60, 429)
    assert "retry after 90 s" in str(error) and "max_retry_after = 60 s" in str(error)


async def test_single_attempt_finds_complete_once_through_a_recorder(tmp_path: Path) -> None:
    inner = FlakyProvider(TransientProviderError("503"), TransientProviderError("503"))
    resilient = wrap(inner, RetryPolicy(max_attempts=5), [])
    recorder = RecordingProvider(resilient, tmp_path / "tape.jsonl")
    assert isinstance(resilient, SingleAttemptProvider)
    assert isinstance(recorder, SingleAttemptProvider)
    assert not isinstance(inner, SingleAttemptProvider)
    assert single_attempt(inner) == inner.complete  # no retries behind it anyway
    send = single_attempt(recorder)
    for _ in range(2):
        with pytest.raises(TransientProviderError):
            await send(REQUEST)
    assert (await send(REQUEST)).text == "ok"
    await recorder.aclose()
    assert inner.calls == 3  # one request per call, never the policy's five
    assert len((tmp_path / "tape.jsonl").read_text().splitlines()) == 1


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "3"}, 3.0),
        ({"retry-after": "0.25"}, 0.25),
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),  # the precise one wins
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_retry_after_headers_are_parsed(headers: dict[str, str], expected: float | None) -> None:
    assert parse_retry_after(headers) == expected


def test_retry_after_may_be_an_http_date() -> None:
    in_ten_seconds = formatdate(time.time() + 10, usegmt=True)
    delay = parse_retry_after({"retry-after": in_ten_seconds})
    assert delay is not None and 8.0 <= delay <= 10.0


def test_a_huge_attempt_number_keeps_the_backoff_finite() -> None:
    policy = RetryPolicy(base_delay=0.5, max_delay=30.0)
    assert backoff_delay(policy, 1_000_000, 1.0) == 30.0  # no OverflowError


async def test_every_retry_is_counted_as_a_request_the_server_received() -> None:
    from openprose.providers.resilient import REQUEST_TALLY

    class Tally:
        requests = 1  # the caller counts the first attempt

    tally = Tally()
    token = REQUEST_TALLY.set(tally)
    try:
        inner = FlakyProvider(*(TransientProviderError(f"e{i}") for i in range(4)))
        with pytest.raises(TransientProviderError):
            await wrap(inner, RetryPolicy(max_attempts=4, base_delay=0.0), []).complete(REQUEST)
    finally:
        REQUEST_TALLY.reset(token)
    assert inner.calls == 4 and tally.requests == 4


async def test_a_watcher_hears_why_a_call_waits_and_for_how_long() -> None:
    from openprose.providers.streaming import stream_text_to

    notes: list[str] = []
    inner = FlakyProvider(TransientProviderError("HTTP 503: down"))
    provider = wrap(inner, RetryPolicy(max_attempts=3, base_delay=2.0), [])
    with stream_text_to(lambda _text: None, on_wait=notes.append):
        assert (await provider.complete(REQUEST)).text == "ok"
    assert notes == ["HTTP 503: down; attempt 2 of 3 in 2.0 s"]

"""The one transient-retry policy and the per-provider concurrency limit.

Every real provider is wrapped in `ResilientProvider`; the HTTP clients never retry on
their own, so the attempts a server sees are exactly the ones made here: up to `max_attempts` by
`complete`, or one by `complete_once` for a caller that owns its retries (a program's
`retry:`). Both hold one of the provider's concurrency slots per attempt, never during a
backoff wait.

A 200 answer whose body cannot be decoded (cut short, binary noise, a proxy's page, a
number too long to read) is a `GarbledAnswerError`: transient, because a proxy or a dropped
connection is its usual cause, so it is retried like a 503. Whatever transport a provider
uses, a decoding error it lets through is classified here (`garbled_answer`), in the one
layer every real provider passes through. A well-formed answer of the wrong shape stays a
permanent `ProviderError`: asking again gets the same answer.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Awaitable, Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Protocol

from openprose.providers.base import (
    ModelRequest,
    ModelResponse,
    Provider,
    ProviderConfigError,
    ProviderError,
    RetryAfterTooLongError,
    TransientProviderError,
    UnreachableServerError,
)
from openprose.providers.settings import RetryPolicy
from openprose.providers.slots import Slots
from openprose.providers.streaming import TextSink, current_sink, stream_text_to

__all__ = [
    "MAX_BACKOFF_EXPONENT",
    "REQUEST_TALLY",
    "RETRY_WATCH",
    "GarbledAnswerError",
    "ProviderRetry",
    "RequestTally",
    "ResilientProvider",
    "backoff_delay",
    "garbled_answer",
    "redact",
]

DETAIL_CHARS = 200
SHORTEST_SECRET = 8  # a shorter "key" is a placeholder, and would redact ordinary words
# 2**60 times any base delay is past every `max_delay`: a larger exponent only overflows.
MAX_BACKOFF_EXPONENT = 60


class RequestTally(Protocol):
    """What counts the requests a run's provider received (the run's `RunStats`)."""

    requests: int


# The tally of the run the current task is making a call for: each transient retry made
# here is one more request the server received, and the run summary says so.
REQUEST_TALLY: ContextVar[RequestTally | None] = ContextVar("REQUEST_TALLY", default=None)


@dataclass(frozen=True, slots=True)
class ProviderRetry:
    """One request the policy retried: the server received it (or it was lost on the way)."""

    request: int  # 1 for the call's first request, 2 for the first retry's...
    status: int | None  # the HTTP status, None when no answer came (a lost connection)
    error: str
    elapsed: float  # seconds the request took to fail
    delay: float  # seconds waited before the next one


# Who hears of each retried request of the call the current task makes (the run's journal).
RETRY_WATCH: ContextVar[Callable[[ProviderRetry], None] | None] = ContextVar(
    "RETRY_WATCH", default=None
)


class GarbledAnswerError(TransientProviderError):
    """A 200 answer whose body could not be decoded at all: retried within the policy."""


def garbled_answer(provider: str, model: str, error: BaseException) -> GarbledAnswerError | None:
    """`error`, raised while reading an answer, as the garbled body it reveals; None when it
    is not a decoding error."""
    if isinstance(error, json.JSONDecodeError):  # orjson's error is a subclass
        problem = f"the body is not valid JSON ({_short(str(error))})"
    elif isinstance(error, UnicodeDecodeError):
        problem = f"the body is not UTF-8 text (byte {error.start})"
    elif isinstance(error, ValueError) and "integer string conversion" in str(error):
        problem = "the body holds a number too long to read (over 4,300 digits)"
    else:
        return None
    return GarbledAnswerError(
        f"{provider} (model {model}): malformed response: {problem}", provider=provider
    )


# How a provider reports a 200 body it could not decode as a plain (permanent) error; such
# a report is garbled too. A provider should raise `GarbledAnswerError` itself; this keeps
# the classification whatever it raises.
_UNDECODABLE = (
    ": malformed response: the body is not valid JSON",
    ": malformed response: the server sent a non-JSON body",
    ": malformed response: the body is not UTF-8",
)


def _reports_undecodable_body(error: ProviderError) -> bool:
    if isinstance(error, TransientProviderError | ProviderConfigError):
        return False
    return any(marker in str(error) for marker in _UNDECODABLE)


def redact(text: str, secrets: Iterable[str]) -> str:
    """`text` with every secret (a configured API key) replaced by `[redacted]`."""
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, "[redacted]")
    return text


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= DETAIL_CHARS else text[: DETAIL_CHARS - 3] + "..."


def backoff_delay(policy: RetryPolicy, attempt: int, jitter: float) -> float:
    """Delay before retry number `attempt` (1-based): capped exponential, jitter in [0.5, 1]."""
    exponent = min(attempt - 1, MAX_BACKOFF_EXPONENT)
    ceiling = min(policy.max_delay, policy.base_delay * 2.0**exponent)
    return ceiling * (0.5 + 0.5 * jitter)


class ResilientProvider:
    def __init__(
        self,
        inner: Provider,
        *,
        policy: RetryPolicy,
        max_concurrency: int,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        jitter: Callable[[], float] = random.random,
        secrets: Iterable[str] = (),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.policy = policy
        self.max_concurrency = max_concurrency
        self._slots = Slots(max_concurrency)
        self._sleep = sleep
        self._jitter = jitter
        self._clock = clock
        # Configured API keys: a server that echoes one (in an error or an answer) must not
        # get it into the journal, run.json, state.md or the terminal.
        self._secrets = tuple(sorted({k for k in secrets if len(k) >= SHORTEST_SECRET}))

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Transient failures retried by the policy (at most `max_attempts` attempts)."""
        attempt = 1
        started = sent = self._clock()
        while True:
            try:
                return await self.complete_once(request)
            except RetryAfterTooLongError:
                raise
            except TransientProviderError as error:
                if attempt >= self.policy.max_attempts:
                    error.note = self._gave_up(error, attempt, self._clock() - started)
                    raise
                delay = backoff_delay(self.policy, attempt, self._jitter())
                if error.retry_after is not None:
                    delay = max(delay, error.retry_after)
                watch = RETRY_WATCH.get()
                if watch is not None:
                    failed_after = self._clock() - sent
                    watch(ProviderRetry(attempt, error.status, str(error), failed_after, delay))
                self._tell_waiting(error, attempt + 1, delay)
                await self._sleep(delay)
                attempt += 1
                sent = self._clock()
                tally = REQUEST_TALLY.get()
                if tally is not None:
                    tally.requests += 1

    def _tell_waiting(self, error: ProviderError, attempt: int, delay: float) -> None:
        """A watcher of this call (the live view) hears why the call waits, and how long."""
        stream = current_sink()
        if stream is not None and stream.on_wait is not None:
            # the attempt last: a narrow column keeps the end of the line
            stream.on_wait(
                f"{_short(str(error))}; attempt {attempt} of {self.policy.max_attempts} "
                f"in {delay:.1f} s"
            )

    def _gave_up(self, error: TransientProviderError, attempts: int, elapsed: float) -> str:
        """How many attempts were made over how long (the wall time: the attempts' own
        waits for an answer and the waits between them), and what would change the outcome."""
        made = (
            f"gave up after {attempts} attempts over {elapsed:.1f} s"
            if attempts > 1
            else f"1 attempt ({elapsed:.1f} s), no retries"
        )
        more = f"[retry] max_attempts = {self.policy.max_attempts} in prose.toml allows more"
        if error.status == 429:
            return (
                f"{made}; the provider is limiting the rate: lower --max-concurrency "
                f"(now {self.max_concurrency}), or wait and resume the run; {more}"
            )
        if error.status is not None:
            return f"{made}; the server kept failing: wait, then resume the run; {more}"
        if isinstance(error, UnreachableServerError):
            return (
                f"{made}; check the base URL (`prose config` shows it) and that the server is "
                f"up, then resume the run; {more}"
            )
        return f"{made}; once the server answers again, resume the run; {more}"

    async def complete_once(self, request: ModelRequest) -> ModelResponse:
        """Exactly one attempt (a `SingleAttemptProvider`): for a caller whose own retry loop
        must be the only one. A `retry-after` beyond `max_retry_after` comes back as
        `RetryAfterTooLongError`, which no one retries."""
        slots = self._slots
        try:
            # The slot is held per attempt, not across backoff, so a waiting retry
            # does not starve other sessions.
            if not slots.take():
                await slots.wait()
            try:
                response = await self.inner.complete(request)
            finally:
                slots.release()
        except TransientProviderError as error:
            self._redact_error(error)
            if error.retry_after is not None and error.retry_after > self.policy.max_retry_after:
                raise RetryAfterTooLongError(
                    str(error),
                    retry_after=error.retry_after,
                    limit=self.policy.max_retry_after,
                    provider=error.provider,
                    status=error.status,
                ) from error
            raise
        except ProviderError as error:
            self._redact_error(error)
            if _reports_undecodable_body(error):
                raise GarbledAnswerError(str(error), provider=error.provider) from error
            raise
        except ValueError as error:
            garbled = garbled_answer(self.name, request.model, error)
            if garbled is None:
                raise
            raise garbled from error
        if self._secrets and any(s in response.text for s in self._secrets):
            response = replace(response, text=redact(response.text, self._secrets))
        return response

    def _redact_error(self, error: ProviderError) -> None:
        if self._secrets and error.args:
            error.args = (redact(str(error.args[0]), self._secrets), *error.args[1:])

    async def stream(
        self,
        request: ModelRequest,
        on_text: TextSink,
        on_restart: Callable[[], None] | None = None,
    ) -> ModelResponse:
        """`complete`, with the answer's text handed to `on_text` as it arrives; a retried
        attempt streams again from its start, after calling `on_restart`."""
        with stream_text_to(on_text, on_restart=on_restart):
            return await self.complete(request)

    async def aclose(self) -> None:
        await self.inner.aclose()

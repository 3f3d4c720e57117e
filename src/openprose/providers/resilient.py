"""The one transient-retry policy and the per-provider concurrency limit.

Every real provider is wrapped in `ResilientProvider`; the HTTP clients never retry on
their own, so the attempts a server sees are exactly the ones made here: up to `max_attempts` by
`complete`, or one by `complete_once` for a caller that owns its retries (a program's
`retry:`). Both hold one of the provider's concurrency slots per attempt, never during a
backoff wait.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable

from openprose.providers.base import (
    ModelRequest,
    ModelResponse,
    Provider,
    RetryAfterTooLongError,
    TransientProviderError,
)
from openprose.providers.settings import RetryPolicy
from openprose.providers.streaming import TextSink, stream_text_to

__all__ = ["ResilientProvider", "backoff_delay"]


def backoff_delay(policy: RetryPolicy, attempt: int, jitter: float) -> float:
    """Delay before retry number `attempt` (1-based): capped exponential, jitter in [0.5, 1]."""
    ceiling = min(policy.max_delay, policy.base_delay * 2.0 ** (attempt - 1))
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
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.policy = policy
        self.max_concurrency = max_concurrency
        self._slots = asyncio.Semaphore(max_concurrency)
        self._sleep = sleep
        self._jitter = jitter

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Transient failures retried by the policy (at most `max_attempts` attempts)."""
        attempt = 1
        while True:
            try:
                return await self.complete_once(request)
            except RetryAfterTooLongError:
                raise
            except TransientProviderError as error:
                if attempt >= self.policy.max_attempts:
                    raise
                delay = backoff_delay(self.policy, attempt, self._jitter())
                if error.retry_after is not None:
                    delay = max(delay, error.retry_after)
                await self._sleep(delay)
                attempt += 1

    async def complete_once(self, request: ModelRequest) -> ModelResponse:
        """Exactly one attempt (a `SingleAttemptProvider`): for a caller whose own retry loop
        must be the only one. A `retry-after` beyond `max_retry_after` comes back as
        `RetryAfterTooLongError`, which no one retries."""
        try:
            # The slot is held per attempt, not across backoff, so a waiting retry
            # does not starve other sessions.
            async with self._slots:
                return await self.inner.complete(request)
        except TransientProviderError as error:
            if error.retry_after is not None and error.retry_after > self.policy.max_retry_after:
                raise RetryAfterTooLongError(
                    str(error),
                    retry_after=error.retry_after,
                    limit=self.policy.max_retry_after,
                    provider=error.provider,
                    status=error.status,
                ) from error
            raise

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

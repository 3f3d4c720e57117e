"""The one transient-retry policy and the per-provider concurrency limit.

Every real provider is wrapped in `ResilientProvider`; the SDKs' own retries are off, so
the attempts a server sees are exactly the ones made here.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable

from openprose.providers.base import ModelRequest, ModelResponse, Provider, TransientProviderError
from openprose.providers.settings import RetryPolicy

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
        attempt = 1
        while True:
            try:
                # The slot is held per attempt, not across backoff, so a waiting retry
                # does not starve other sessions.
                async with self._slots:
                    return await self.inner.complete(request)
            except TransientProviderError as error:
                delay = self._delay_after(error, attempt)
                if delay is None:
                    raise
                await self._sleep(delay)
                attempt += 1

    async def aclose(self) -> None:
        await self.inner.aclose()

    def _delay_after(self, error: TransientProviderError, attempt: int) -> float | None:
        if attempt >= self.policy.max_attempts:
            return None
        delay = backoff_delay(self.policy, attempt, self._jitter())
        if error.retry_after is not None:
            if error.retry_after > self.policy.max_retry_after:
                return None  # too long to wait inside one call: the program's retry decides
            delay = max(delay, error.retry_after)
        return delay

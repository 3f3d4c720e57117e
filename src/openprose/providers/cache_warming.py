"""Send the first request of a new cached prefix alone.

A prompt cache entry is readable only once the request that writes it has been answered:
requests sent at the same time all miss it, and each pays the cache write (1.25x input on
Anthropic) for the same prefix. A pmap of 200 sessions sharing a long `context:` sends 16
at once: 16 writes instead of 1. So the first request with a given stable prefix goes
alone; the others with that prefix wait for its answer, then go and read the cache. A
prefix answered in the last `TTL_S` seconds is warm and waits for nothing. A failed first
request hands the turn to one of the waiting ones.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

__all__ = ["PrefixWarming"]

# Anthropic keeps an entry 5 minutes after its last use; a little less, to be safe.
TTL_S = 270.0
MAX_WARM_PREFIXES = 10_000  # forgotten all at once beyond this: they would only wait again


class PrefixWarming:
    def __init__(self) -> None:
        self._warm: dict[str, float] = {}  # prefix key -> monotonic time last answered
        self._writing: dict[str, asyncio.Event] = {}  # prefix key -> set when answered

    @asynccontextmanager
    async def turn(self, key: str | None) -> AsyncIterator[None]:
        """Hold this while sending a request whose stable prefix is `key` (None: nothing
        cached, nothing to wait for)."""
        if key is None:
            yield
            return
        writer = False
        while not self._is_warm(key):
            event = self._writing.get(key)
            if event is None:
                self._writing[key] = asyncio.Event()
                writer = True
                break
            await event.wait()
        answered = False
        try:
            yield
            answered = True
        finally:
            if answered:
                if len(self._warm) >= MAX_WARM_PREFIXES:
                    self._warm.clear()
                self._warm[key] = time.monotonic()
            if writer:
                self._writing.pop(key).set()

    def _is_warm(self, key: str) -> bool:
        answered = self._warm.get(key)
        return answered is not None and time.monotonic() - answered < TTL_S

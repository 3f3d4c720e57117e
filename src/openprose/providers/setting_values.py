"""The values provider settings are made of: the retry policy, how to reach a provider, and
the settings of a run. `settings.py` builds them from files and the environment; the
registry's rows and the providers read them. Kept apart so both can import them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "DEFAULT_MAX_CONCURRENCY",
    "DEFAULT_READ_TIMEOUT_S",
    "DEFAULT_TIMEOUT_S",
    "Endpoint",
    "ProviderSettings",
    "RetryPolicy",
]

DEFAULT_MAX_CONCURRENCY = 16
DEFAULT_TIMEOUT_S = 300.0
# Silence tolerated while an answer streams in: a server that stops sending mid-answer is
# noticed after this long, not after the whole request's `timeout`.
DEFAULT_READ_TIMEOUT_S = 60.0


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """One transient-retry policy for every real provider (attempts include the first)."""

    max_attempts: int = 5
    base_delay: float = 0.5
    max_delay: float = 30.0
    # A server asking us to wait longer than this gets the error back instead:
    # the program's own `retry:` then decides what to do.
    max_retry_after: float = 60.0


@dataclass(frozen=True, slots=True)
class Endpoint:
    """How to reach a provider other than the selected one (a `--model` override may)."""

    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    aliases: Mapping[str, str] = field(default_factory=dict)  # its [providers.NAME.models]


@dataclass(frozen=True, slots=True)
class ProviderSettings:
    provider: str  # one of PROVIDER_NAMES
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)  # never logged or recorded
    # alias -> "MODEL" (for `provider`) or "PROVIDER:MODEL"; merged over DEFAULT_ALIASES.
    aliases: Mapping[str, str] = field(default_factory=dict)
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY
    timeout: float = DEFAULT_TIMEOUT_S
    read_timeout: float = DEFAULT_READ_TIMEOUT_S
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    path: Path | None = None  # the cassette or rules file of `replay` / `scripted`
    endpoints: Mapping[str, Endpoint] = field(default_factory=dict)
    source: str = "explicit"  # why this provider was chosen, for messages
    # Mark prompt-cache breakpoints where the API wants them (Anthropic); `prompt_cache =
    # false` in prose.toml or `--no-prompt-cache` sends prompts unmarked.
    prompt_cache: bool = True

    def endpoint(self, name: str) -> Endpoint:
        if name == self.provider:
            return Endpoint(self.base_url, self.api_key, self.aliases)
        return self.endpoints.get(name, Endpoint())

    def public_dict(self) -> dict[str, Any]:
        """Everything but the API keys, JSON-ready: for run records and `--verbose` output."""
        return {
            "provider": self.provider,
            "base_url": self.base_url,
            "aliases": dict(self.aliases),
            "max_concurrency": self.max_concurrency,
            "timeout": self.timeout,
            "read_timeout": self.read_timeout,
            "retry": {
                "max_attempts": self.retry.max_attempts,
                "base_delay": self.retry.base_delay,
                "max_delay": self.retry.max_delay,
                "max_retry_after": self.retry.max_retry_after,
            },
            "path": None if self.path is None else str(self.path),
            "endpoints": {
                name: {"base_url": e.base_url, "aliases": dict(e.aliases)}
                for name, e in self.endpoints.items()
            },
            "source": self.source,
            "prompt_cache": self.prompt_cache,
        }

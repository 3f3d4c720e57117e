"""The provider contract: request/response records, the Provider protocol, and errors.

Everything here is plain data and stdlib only, so importing it costs nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from openprose.slots_init import install_slots_init

__all__ = [
    "Message",
    "ModelRequest",
    "ModelResponse",
    "Provider",
    "ProviderConfigError",
    "ProviderError",
    "RetryAfterTooLongError",
    "SingleAttemptProvider",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "TransientProviderError",
    "UnreachableServerError",
    "Usage",
    "single_attempt",
]

ROLES = ("user", "assistant")


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool offered to the model: its name, what it does, and a JSON Schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ToolSpec:
        return cls(str(d["name"]), str(d.get("description", "")), dict(d.get("parameters") or {}))


@dataclass(frozen=True, slots=True)
class ToolCall:
    """The model asks for one tool call. `id` is the provider's call id (made up when the
    provider has none), echoed back by the matching ToolResult."""

    id: str
    name: str
    arguments: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ToolCall:
        arguments = d.get("arguments")
        return cls(str(d["id"]), str(d["name"]), arguments if isinstance(arguments, dict) else {})


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool call gave back, sent to the model in the next user message."""

    call_id: str
    content: str
    is_error: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"call_id": self.call_id, "content": self.content, "is_error": self.is_error}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ToolResult:
        return cls(str(d["call_id"]), str(d["content"]), bool(d.get("is_error", False)))


@dataclass(frozen=True, slots=True)
class Message:
    """One turn. An assistant turn may carry tool calls beside (or instead of) its text; the
    user turn after it carries their results. Providers map these onto their wire formats
    (Anthropic tool_use / tool_result blocks; OpenAI `tool_calls` and `role: tool` messages)."""

    role: str  # "user" | "assistant"
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_results: tuple[ToolResult, ...] = ()
    # How many leading characters of `content` other requests share (a session's `context:`
    # ahead of its task): a provider that caches prompt prefixes may end a cached block
    # there. A hint about the wire, not content: left out of `to_dict` and the replay key.
    shared_prefix: int = 0

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"message role must be one of {ROLES}, got {self.role!r}")
        if self.tool_calls and self.role != "assistant":
            raise ValueError("only an assistant message can carry tool calls")
        if self.tool_results and self.role != "user":
            raise ValueError("only a user message can carry tool results")

    def to_dict(self) -> dict[str, Any]:
        # Tool fields only when present, so a plain conversation's form (and replay key)
        # is the one recorded before tools existed.
        body: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            body["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        if self.tool_results:
            body["tool_results"] = [r.to_dict() for r in self.tool_results]
        return body

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Message:
        return cls(
            str(d["role"]),
            str(d["content"]),
            tuple(ToolCall.from_dict(c) for c in d.get("tool_calls") or ()),
            tuple(ToolResult.from_dict(r) for r in d.get("tool_results") or ()),
        )


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens of one answer. `input_tokens` counts the whole prompt; the cache counts are
    the parts of it read from a provider's prompt cache and written to it (billed at their
    own rates), so `input_tokens - cache_read_tokens - cache_write_tokens` paid full price."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def to_dict(self) -> dict[str, int]:
        """The journal's form: cache counts only when there are some (older records match)."""
        body = {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}
        if self.cache_read_tokens:
            body["cache_read_tokens"] = self.cache_read_tokens
        if self.cache_write_tokens:
            body["cache_write_tokens"] = self.cache_write_tokens
        return body

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Usage:
        return cls(
            int(d.get("input_tokens", 0)),
            int(d.get("output_tokens", 0)),
            int(d.get("cache_read_tokens", 0)),
            int(d.get("cache_write_tokens", 0)),
        )


@dataclass(frozen=True, slots=True)
class ModelRequest:
    model: str  # a concrete model id for the provider (aliases already resolved)
    messages: tuple[Message, ...]
    system: str | None = None
    max_tokens: int = 1024
    temperature: float | None = None
    # A JSON Schema the answer must satisfy. Providers that can constrain decoding to it do
    # (`local`); hosted models follow the prompt's own JSON instruction instead.
    response_schema: dict[str, Any] | None = None
    # Tools the model may call; empty for a plain completion.
    tools: tuple[ToolSpec, ...] = ()
    # A GBNF grammar the answer must match; `local` decodes inside it, others ignore it.
    # Made by code (plsp.gbnf), never from user text: llama.cpp checks it only while
    # sampling, and an invalid grammar crashes the process there.
    grammar: str | None = None
    # A typed result (`returns:`): hosted providers use their native structured mode for
    # `response_schema` (providers/structured.py); judgments leave it off and ask in prose.
    structured: bool = False
    # `local` only: llama.cpp's repeat penalty (None: the provider's default). A reply that
    # must copy values from its prompt (plsp's guided cycles) asks for 1.0, no penalty.
    repeat_penalty: float | None = None

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [m.to_dict() for m in self.messages],
            "system": self.system,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
        }
        if self.response_schema is not None:  # absent otherwise: older cassettes still match
            body["response_schema"] = self.response_schema
        if self.tools:  # likewise
            body["tools"] = [t.to_dict() for t in self.tools]
        if self.grammar is not None:  # likewise
            body["grammar"] = self.grammar
        if self.structured:  # likewise
            body["structured"] = True
        if self.repeat_penalty is not None:  # likewise
            body["repeat_penalty"] = self.repeat_penalty
        return body

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ModelRequest:
        temperature = d.get("temperature")
        return cls(
            model=str(d["model"]),
            messages=tuple(Message.from_dict(m) for m in d["messages"]),
            system=d.get("system"),
            max_tokens=int(d.get("max_tokens", 1024)),
            temperature=None if temperature is None else float(temperature),
            response_schema=d.get("response_schema"),
            tools=tuple(ToolSpec.from_dict(t) for t in d.get("tools") or ()),
            grammar=d.get("grammar"),
            structured=bool(d.get("structured", False)),
            repeat_penalty=d.get("repeat_penalty"),
        )

    def key(self) -> str:
        """Stable sha256 of the canonical JSON form; replay matches requests by it.

        The response schema is left out: it constrains decoding and follows from the prompt,
        so cassettes recorded before judgments carried one still match."""
        body = self.to_dict()
        body.pop("response_schema", None)
        body.pop("grammar", None)  # likewise
        body.pop("structured", None)  # how the schema is asked for, not what is asked
        body.pop("repeat_penalty", None)  # how to sample, not what is asked
        return _canonical_sha256(body)

    def last_user_text(self) -> str:
        """The text of the last user turn that says something: a turn carrying only tool
        results is skipped, so in a tool loop this stays the session's task."""
        for message in reversed(self.messages):
            if message.role == "user" and (message.content or not message.tool_results):
                return message.content
        return ""


@dataclass(frozen=True, slots=True)
class ModelResponse:
    text: str
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None
    request_id: str | None = None
    model: str = ""
    provider: str = ""
    # Tool calls the model asks for; when present the session runs them and asks again.
    tool_calls: tuple[ToolCall, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "text": self.text,
            "usage": self.usage.to_dict(),
            "finish_reason": self.finish_reason,
            "request_id": self.request_id,
            "model": self.model,
            "provider": self.provider,
        }
        if self.tool_calls:
            body["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        return body

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ModelResponse:
        usage = d.get("usage") or {}
        return cls(
            text=str(d["text"]),
            usage=Usage.from_dict(usage),
            finish_reason=d.get("finish_reason"),
            request_id=d.get("request_id"),
            model=str(d.get("model", "")),
            provider=str(d.get("provider", "")),
            tool_calls=tuple(ToolCall.from_dict(c) for c in d.get("tool_calls") or ()),
        )


# Each model call builds a request, its message, a usage and a response: past a fan-out's
# first `_MANY` calls, their `__init__` set the slots directly (slots_init: ~half the
# instructions; compiled only then, as compiling costs what ~250 constructions save).
_MANY = 256
install_slots_init(Message, after=_MANY)
install_slots_init(Usage, after=_MANY)
install_slots_init(ModelRequest, after=_MANY)
install_slots_init(ModelResponse, after=_MANY)


@runtime_checkable
class Provider(Protocol):
    name: str

    async def complete(self, request: ModelRequest) -> ModelResponse: ...

    async def aclose(self) -> None: ...


@runtime_checkable
class SingleAttemptProvider(Provider, Protocol):
    """A provider whose `complete` retries transient failures itself, and whose
    `complete_once` makes exactly one attempt, for a caller that owns its retries.

    A caller with its own retry loop (a program's `retry:`) uses `complete_once`, so the
    attempts a server sees are the caller's alone and never multiply.
    """

    async def complete_once(self, request: ModelRequest) -> ModelResponse: ...


def single_attempt(provider: Provider) -> Callable[[ModelRequest], Awaitable[ModelResponse]]:
    """How to send one request with no retry behind it: `complete_once` where the provider
    has one, else `complete` (a provider without it does not retry, e.g. replay)."""
    if isinstance(provider, SingleAttemptProvider):
        return provider.complete_once
    return provider.complete


class ProviderError(Exception):
    """A permanent failure: retrying the same request will not help."""

    def __init__(
        self, message: str, *, provider: str | None = None, status: int | None = None
    ) -> None:
        super().__init__(message)
        self.provider = provider
        self.status = status
        # What a person could change, said where the failure ends up (`prose run`'s last
        # line), never part of the message a program's `catch` sees or a model is sent.
        self.note: str | None = None


class TransientProviderError(ProviderError):
    """Rate limits, 5xx, timeouts, connection errors: worth another attempt later."""

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, provider=provider, status=status)
        self.retry_after = retry_after


class UnreachableServerError(TransientProviderError):
    """No connection could be made at all (name lookup failed, connection refused): worth
    another attempt — a server restarting — but, when it lasts, a base URL to check."""


class RetryAfterTooLongError(TransientProviderError):
    """A transient failure whose `retry-after` exceeds the configured limit
    (`[retry] max_retry_after`): no retry is made, by the provider or by a program's `retry:`.

    Sending before the server's time only earns another refusal, and waiting longer than the
    limit would stall the run silently; so the failure comes back at once, saying why.
    """

    def __init__(
        self,
        message: str,
        *,
        retry_after: float,
        limit: float,
        provider: str | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(
            f"{message} (the server asks to retry after {retry_after:g} s, longer than "
            f"[retry] max_retry_after = {limit:g} s: not retried)",
            provider=provider,
            status=status,
            retry_after=retry_after,
        )
        self.limit = limit


class ProviderConfigError(ProviderError):
    """Nothing usable is configured, or the configuration (or credential) is wrong."""


# What `json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)` makes
# for each call, made once: a replay hashes every request it is asked and holds.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _canonical_sha256(value: Any) -> str:
    return hashlib.sha256(_CANONICAL.encode(value).encode("utf-8")).hexdigest()

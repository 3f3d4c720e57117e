"""Where an Anthropic request marks its prompt cache: `cache_control` breakpoints on the
stable prefix, in the order the API reads a prompt (tools, system, messages).

A breakpoint caches everything before it. One goes at the end of each part that other
requests share, once the prompt up to there reaches the model's minimum cacheable length:
  1. the last tool definition (tool loops offer the same tools on every turn);
  2. the system prompt (the agent's prompt, the same for every session of the agent);
  3. the shared head of the first user message (`Message.shared_prefix`: a session's
     `context:`, the same for every item of a pmap);
  4. the end of the last message, when tools are offered: the next turn of a tool loop
     repeats this whole prompt and adds to it.
That is at most four, the API's limit. A breakpoint below the model's minimum would be
ignored by the API (no error, nothing cached), so it is not placed: the slots stay for the
parts that can be cached, and a short prompt goes out as it always did.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import orjson

from openprose.providers.base import ModelRequest

__all__ = ["Breakpoints", "mark_breakpoints", "minimum_tokens", "plan_breakpoints"]

BREAKPOINT = {"type": "ephemeral"}
# No tokenizer here: English prose and JSON run 3.5-4.5 characters a token. Counting 4
# errs toward placing a breakpoint the API then ignores, which costs nothing.
CHARS_PER_TOKEN = 4
# The API's minimum cacheable prompt per model (its prompt-caching page), by id prefix,
# most specific first. Models it does not list get the smallest minimum it has (1,024):
# a breakpoint under a model's real minimum is ignored, never billed.
MINIMUM_TOKENS: tuple[tuple[str, int], ...] = (
    ("claude-opus-4-5", 4096),
    ("claude-opus-4-6", 4096),
    ("claude-haiku-4-5", 4096),
    ("claude-sonnet-4-6", 2048),
    ("claude-3-5-haiku", 2048),
    ("claude-3-haiku", 2048),
)
DEFAULT_MINIMUM_TOKENS = 1024


def minimum_tokens(model: str) -> int:
    for prefix, tokens in MINIMUM_TOKENS:
        if model.startswith(prefix):
            return tokens
    return DEFAULT_MINIMUM_TOKENS


@dataclass(frozen=True, slots=True)
class Breakpoints:
    """Where one request's breakpoints go."""

    tools: bool = False  # after the last tool definition
    system: bool = False  # after the system prompt
    head: int = 0  # after this many characters of the first message (0: none there)
    last: bool = False  # after the last message

    def prefix_key(self, request: ModelRequest) -> str | None:
        """What identifies the stable cached prefix (tools, system, shared head): requests
        with the same key read what the first of them wrote. None: nothing stable cached."""
        if not (self.tools or self.system or self.head):
            return None
        head = request.messages[0].content[: self.head] if self.head else None
        tools = [t.to_dict() for t in request.tools]
        material = orjson.dumps([request.model, tools, request.system, head])
        return hashlib.sha256(material).hexdigest()


def plan_breakpoints(request: ModelRequest) -> Breakpoints:
    minimum = minimum_tokens(request.model) * CHARS_PER_TOKEN  # in characters
    length = len(orjson.dumps([t.to_dict() for t in request.tools])) if request.tools else 0
    tools = bool(request.tools) and length >= minimum
    length += len(request.system or "")
    system = bool(request.system) and length >= minimum
    head = 0
    if request.messages:
        first = request.messages[0]
        shared = min(first.shared_prefix, len(first.content))
        if shared and not first.tool_results and not first.tool_calls:
            head = shared if length + shared >= minimum else 0
    last = False
    if request.tools and request.messages:
        length += sum(
            len(m.content) + sum(len(r.content) for r in m.tool_results) for m in request.messages
        )
        last = length >= minimum
    return Breakpoints(tools, system, head, last)


def mark_breakpoints(body: dict[str, Any], request: ModelRequest, plan: Breakpoints) -> None:
    """Add `cache_control` to `body` (a Messages API request built from `request`) as
    `plan` says; wire messages map one to one onto `request`'s."""
    tools = body.get("tools")
    if plan.tools and tools:
        tools[-1] = {**tools[-1], "cache_control": BREAKPOINT}
    system = body.get("system")
    if plan.system and isinstance(system, str):
        body["system"] = [{"type": "text", "text": system, "cache_control": BREAKPOINT}]
    messages: list[dict[str, Any]] = body["messages"]
    if plan.head and isinstance(messages[0]["content"], str):
        content = messages[0]["content"]
        head, rest = content[: plan.head], content[plan.head :]
        blocks: list[dict[str, Any]] = [{"type": "text", "text": head, "cache_control": BREAKPOINT}]
        if rest:  # the API refuses an empty text block
            blocks.append({"type": "text", "text": rest})
        messages[0] = {**messages[0], "content": blocks}
    if plan.last:
        _mark_last(messages)


def _mark_last(messages: list[dict[str, Any]]) -> None:
    last = messages[-1]
    content = last["content"]
    if isinstance(content, str):
        if not content:
            return  # an empty text block is refused; nothing to cache after it anyway
        last["content"] = [{"type": "text", "text": content, "cache_control": BREAKPOINT}]
        return
    if content and "cache_control" not in content[-1]:
        content[-1] = {**content[-1], "cache_control": BREAKPOINT}

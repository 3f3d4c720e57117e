"""The prompt caches of the hosted APIs, as the loopback fake server answers with them.

Tokens are the fake's (one a word). Anthropic (`anthropic_usage`): a prompt is its blocks in
the order the API reads them (tools, system, messages); a `cache_control` breakpoint asks
for the prefix up to its block to be cached, once that prefix reaches `MINIMUM_TOKENS`. A
request reads the longest cached prefix ending at a block boundary at most `LOOKBACK`
blocks before one of its breakpoints, and writes every breakpoint beyond it: the usage
counts uncached input apart from cache reads and writes, as the API does. OpenAI
(`openai_cached_tokens`): every prompt of `MINIMUM_TOKENS` or more is cached by itself, in
steps of `OPENAI_STEP` tokens, and `cached_tokens` is the longest cached prefix of a prompt.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

MINIMUM_TOKENS = 1024
LOOKBACK = 20  # block boundaries the API looks back from a breakpoint for a hit
OPENAI_STEP = 128


class PromptCacheModel:
    """Usage is counted when a request arrives; what it writes becomes readable when it has
    been answered (`commit`), as on the real APIs: requests sent together all miss."""

    def __init__(self) -> None:
        self._anthropic: set[bytes] = set()
        self._openai: set[bytes] = set()

    def arrive(self, api: str, body: dict[str, Any]) -> tuple[dict[str, Any], list[bytes]]:
        """The usage fields the answer carries, and the entries it writes (for `commit`)."""
        if api == "anthropic":
            return self._anthropic_usage(body)
        cached, written = self._openai_cached_tokens(body)
        return {"prompt_tokens_details": {"cached_tokens": cached}}, written

    def commit(self, api: str, written: list[bytes]) -> None:
        (self._anthropic if api == "anthropic" else self._openai).update(written)

    def _anthropic_usage(self, body: dict[str, Any]) -> tuple[dict[str, Any], list[bytes]]:
        """`input_tokens` (uncached), `cache_read_input_tokens`, `cache_creation_input_tokens`."""
        blocks = _anthropic_blocks(body)
        digest = hashlib.sha256()
        prefixes: list[bytes] = [digest.copy().digest()]
        tokens = [0]
        breakpoints: list[int] = []
        for index, (block, marked) in enumerate(blocks, start=1):
            digest.update(json.dumps(block, sort_keys=True).encode() + b"\x00")
            prefixes.append(digest.copy().digest())
            tokens.append(tokens[-1] + _words(block))
            if marked:
                breakpoints.append(index)
        hit = max(
            (
                at
                for point in breakpoints
                for at in range(max(1, point - LOOKBACK + 1), point + 1)
                if prefixes[at] in self._anthropic
            ),
            default=0,
        )
        written = [p for p in breakpoints if p > hit and tokens[p] >= MINIMUM_TOKENS]
        read = tokens[hit]
        creation = tokens[written[-1]] - read if written else 0
        usage = {
            "input_tokens": tokens[-1] - read - creation,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": creation,
        }
        return usage, [prefixes[point] for point in written]

    def _openai_cached_tokens(self, body: dict[str, Any]) -> tuple[int, list[bytes]]:
        words: list[str] = []
        for message in body.get("messages") or []:
            words.append(str(message.get("role")))
            words.extend(str(message.get("content") or "").split())
        digest = hashlib.sha256()
        cached, written = 0, []
        for end in range(OPENAI_STEP, len(words) + 1, OPENAI_STEP):
            digest.update(" ".join(words[end - OPENAI_STEP : end]).encode() + b"\x00")
            if end < MINIMUM_TOKENS:
                continue
            key = digest.copy().digest()
            if key in self._openai:
                cached = end
            written.append(key)
        return cached, written


def _anthropic_blocks(body: dict[str, Any]) -> list[tuple[Any, bool]]:
    """The prompt's blocks in reading order, each without its breakpoint, and whether it
    carried one."""
    blocks: list[tuple[Any, bool]] = []

    def add(block: Any) -> None:
        if isinstance(block, dict) and "cache_control" in block:
            blocks.append(({k: v for k, v in block.items() if k != "cache_control"}, True))
        else:
            blocks.append((block, False))

    for tool in body.get("tools") or []:
        add(tool)
    system = body.get("system")
    if isinstance(system, str):
        add({"type": "text", "text": system})
    elif isinstance(system, list):
        for block in system:
            add(block)
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            add({"role": message.get("role"), "type": "text", "text": content})
            continue
        for block in content or []:
            add({"role": message.get("role"), **block} if isinstance(block, dict) else block)
    return blocks


def _words(block: Any) -> int:
    if isinstance(block, dict) and isinstance(block.get("text"), str):
        return len(block["text"].split())
    return len(json.dumps(block).split())

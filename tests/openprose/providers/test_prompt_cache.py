"""Prompt caching: the `cache_control` breakpoints an Anthropic request carries (checked on
the exact bodies the loopback fake received), the cache reads and writes read from both
APIs' usage, whole and streamed, the first request of a new prefix sent alone, and the
switch that turns it off."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from openprose.providers import (
    Message,
    ModelRequest,
    ModelResponse,
    ProviderSettings,
    load_settings,
    open_provider,
    stream_text_to,
)
from openprose.providers.anthropic import AnthropicProvider
from openprose.providers.base import ProviderConfigError, ToolCall, ToolResult, ToolSpec, Usage
from openprose.providers.cache_breakpoints import minimum_tokens
from openprose.providers.cache_warming import PrefixWarming
from openprose.providers.openai import OpenAIProvider
from tests.support.fake_llm_server import FakeLLMServer

BREAKPOINT = {"type": "ephemeral"}
LONG = " ".join(f"word{i}" for i in range(1200))  # 1,200 fake tokens, ~10,000 characters
SHORT = "You are terse."


@pytest.fixture
async def caching_server() -> AsyncIterator[FakeLLMServer]:
    async with FakeLLMServer(prompt_cache=True) as server:
        yield server


def anthropic(server: FakeLLMServer, *, prompt_cache: bool = True) -> AnthropicProvider:
    return AnthropicProvider(
        api_key="test-key", base_url=server.base_url, timeout=5.0, prompt_cache=prompt_cache
    )


def request(
    *,
    system: str | None = SHORT,
    text: str = "Summarize it.",
    shared: int = 0,
    tools: tuple[ToolSpec, ...] = (),
    model: str = "claude-sonnet-5-5",
) -> ModelRequest:
    return ModelRequest(
        model=model,
        messages=(Message("user", text, shared_prefix=shared),),
        system=system,
        max_tokens=64,
        tools=tools,
    )


async def sent_body(server: FakeLLMServer, provider: AnthropicProvider, asked: ModelRequest) -> Any:
    try:
        await provider.complete(asked)
    finally:
        await provider.aclose()
    return server.stats.bodies[-1]


def breakpoints_in(value: Any) -> int:
    if isinstance(value, dict):
        return (value.get("cache_control") == BREAKPOINT) + sum(map(breakpoints_in, value.values()))
    if isinstance(value, list):
        return sum(map(breakpoints_in, value))
    return 0


# --- where the breakpoints go -------------------------------------------------------------


async def test_a_long_system_prompt_is_one_cached_block(caching_server: FakeLLMServer) -> None:
    body = await sent_body(caching_server, anthropic(caching_server), request(system=LONG))
    assert body["system"] == [{"type": "text", "text": LONG, "cache_control": BREAKPOINT}]
    assert body["messages"] == [{"role": "user", "content": "Summarize it."}]
    assert breakpoints_in(body) == 1


async def test_a_shared_context_ends_a_cached_block_and_the_task_follows_it(
    caching_server: FakeLLMServer,
) -> None:
    head = f"## Context\n{LONG}\n\n"
    text = head + "## Your task\nSummarize point 3."
    body = await sent_body(
        caching_server, anthropic(caching_server), request(text=text, shared=len(head))
    )
    assert body["system"] == SHORT  # too short to cache alone, and not marked
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": head, "cache_control": BREAKPOINT},
                {"type": "text", "text": "## Your task\nSummarize point 3."},
            ],
        }
    ]


async def test_tools_and_a_tool_loop_turn_are_marked_at_most_four_times(
    caching_server: FakeLLMServer,
) -> None:
    tools = (ToolSpec("read_file", "Read a file. " * 400, {"type": "object"}),)
    head = f"## Context\n{LONG}\n\n"
    asked = request(system=LONG, text=head + "task", shared=len(head), tools=tools)
    body = await sent_body(caching_server, anthropic(caching_server), asked)
    assert body["tools"][-1]["cache_control"] == BREAKPOINT
    assert body["system"][-1]["cache_control"] == BREAKPOINT
    first, rest = body["messages"][0]["content"]
    assert first == {"type": "text", "text": head, "cache_control": BREAKPOINT}
    # the end of the conversation: the next turn of the loop repeats all of it
    assert rest == {"type": "text", "text": "task", "cache_control": BREAKPOINT}
    assert breakpoints_in(body) == 4


async def test_a_tool_result_turn_marks_its_last_block(caching_server: FakeLLMServer) -> None:
    tools = (ToolSpec("read_file", "Read a file.", {"type": "object"}),)
    asked = ModelRequest(
        model="claude-sonnet-5-5",
        messages=(
            Message("user", "Read it."),
            Message("assistant", "", tool_calls=(ToolCall("t1", "read_file", {}),)),
            Message("user", "", tool_results=(ToolResult("t1", LONG),)),
        ),
        system=SHORT,
        tools=tools,
    )
    body = await sent_body(caching_server, anthropic(caching_server), asked)
    last = body["messages"][-1]["content"]
    assert last == [
        {"type": "tool_result", "tool_use_id": "t1", "content": LONG, "cache_control": BREAKPOINT}
    ]
    assert breakpoints_in(body) == 1  # the short system and tools are not marked


async def test_a_short_prompt_goes_out_unmarked(caching_server: FakeLLMServer) -> None:
    head = "## Context\nshort\n\n"
    asked = request(text=head + "task", shared=len(head))
    body = await sent_body(caching_server, anthropic(caching_server), asked)
    assert body["system"] == SHORT
    assert body["messages"] == [{"role": "user", "content": head + "task"}]
    assert breakpoints_in(body) == 0


async def test_switched_off_nothing_is_marked(caching_server: FakeLLMServer) -> None:
    head = f"## Context\n{LONG}\n\n"
    asked = request(system=LONG, text=head + "task", shared=len(head))
    body = await sent_body(caching_server, anthropic(caching_server, prompt_cache=False), asked)
    assert body["system"] == LONG
    assert body["messages"] == [{"role": "user", "content": head + "task"}]
    assert breakpoints_in(body) == 0


async def test_the_minimum_is_the_models(caching_server: FakeLLMServer) -> None:
    """~2,500 estimated tokens: enough for Sonnet 4.5 (1,024), not for Haiku 4.5 (4,096)."""
    system = "x" * (2500 * 4)
    assert minimum_tokens("claude-haiku-4-5-20251001") == 4096
    assert minimum_tokens("claude-sonnet-4-5") == 1024
    haiku = await sent_body(
        caching_server, anthropic(caching_server), request(system=system, model="claude-haiku-4-5")
    )
    sonnet = await sent_body(
        caching_server, anthropic(caching_server), request(system=system, model="claude-sonnet-4-5")
    )
    assert breakpoints_in(haiku) == 0
    assert breakpoints_in(sonnet) == 1


# --- usage --------------------------------------------------------------------------------


async def ask(provider: Any, asked: ModelRequest, mode: str) -> ModelResponse:
    if mode == "whole":
        return await provider.complete(asked)  # type: ignore[no-any-return]
    pieces: list[str] = []
    with stream_text_to(pieces.append, on_restart=pieces.clear):
        response: ModelResponse = await provider.complete(asked)
    assert "".join(pieces) == response.text
    return response


@pytest.mark.parametrize("mode", ["whole", "streamed"])
async def test_anthropic_cache_writes_then_reads_are_counted_in_the_prompt(
    caching_server: FakeLLMServer, mode: str
) -> None:
    provider = anthropic(caching_server)
    try:
        first = await ask(provider, request(system=LONG, text="one two"), mode)
        second = await ask(provider, request(system=LONG, text="three four five"), mode)
    finally:
        await provider.aclose()
    # the fake counts a word a token: the system prompt is 1,200, the task 2 or 3
    assert first.usage == Usage(1202, first.usage.output_tokens, 0, 1200)
    assert second.usage == Usage(1203, second.usage.output_tokens, 1200, 0)
    assert first.to_dict()["usage"]["cache_write_tokens"] == 1200
    assert ModelResponse.from_dict(second.to_dict()).usage == second.usage


@pytest.mark.parametrize("mode", ["whole", "streamed"])
async def test_openai_cached_tokens_are_read(caching_server: FakeLLMServer, mode: str) -> None:
    provider = OpenAIProvider(api_key="k", base_url=caching_server.openai_base_url, timeout=5.0)
    try:
        first = await ask(provider, request(system=LONG, text="one"), mode)
        second = await ask(provider, request(system=LONG, text="two"), mode)
    finally:
        await provider.aclose()
    assert first.usage.cache_read_tokens == 0
    # the fake caches in steps of 128 tokens from 1,024: 1,152 of the 1,200-word prefix
    assert second.usage.cache_read_tokens == 1152
    assert second.usage.input_tokens == first.usage.input_tokens
    assert second.usage.cache_write_tokens == 0  # OpenAI bills no writes


def test_usage_without_cache_counts_keeps_its_old_journal_form() -> None:
    assert Usage(5, 7).to_dict() == {"input_tokens": 5, "output_tokens": 7}
    assert Usage.from_dict({"input_tokens": 5, "output_tokens": 7}) == Usage(5, 7)


# --- the first request of a new prefix goes alone -----------------------------------------


async def test_concurrent_requests_sharing_a_prefix_write_it_once() -> None:
    async with FakeLLMServer(prompt_cache=True, latency_ms=30) as server:
        provider = anthropic(server)
        head = f"## Context\n{LONG}\n\n"
        asks = [request(text=f"{head}task {i}", shared=len(head)) for i in range(8)]
        try:
            answers = await asyncio.gather(*(provider.complete(a) for a in asks))
        finally:
            await provider.aclose()
    assert sorted(a.usage.cache_write_tokens > 0 for a in answers) == [False] * 7 + [True]
    assert sum(a.usage.cache_read_tokens > 0 for a in answers) == 7


async def test_concurrent_requests_switched_off_are_not_held_back() -> None:
    async with FakeLLMServer(prompt_cache=True, latency_ms=30) as server:
        provider = anthropic(server, prompt_cache=False)
        head = f"## Context\n{LONG}\n\n"
        asks = [request(text=f"{head}task {i}", shared=len(head)) for i in range(8)]
        try:
            await asyncio.gather(*(provider.complete(a) for a in asks))
        finally:
            await provider.aclose()
        assert server.stats.max_in_flight == 8


async def test_a_failed_first_request_hands_the_turn_to_a_waiting_one() -> None:
    warming = PrefixWarming()
    order: list[str] = []
    release = asyncio.Event()

    async def first() -> None:
        with pytest.raises(RuntimeError):
            async with warming.turn("k"):
                order.append("first sent")
                await release.wait()
                raise RuntimeError("HTTP 500")

    async def follower(name: str) -> None:
        async with warming.turn("k"):
            order.append(f"{name} sent")
            await asyncio.sleep(0.01)

    tasks = [asyncio.create_task(first())]
    await asyncio.sleep(0)
    tasks += [asyncio.create_task(follower("a")), asyncio.create_task(follower("b"))]
    await asyncio.sleep(0.01)
    assert order == ["first sent"]  # the others wait for the first answer
    release.set()
    await asyncio.gather(*tasks)
    assert order == ["first sent", "a sent", "b sent"]  # a wrote, then b read


# --- the switch ---------------------------------------------------------------------------


def test_prose_toml_turns_prompt_caching_off(tmp_path: Any) -> None:
    (tmp_path / "prose.toml").write_text('provider = "anthropic"\nprompt_cache = false\n')
    settings = load_settings(tmp_path, env={"ANTHROPIC_API_KEY": "k"})
    assert settings.prompt_cache is False
    assert settings.public_dict()["prompt_cache"] is False
    provider = open_provider(settings)
    assert provider.inner.prompt_cache is False  # type: ignore[attr-defined]
    assert load_settings(tmp_path, env={"ANTHROPIC_API_KEY": "k"}, prompt_cache=True).prompt_cache


def test_a_prompt_cache_setting_that_is_not_a_boolean_is_refused(tmp_path: Any) -> None:
    (tmp_path / "prose.toml").write_text('provider = "anthropic"\nprompt_cache = "no"\n')
    with pytest.raises(ProviderConfigError, match="`prompt_cache` must be true or false"):
        load_settings(tmp_path, env={"ANTHROPIC_API_KEY": "k"})


def test_caching_is_on_by_default() -> None:
    assert ProviderSettings(provider="anthropic").prompt_cache is True

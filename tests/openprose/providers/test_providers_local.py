"""End to end on the real embedded model; skipped when the `[local]` extra is not installed."""

from __future__ import annotations

import asyncio

import pytest

from openprose.providers import (
    Message,
    ModelRequest,
    ProviderSettings,
    local_model_installed,
    open_provider,
    resolve_model,
)

pytestmark = pytest.mark.skipif(
    not local_model_installed(), reason="needs pip install 'openprose[local]'"
)


async def test_smollm2_answers_in_process() -> None:
    settings = ProviderSettings(provider="local")
    provider_name, model = resolve_model("sonnet", settings)
    provider = open_provider(settings)
    request = ModelRequest(
        model=model,
        messages=(Message("user", "What is the capital of France? Answer in one word."),),
        system="You are a helpful assistant.",
        max_tokens=16,
        temperature=0.0,
    )
    try:
        first, second = await asyncio.gather(provider.complete(request), provider.complete(request))
    finally:
        await provider.aclose()
    assert provider_name == "local"
    assert "paris" in first.text.lower()
    assert first.text == second.text  # temperature 0, serialized calls: deterministic
    assert first.provider == "local" and first.model == "smollm2-135m-instruct"
    assert first.usage.input_tokens > 10 and 0 < first.usage.output_tokens <= 16
    assert first.finish_reason in ("stop", "length")

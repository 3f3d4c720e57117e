"""Prompt-cache counts of an answer travel with it: the journal, the audit trail and the
run's figures carry them; a run without any keeps its earlier form."""

from __future__ import annotations

from typing import Any

import orjson

from openprose.providers.base import ModelRequest, ModelResponse, Usage
from openprose.record.audit import AUDIT_FILE


class CachedAnswers:
    """A provider whose every answer read 2,900 of its 3,000 prompt tokens from a cache."""

    name = "anthropic"

    def __init__(self, usage: Usage) -> None:
        self.usage = usage

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse(
            "ok", self.usage, "end_turn", "req_1", "claude-sonnet-5-5", "anthropic"
        )

    async def aclose(self) -> None:
        return None


def test_cache_counts_reach_the_journal_the_audit_trail_and_the_figures(vm: Any) -> None:
    result = vm.run('output a = session "Summarize"\n', CachedAnswers(Usage(3000, 10, 2900, 90)))
    assert result.status == "succeeded", result.error
    (finished,) = vm.events(result, "session_finished")
    assert finished["response"]["usage"] == {
        "input_tokens": 3000,
        "output_tokens": 10,
        "cache_read_tokens": 2900,
        "cache_write_tokens": 90,
    }
    trail = (result.run_dir / AUDIT_FILE).read_bytes()
    usages = [
        m["payload"]["usage"]
        for m in map(orjson.loads, trail.splitlines())
        if "usage" in (m.get("payload") or {})
    ]
    assert {"input_tokens": 3000, "output_tokens": 10, "cache_read_tokens": 2900,
            "cache_write_tokens": 90} in usages  # fmt: skip
    assert (result.usage["cache_read_tokens"], result.usage["cache_write_tokens"]) == (2900, 90)


def test_a_run_without_cache_counts_keeps_its_earlier_form(vm: Any) -> None:
    result = vm.run('output a = session "Summarize"\n', CachedAnswers(Usage(3000, 10)))
    (finished,) = vm.events(result, "session_finished")
    assert finished["response"]["usage"] == {"input_tokens": 3000, "output_tokens": 10}
    assert not any(key.startswith("cache_") for key in result.usage)

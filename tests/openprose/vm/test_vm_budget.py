"""Budgets: a run that would never end stops as `stopped: budget`, resumable with more."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any

from openprose.parser import parse_text
from openprose.providers.prices import Prices
from openprose.vm.runner import RunResult, VMConfig, resume_run

FOREVER = 'loop:\n  session "Work"\n'


def _resume(vm: Any, result: RunResult, provider: Any, **config: Any) -> RunResult:
    text = (result.run_dir / "program.prose").read_text()
    parsed = parse_text(text, str(vm.project / "main.prose"))
    return asyncio.run(
        resume_run(
            result.run_dir,
            parsed.program,
            provider=provider,
            project_dir=vm.project,
            config=replace(vm.FAST, **config),
        )
    )


def test_a_loop_that_never_ends_stops_at_the_session_budget(vm: Any) -> None:
    provider = vm.spy()
    result = vm.run(FOREVER, provider, config=replace(vm.FAST, max_sessions=5))
    assert result.status == "stopped"
    assert (result.error or "").startswith("stopped: budget")
    assert "--max-sessions" in (result.error or "") and f"prose resume {result.run_id}" in (
        result.error or ""
    )
    assert len(provider.requests) == 5
    assert '"status": "stopped"' in (result.run_dir / "run.json").read_text()


def test_a_stopped_run_resumes_with_a_larger_budget_and_not_with_the_same(vm: Any) -> None:
    result = vm.run(FOREVER, vm.spy(), config=replace(vm.FAST, max_sessions=3))
    same = vm.spy()
    again = _resume(vm, result, same, max_sessions=3)
    assert again.status == "stopped" and same.requests == []  # the 3 are served, none sent
    larger = vm.spy()
    more = _resume(vm, result, larger, max_sessions=7)
    assert more.status == "stopped" and len(larger.requests) == 4
    assert more.usage["requests_served_from_journal"] == 3


def test_the_default_budget_ends_an_endless_loop(vm: Any) -> None:
    assert VMConfig().max_sessions == 1000
    provider = vm.spy()
    result = vm.run(FOREVER, provider)
    assert result.status == "stopped" and len(provider.requests) == 1000


def test_judgments_count_and_a_budget_cannot_be_caught(vm: Any) -> None:
    provider = vm.spy(vm.verdicts(("done", False)))
    source = """try:
  loop until **the work is done**:
    session "Work"
catch:
  session "Recover"
"""
    result = vm.run(source, provider, config=replace(vm.FAST, max_sessions=4))
    assert result.status == "stopped"
    assert len(provider.requests) == 4  # judgment, session, judgment, session
    assert provider.sent("^Recover") == []


def test_token_budget(vm: Any) -> None:
    provider = vm.spy()
    result = vm.run(FOREVER, provider, config=replace(vm.FAST, max_run_tokens=50))
    assert result.status == "stopped" and "--max-tokens" in (result.error or "")
    spent = result.usage["input_tokens"] + result.usage["output_tokens"]
    assert spent >= 50 and len(provider.requests) < 50


def test_cost_budget_with_a_price_from_the_settings(vm: Any, tmp_path: Path) -> None:
    import asyncio as aio

    from openprose.vm.runner import run_program

    prices = Prices.default().extended({"sonnet": {"input": 100_000.0, "output": 100_000.0}})
    source = FOREVER
    parsed = parse_text(source, str(vm.project / "main.prose"))
    provider = vm.spy()
    result = aio.run(
        run_program(
            parsed.program,
            source,
            provider=provider,
            project_dir=vm.project,
            config=replace(vm.FAST, max_cost=5.0),
            prices=prices,
        )
    )
    assert result.status == "stopped" and "--max-cost" in (result.error or "")
    assert result.usage["cost_usd"] >= 5.0 and result.usage["unpriced_models"] == {}


def test_cost_budget_refuses_a_model_without_a_price(vm: Any) -> None:
    provider = vm.spy()
    result = vm.run(FOREVER, provider, config=replace(vm.FAST, max_cost=1.0))
    assert result.status == "aborted" and provider.requests == []
    assert "no price" in (result.error or "") and "[prices." in (result.error or "")

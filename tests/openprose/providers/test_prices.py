"""The price table: every default model priced, snapshots, tiers, prose.toml extensions."""

from __future__ import annotations

import pytest

from openprose.providers import ProviderConfigError
from openprose.providers.base import ModelResponse, Usage
from openprose.providers.prices import Prices, cost_amount
from openprose.providers.settings import DEFAULT_ALIASES, LOCAL_MODEL_ID
from openprose.vm.runtime import RunStats

MILLION = 1_000_000


def test_every_default_model_has_a_price() -> None:
    prices = Prices.default()
    defaults = {model for table in DEFAULT_ALIASES.values() for model in table.values()}
    assert {m for m in (*defaults, LOCAL_MODEL_ID) if prices.price_of(m) is None} == set()


def test_the_published_prices_of_the_default_claude_models() -> None:
    prices = Prices.default()
    assert prices.price_of("claude-sonnet-5-5").cost(MILLION, MILLION) == 12.0  # type: ignore[union-attr]
    assert prices.price_of("claude-opus-5-5").cost(MILLION, MILLION) == 24.0  # type: ignore[union-attr]


def test_a_price_by_prompt_size_is_taken_per_request() -> None:
    haiku = Prices.default().price_of("claude-haiku-5-5")
    assert haiku is not None
    assert haiku.cost(100_000, 1000) == pytest.approx(0.0105)  # up to 100k prompt tokens
    assert haiku.cost(100_001, 1000) == pytest.approx(0.0525005)  # above: the long prices


def test_snapshots_cost_what_their_model_does_and_siblings_are_not_guessed() -> None:
    prices = Prices.default()
    assert prices.price_of("claude-haiku-4-5-20251001") == prices.price_of("claude-haiku-4-5")
    assert prices.price_of("gpt-4.1-2025-04-14") == prices.price_of("gpt-4.1")
    assert prices.price_of("gpt-4.1-turbo") is None


def test_prose_toml_extends_and_overrides_the_table() -> None:
    prices = Prices.default().extended(
        {"my-model": {"input": 1, "output": 2}, "gpt-4.1": {"input": 0, "output": 0}}
    )
    assert prices.price_of("my-model").cost(MILLION, MILLION) == 3.0  # type: ignore[union-attr]
    assert prices.price_of("gpt-4.1").cost(MILLION, MILLION) == 0.0  # type: ignore[union-attr]
    assert Prices.default().price_of("my-model") is None  # the packaged table is untouched


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ([1, 2], "[prices] must be a table"),
        ({"m": 3}, "must be a table: input = USD"),
        ({"m": {"input": 1}}, "`output` (USD per million tokens) is missing"),
        ({"m": {"input": 1, "output": -1}}, "`output` must be a number >= 0"),
        ({"m": {"input": "1", "output": 1}}, "`input` must be a number >= 0"),
        ({"m": {"input": 1, "output": 1, "cached": 1}}, "unknown key(s) cached"),
    ],
)
def test_a_bad_prices_table_is_a_clear_error(table: object, message: str) -> None:
    with pytest.raises(ProviderConfigError) as caught:
        Prices.default().extended(table)
    assert message in str(caught.value) and "prose.toml" in str(caught.value)


def test_run_usage_says_which_models_have_no_price() -> None:
    stats = RunStats()
    stats.count("claude-sonnet-5-5", ModelResponse(text="a", usage=Usage(MILLION, 0)))
    stats.count("mystery", ModelResponse(text="b", usage=Usage(10, 5)))
    usage = stats.usage()
    assert usage["cost_usd"] == 2.0 and usage["unpriced_models"] == {"mystery": 15}


def test_a_cost_is_never_said_as_0_0000() -> None:
    assert cost_amount(0.0, {LOCAL_MODEL_ID: {}}) == "free (local model)"
    assert cost_amount(0.0, ["qwen2.5:7b", LOCAL_MODEL_ID]) == (
        f"free (priced at $0: qwen2.5:7b, {LOCAL_MODEL_ID})"
    )
    assert cost_amount(0.00004, [LOCAL_MODEL_ID, "gpt-4.1"]) == "under $0.0001"
    assert cost_amount(0.0, {}) == "$0 (no model was asked)"  # e.g. a batch of invalid lines
    assert cost_amount(1.23456, ["gpt-4.1"]) == "$1.2346"


def test_the_local_models_run_and_batch_summaries_say_free(tmp_path: object) -> None:
    """`prose run` and `prose batch` word a local run's cost alike (the API's
    `usage["cost_usd"]` stays the number 0.0: free, never unknown)."""
    import contextlib
    import io
    from pathlib import Path

    from openprose.batches.progress import cost_text
    from openprose.cli.run import print_summary
    from openprose.vm.runner import RunResult

    usage = {
        "input_tokens": 32,
        "output_tokens": 23,
        "by_model": {LOCAL_MODEL_ID: {"input_tokens": 32, "output_tokens": 23}},
        "cost_usd": 0.0,
        "unpriced_models": {},
    }
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        print_summary(RunResult("r", Path("."), "succeeded", usage=usage), "local")
    assert "cost: free (local model)" in printed.getvalue().splitlines()
    assert cost_text(0.0, {}, usage["by_model"]) == "free (local model)"  # type: ignore[arg-type]
    assert cost_text(0.0, {"mine": 9}, ["mine"]) == "unknown (no price for mine)"
    assert cost_text(0.5, {"mine": 9}, ["mine", "gpt-4.1"]) == (
        "$0.5000 + unknown (no price for mine)"
    )


# --- prompt caching -------------------------------------------------------------------------


def test_cache_reads_and_writes_are_priced_at_their_rates() -> None:
    """Anthropic: reads 0.1x input, writes 1.25x; the rest of the prompt full price."""
    sonnet = Prices.default().price_of("claude-sonnet-5-5")  # input $2, output $10
    assert sonnet is not None
    # 1M prompt tokens: 600k read ($0.12), 300k written ($0.75), 100k uncached ($0.20)
    assert sonnet.cost(MILLION, 0, 600_000, 300_000) == pytest.approx(0.12 + 0.75 + 0.20)
    assert sonnet.cost(MILLION, MILLION, 0, 0) == sonnet.cost(MILLION, MILLION)
    for model in ("claude-sonnet-5-5", "claude-opus-5-5", "claude-haiku-4-5", "claude-opus-4-1"):
        price = Prices.default().price_of(model)
        assert price is not None and price.cache_read is not None
        assert price.cache_read == pytest.approx(price.input * 0.1)
        assert price.cache_write == pytest.approx(price.input * 1.25)


def test_openai_cached_input_is_the_listed_rate() -> None:
    prices = Prices.default()
    assert prices.price_of("gpt-4.1").cost(MILLION, 0, MILLION, 0) == 0.5  # type: ignore[union-attr]
    assert prices.price_of("gpt-4o").cost(MILLION, 0, MILLION, 0) == 1.25  # type: ignore[union-attr]


def test_a_model_without_cache_rates_pays_input_for_cached_tokens() -> None:
    """Never less than it may cost: a cached token of an unknown rate costs `input`."""
    custom = Prices.default().extended({"mine": {"input": 1.0, "output": 2.0}})
    price = custom.price_of("mine")
    assert price is not None
    assert price.cost(MILLION, 0, 500_000, 100_000) == price.cost(MILLION, 0) == 1.0
    cached = Prices.default().extended({"mine": {"input": 1.0, "output": 2.0, "cache_read": 0.1}})
    assert cached.price_of("mine").cost(MILLION, 0, MILLION, 0) == pytest.approx(0.1)  # type: ignore[union-attr]


def test_above_the_long_prompt_threshold_cache_rates_scale_with_input() -> None:
    haiku = Prices.default().price_of("claude-haiku-5-5")  # input $0.10, long $0.50 (5x)
    assert haiku is not None
    # 200k prompt tokens, all read from the cache: 200k x $0.01 x 5
    assert haiku.cost(200_000, 0, 200_000, 0) == pytest.approx(0.01)


def test_a_cache_rate_must_be_a_number() -> None:
    with pytest.raises(ProviderConfigError, match="`cache_read` must be a number >= 0"):
        Prices.default().extended({"mine": {"input": 1, "output": 1, "cache_read": "cheap"}})


def test_a_runs_figures_count_cache_tokens_and_their_cost() -> None:
    stats = RunStats()
    answer = ModelResponse("ok", Usage(3000, 10, 2900, 0), model="claude-sonnet-5-5")
    stats.count("claude-sonnet-5-5", answer)
    stats.count("claude-sonnet-5-5", ModelResponse("ok", Usage(3000, 10, 0, 2990)))
    usage = stats.usage()
    assert (usage["input_tokens"], usage["cache_read_tokens"], usage["cache_write_tokens"]) == (
        6000,
        2900,
        2990,
    )
    assert usage["by_model"]["claude-sonnet-5-5"] == {
        "input_tokens": 6000,
        "output_tokens": 20,
        "cache_read_tokens": 2900,
        "cache_write_tokens": 2990,
    }
    # (100 + 10) uncached x $2 + 2900 x $0.20 + 2990 x $2.50 + 20 x $10, per million
    assert usage["cost_usd"] == pytest.approx(
        (110 * 2 + 2900 * 0.2 + 2990 * 2.5 + 20 * 10) / MILLION
    )


def test_the_run_summary_says_what_the_prompt_cache_served() -> None:
    import contextlib
    import io
    from pathlib import Path

    from openprose.cli.run import print_summary
    from openprose.vm.runner import RunResult

    stats = RunStats()
    stats.count("claude-sonnet-5-5", ModelResponse("ok", Usage(3000, 10, 2900, 90)))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        print_summary(RunResult("r", Path("."), "succeeded", usage=stats.usage()), "anthropic")
    assert "tokens: 3000 in (2900 cache read, 90 cache write), 10 out;" in printed.getvalue()

"""What the estimate's walk counts for each construct (`openprose.vm.estimates`)."""

from __future__ import annotations

from pathlib import Path

import pytest

import openprose
from openprose.parser import parse_text
from openprose.providers.prices import Price, Prices
from openprose.vm.estimates import Estimate, Range, estimate_program
from openprose.vm.runtime import VMConfig

CONFIG = VMConfig(max_tokens=100, max_turns=4)


def estimate(text: str, **options: object) -> Estimate:
    program = parse_text(text, "p.prose").program
    return estimate_program(program, config=options.pop("config", CONFIG), **options)  # type: ignore[arg-type]


def calls(found: Estimate, alias: str) -> Range:
    return next(row.calls for row in found.models if row.alias == alias)


def test_a_session_is_one_call_of_at_most_max_tokens() -> None:
    found = estimate('session "Say hello to the world"\n')
    assert found.sessions == Range(1, 1)
    assert found.output_tokens == Range(0, 100)
    assert found.input_tokens.low == 5  # the words of the prompt
    assert found.unbounded == ()


def test_loop_until_with_max_bounds_bodies_and_judgments() -> None:
    found = estimate('loop until **the plan is good** (max: 3):\n  session "Improve"\n')
    assert calls(found, "sonnet") == Range(0, 3)
    assert calls(found, "haiku") == Range(1, 8)  # 1..4 conditions, each asked twice at most


def test_loop_until_without_max_is_unbounded_and_says_where() -> None:
    found = estimate('session "a"\nloop until **the plan is good**:\n  session "Improve"\n')
    assert found.sessions.high is None and found.sessions.low == 2
    assert found.unbounded == ("p.prose:2: `loop until` without `max:`",)


def test_a_plain_loop_with_max_runs_exactly_max_times() -> None:
    assert estimate('loop (max: 4):\n  session "Step"\n').sessions == Range(4, 4)


def test_repeat_and_for_multiply_their_bodies() -> None:
    text = 'repeat 3:\n  session "a"\nfor x in ["p", "q"]:\n  session "b {x}"\n  session "c"\n'
    assert estimate(text).sessions == Range(7, 7)


def test_for_over_an_input_is_bounded_by_the_input_given() -> None:
    text = 'input items: "list"\nfor x in items:\n  session "Study {x}"\n'
    assert estimate(text).sessions.high is None
    assert "input `items`, not given" in estimate(text).unbounded[0]
    assert estimate(text, inputs={"items": ["a", "b", "c"]}).sessions == Range(3, 3)


def test_retry_multiplies_requests_not_sessions() -> None:
    found = estimate('session "Flaky"\n  retry: 3\n')
    assert found.sessions == Range(1, 1) and found.requests == Range(1, 4)


def test_if_takes_the_cheapest_and_the_dearest_path() -> None:
    text = (
        'if **it is broken**:\n  session "Fix"\n  session "Test"\n'
        'elif **it is slow**:\n  session "Tune"\nelse:\n  session "Ship"\n'
    )
    found = estimate(text)
    assert calls(found, "sonnet") == Range(1, 2)
    assert calls(found, "haiku") == Range(1, 4)  # one or two conditions, two attempts each


def test_choice_asks_once_and_runs_one_option() -> None:
    text = 'choice **severity**:\n  option "A":\n    session "x"\n  option "B":\n    do:\n      session "y"\n      session "z"\n'
    found = estimate(text)
    assert calls(found, "sonnet") == Range(1, 2) and calls(found, "haiku") == Range(1, 2)


def test_a_race_needs_only_its_winners() -> None:
    text = 'parallel ("first"):\n  session "a"\n  session "b"\n  session "c"\n'
    assert estimate(text).sessions == Range(1, 3)
    text = 'parallel ("any", count: 2) for x in ["a", "b", "c", "d"]:\n  session "{x}"\n'
    assert estimate(text).sessions == Range(2, 4)


def test_a_filter_may_ask_a_verdict_per_item() -> None:
    text = 'let k = ["a", "b"] | filter:\n  session "Keep {item}?"\n'
    found = estimate(text)
    assert calls(found, "sonnet") == Range(2, 2) and calls(found, "haiku") == Range(0, 4)


def test_reduce_runs_one_less_than_its_items() -> None:
    text = 'let r = ["a", "b", "c"] | reduce(acc, x):\n  session "Merge {acc} {x}"\n'
    assert estimate(text).sessions == Range(2, 2)


def test_a_tool_agent_may_take_max_turns() -> None:
    text = 'agent w:\n  permissions:\n    read: ["*"]\nsession: w\n  prompt: "Look"\n'
    found = estimate(text)
    assert found.sessions == Range(1, 4)


def test_a_persistent_agent_adds_a_memory_update() -> None:
    text = 'agent s:\n  model: haiku\n  persist: true\nsession: s\n  prompt: "Note"\n'
    assert calls(estimate(text), "haiku") == Range(2, 2)


def test_a_recursive_block_is_unbounded() -> None:
    text = 'block f(x):\n  session "a {x}"\n  do f(x)\ndo f("go")\n'
    found = estimate(text)
    assert found.sessions.high is None
    assert any("block `f` calls itself" in why for why in found.unbounded)


def test_an_interpolated_input_not_given_leaves_input_tokens_unbounded() -> None:
    text = 'input topic: "t"\nsession "Write about {topic}"\n'
    assert estimate(text).input_tokens.high is None
    assert estimate(text, inputs={"topic": "rain"}).input_tokens.high is not None


def test_cost_is_priced_per_model_and_unknown_models_are_named() -> None:
    prices = Prices({"m": Price(input=1_000_000.0, output=2_000_000.0)})  # $1 / $2 a token
    text = 'session "Hi there"\n  model: m\nsession "x"\n  model: other\n'
    found = estimate(text, prices=prices, resolve=lambda alias: alias)
    row = next(r for r in found.models if r.model == "m")
    assert row.cost is not None and row.cost.low == 2.0  # two words in, nothing out
    assert row.cost.high == row.input_tokens.high * 1.0 + 100 * 2.0  # type: ignore[operator]
    assert found.cost is None and found.unpriced == ["other"]


def test_a_long_prompt_tier_prices_the_upper_bound_at_the_long_rate() -> None:
    tiered = Prices({"m": Price(1.0, 1.0, long_prompt_tokens=10, long_input=5.0, long_output=5.0)})
    found = estimate('session "Hello"\n  model: m\n', prices=tiered, resolve=lambda a: a)
    row = found.models[0]
    assert row.cost is not None and row.cost.high is not None
    high_in, high_out = row.input_tokens.high, row.output_tokens.high
    assert row.cost.high == pytest.approx((high_in * 5.0 + high_out * 5.0) / 1e6)  # type: ignore[operator]


def test_an_imported_program_is_walked(tmp_path: Path) -> None:
    (tmp_path / "helper.prose").write_text('input topic: "t"\nsession "a {topic}"\nsession "b"\n')
    main = tmp_path / "main.prose"
    main.write_text('use "./helper.prose"\nlet r = helper(topic: "x")\n')
    assert openprose.estimate(main, project_dir=tmp_path).sessions == Range(2, 2)


def test_the_python_api_takes_program_text_and_inputs(tmp_path: Path) -> None:
    text = 'input items: "l"\nfor x in items:\n  session "Do {x}"\n'
    found = openprose.estimate(text, inputs={"items": [1, 2, 3]}, project_dir=tmp_path)
    assert found.sessions == Range(3, 3)
    assert found.to_json()["sessions"] == {"low": 3, "high": 3}
    missing = openprose.estimate(text, project_dir=tmp_path)  # the input is not given
    assert missing.sessions.high is None and "input `items`" in missing.unbounded[0]
    with pytest.raises(openprose.RunError, match="E"):
        openprose.estimate('session "a"\nsession\n', project_dir=tmp_path)


def test_a_string_iterated_counts_as_the_vm_reads_it() -> None:
    assert estimate('for x in "one text":\n  session "a {x}"\n').sessions == Range(1, 1)
    assert estimate('for x in "[1, 2, 3]":\n  session "a {x}"\n').sessions == Range(3, 3)
    text = 'let v = session "List"\nfor x in "{v}":\n  session "a {x}"\n'
    assert estimate(text).sessions.high is None  # the answer may be a JSON array


def test_the_lower_cost_takes_the_base_rate_however_many_requests_add_up() -> None:
    tiered = Prices({"m": Price(1.0, 1.0, long_prompt_tokens=10, long_input=5.0, long_output=5.0)})
    text = 'repeat 20:\n  session "one two three"\n    model: m\n'
    row = estimate(text, prices=tiered, resolve=lambda a: a).models[0]
    assert row.input_tokens.low == 60  # over the threshold only all together
    assert row.cost is not None and row.cost.low == pytest.approx(60 / 1e6)

"""An evaluator answer that cannot be read, even when asked again (decisions, "Programs as
people write them (session 14)"): a program error at the condition, naming the evaluator,
its last answer and the way out — never a guessed verdict — that `try`/`catch` can handle
and `prose resume` continues after the cause is fixed."""

from __future__ import annotations

from typing import Any

LOOP = """\
let draft = session "Write a draft"
loop until **the draft is polished** (max: 4):
  draft = session "Improve the draft"
    context: draft
session "Publish"
  context: draft
"""

RAMBLING = [{"match": "^(Condition|Your reply)", "answer": "Hmm, it depends on what you mean."}]


def test_the_run_fails_at_the_condition_naming_the_answer_and_the_way_out(vm: Any) -> None:
    provider = vm.spy(RAMBLING)
    result = vm.run(LOOP, provider)
    assert result.status == "failed"
    error = result.error or ""
    assert "main.prose:2:12" in error
    assert (
        "the evaluator (haiku) gave no usable condition answer for **the draft is polished**"
        in error
    )
    assert "its last answer: 'Hmm, it depends on what you mean.'" in error
    assert "--evaluator sonnet" in error and "never guessed" in error
    assert not provider.sent("^Publish")  # nothing after the condition ran
    assert len(provider.sent("^(Condition|Your reply)")) == 2  # asked, then asked again


def test_try_catch_handles_it_like_any_program_error(vm: Any) -> None:
    source = (
        "try:\n"
        "  loop until **the draft is polished** (max: 4):\n"
        '    session "Improve the draft"\n'
        "catch as err:\n"
        '  session "Explain the failure"\n'
        "    context: err\n"
    )
    provider = vm.spy(RAMBLING)
    result = vm.run(source, provider)
    assert result.status == "succeeded", result.error
    (explained,) = provider.sent("^Explain the failure")
    assert "Hmm, it depends on what you mean." in explained.last_user_text()


def test_a_long_answer_is_shown_on_one_line_and_cut(vm: Any) -> None:
    rambling = "word " * 100 + "\n\nmore"
    provider = vm.spy([{"match": "^(Condition|Your reply)", "answer": rambling}])
    result = vm.run(LOOP, provider)
    error = result.error or ""
    shown = error.split("its last answer: ")[1].split("); a condition")[0]
    assert "\n" not in shown and len(shown) <= 122 and shown.endswith("…'")


FINE = [{"match": "^Condition", "answer": '{"verdict": true, "reason": "polished"}'}]


def test_resuming_the_failed_run_asks_the_judgment_again(vm: Any) -> None:
    # The failed answers are not served from the journal: a resume with another evaluator
    # (or after rewording nothing at all, with a model that now answers) can go on.
    failed = vm.run(LOOP, vm.spy(RAMBLING))
    assert failed.status == "failed"
    provider = vm.spy(FINE)
    resumed = vm.resume(failed.run_dir, provider)
    assert resumed.status == "succeeded", resumed.error
    assert len(provider.sent("^Condition")) == 1  # asked again, once
    assert provider.sent("^Publish") and not provider.sent("^Write a draft")  # served


def test_a_handled_failure_keeps_its_path_when_the_run_is_resumed(vm: Any) -> None:
    # The program caught the failure, then the run failed later: resuming serves the same
    # failure (the catch body's path), not a fresh verdict that would take another one.
    source = (
        "try:\n"
        "  if **the draft is polished**:\n"
        '    session "Ship it"\n'
        "catch:\n"
        '  session "Explain the failure"\n'
        'session "Then this fails"\n'
    )
    failing = [*RAMBLING, {"match": "^Then this fails", "answer": "x", "failures": ["error"]}]
    first = vm.spy(failing)
    failed = vm.run(source, first)
    assert failed.status == "failed" and "injected error" in (failed.error or "")
    assert first.sent("^Explain the failure")  # the catch ran
    provider = vm.spy(FINE)
    resumed = vm.resume(failed.run_dir, provider)
    assert resumed.status == "succeeded", resumed.error
    assert not provider.sent("^Condition") and not provider.sent("^Ship it")
    assert provider.sent("^Then this fails")

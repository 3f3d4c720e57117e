"""A session's user message: long context goes before the task (where a prompt cache can
keep it), short context after it, as it always was."""

from __future__ import annotations

import random

from hypothesis import example, given, settings
from hypothesis import strategies as st

from openprose.vm.prompts import (
    LONG_CONTEXT_CHARS,
    ContextItem,
    ForkOutputs,
    History,
    user_message,
)


def test_short_context_follows_the_task_and_nothing_is_shared() -> None:
    text, shared = user_message("Describe it", [ContextItem("a", "red")], "notes")
    assert text == "Describe it\n\n## Your memory\nnotes\n\n## Context\n### a\nred"
    assert shared == 0
    assert user_message("Just this", []) == ("Just this", 0)


def test_long_context_comes_first_and_is_the_shared_head() -> None:
    document = "fact " * (LONG_CONTEXT_CHARS // 5 + 1)
    text, shared = user_message("Summarize point 3", [ContextItem("doc", document)], "notes")
    head = f"## Context\n### doc\n{document}\n\n"
    assert text == head + "## Your memory\nnotes\n\n## Your task\nSummarize point 3"
    assert shared == len(head)
    # two sessions of a pmap: the same head, whatever their tasks
    other, other_shared = user_message("Summarize point 4", [ContextItem("doc", document)])
    assert other[:other_shared] == text[:shared]
    assert other.endswith("\n\n## Your task\nSummarize point 4")


# --- a thread's history: flat memory, the same window ------------------------------------


def _labels(history: History, limit: int) -> list[str]:
    return [item.label for item in history.recent(limit)]


def test_a_long_thread_holds_about_twice_its_window_and_counts_the_rest() -> None:
    history = History(keep=5)
    for number in range(10_000):
        history.add(f"s{number}", "answer")
    assert len(history) == 10_000
    assert len(history.entries) < 10
    assert _labels(history, 5) == [f"s{number}" for number in range(9_995, 10_000)]


def test_a_fan_out_holds_only_the_forks_its_window_can_show() -> None:
    root = History(keep=3)
    root.add("before", "x")
    forks = ForkOutputs(root.keep)
    most_held = 0
    for index in range(10_000):
        fork = root.fork()
        fork.add(f"item {index}", "y")
        forks.add(index, fork)
        most_held = max(most_held, len(forks.held))
    assert most_held <= 4 * root.keep + 1
    root.join_forks(forks)
    assert len(root) == 10_001
    assert _labels(root, 3) == ["item 9997", "item 9998", "item 9999"]


# What a thread would show if it kept everything: (label, visible count) per operation.
Plan = list[tuple[int, list[int]]]  # (outputs added first, outputs of each fork)


@settings(max_examples=200, deadline=None)
@given(
    keep=st.integers(1, 4),
    plan=st.lists(
        st.tuples(st.integers(0, 6), st.lists(st.integers(0, 9), max_size=12)), max_size=6
    ),
    finish=st.randoms(use_true_random=False),
    by_race=st.booleans(),
)
@example(keep=1, plan=[(0, [3, 0, 1])], finish=random.Random(0), by_race=False)
def test_the_window_is_what_an_unbounded_thread_would_show(
    keep: int, plan: Plan, finish: random.Random, by_race: bool
) -> None:
    """Forks finish in any order; the joined thread shows and counts exactly what keeping
    every output would."""
    history, everything = History(keep=keep), []
    for step, (added, forks) in enumerate(plan):
        for number in range(added):
            history.add(f"{step}.{number}", "")
            everything.append(f"{step}.{number}")
        made = [history.fork() for _ in forks]
        for index, (fork, outputs) in enumerate(zip(made, forks, strict=True)):
            for number in range(outputs):
                fork.add(f"{step}/{index}.{number}", "")
                # a fork's own window: what it inherited, then its outputs
                assert len(fork) == len(everything) + number + 1
            assert (
                _labels(fork, keep)
                == (everything + [f"{step}/{index}.{n}" for n in range(outputs)])[-keep:]
            )
        if by_race:
            history.join(made)
        else:
            gathered = ForkOutputs(keep)
            for index in finish.sample(range(len(made)), len(made)):
                gathered.add(index, made[index])
            history.join_forks(gathered)
        for index, outputs in enumerate(forks):
            everything += [f"{step}/{index}.{n}" for n in range(outputs)]
        assert len(history) == len(everything)
        assert _labels(history, keep) == everything[-keep:]


def test_a_fork_sees_its_parent_as_it_was_at_the_fork() -> None:
    parent = History(keep=4)
    parent.add("a", "")
    fork = parent.fork()
    parent.add("b", "")
    fork.add("c", "")
    assert _labels(fork, 4) == ["a", "c"]
    assert len(fork) == 2

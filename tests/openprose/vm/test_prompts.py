"""A session's user message: long context goes before the task (where a prompt cache can
keep it), short context after it, as it always was."""

from __future__ import annotations

from openprose.vm.prompts import LONG_CONTEXT_CHARS, ContextItem, user_message


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

"""Property blocks per context: which names are known where, and how each value is judged."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from openprose.diagnostics import Diagnostic

Check = Callable[..., list[Diagnostic]]

CASES: dict[str, tuple[str, list[tuple[str, int, int]]]] = {
    "a prompt property is a session's prompt (no E003)": ('session\n  prompt: "Do it"\n', []),
    "an inline prompt and a prompt property": (
        'session "a"\n  prompt: "b"\n',
        [("E009", 2, 3)],
    ),
    "agent-only properties are unknown on sessions": (
        'session "a"\n  persist: true\n  skills: ["x"]\n  permissions:\n    bash: deny\n',
        [("W005", 2, 3), ("W005", 3, 3), ("W005", 4, 3)],
    ),
    "resume takes session properties": (
        (
            "agent a:\n  persist: true\nsession: a\nresume: a\n  model: haiku\n  retry: 2\n"
            "  backoff: linear\n"
        ),
        [],
    ),
    "every agent property of the grammar is known": (
        (
            'use "@s/search"\nlet notes = session "N"\nagent a:\n  model: opus\n  prompt: "P"\n'
            '  persist: project\n  skills: ["search"]\n  permissions:\n    bash: deny\n'
            "  context: notes\n  backoff: none\n"
        ),
        [],
    ),
    "a quoted model name is not a model": ('agent a:\n  model: "opus"\n', [("E008", 2, 10)]),
    "a session's model override is checked too": (
        'session "a"\n  model: gpt\n',
        [("E008", 2, 10)],
    ),
    "persist false is not a persist value": ("agent a:\n  persist: false\n", [("E167", 2, 12)]),
    "retry on an agent warns and is still validated": (
        "agent a:\n  retry: 0\n",
        [("W151", 2, 3), ("E163", 2, 10)],
    ),
    "pattern permissions take a string or allow/deny/prompt": (
        'agent a:\n  permissions:\n    read: "*.md"\n    write: allow\n    execute: ["bin/*"]\n',
        [],
    ),
    "switch permissions take only allow/deny/prompt": (
        'agent a:\n  permissions:\n    bash: ["ls"]\n',
        [("W009", 3, 11)],
    ),
    "a repeated permission": (
        "agent a:\n  permissions:\n    bash: deny\n    bash: allow\n",
        [("E009", 4, 5)],
    ),
    "skills may name an import's alias or its slug": (
        'use "@anthropic/summarizer" as sum\nagent a:\n  skills: ["sum", "summarizer"]\n',
        [],
    ),
    "a whitespace-only prompt property in a session": (
        'agent a:\n  model: opus\nsession: a\n  prompt: "  "\n',
        [("W002", 4, 11)],
    ),
    "a whitespace-only prompt property in an agent": (
        'agent a:\n  prompt: "  "\n',
        [("W004", 2, 11)],
    ),
    "a literal as the whole context": ('session "a"\n  context: "notes"\n', [("E143", 2, 12)]),
    "context may access a program result's output": (
        'use "@a/b" as b\nlet r = b(x: 1)\nsession "s"\n  context: [r.out]\n',
        [("I002", 1, 5)],
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_property_rule(name: str, checked: Check) -> None:
    source, expected = CASES[name]
    assert [(d.code, d.line, d.column) for d in checked(source)] == expected

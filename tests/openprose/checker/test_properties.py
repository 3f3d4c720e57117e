"""Property blocks per context: which names are known where, and how each value is judged."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from openprose.diagnostics import Diagnostic

Check = Callable[..., list[Diagnostic]]

CASES: dict[str, tuple[str, list[tuple[str, int, int]]]] = {
    # issue 20 item 6: the grammar's session needs a string or an agent on its line
    "a prompt property alone is no session prompt (E003)": (
        'session\n  prompt: "Do it"\n',
        [("E003", 1, 1)],
    ),
    # issue 20 item 1: admitted by the grammar; the inline string is the session's title
    "an inline prompt and a prompt property": ('session "a"\n  prompt: "b"\n', []),
    "two prompt properties are still E009": (
        'session "a"\n  prompt: "b"\n  prompt: "c"\n',
        [("E009", 3, 3)],
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
    # issue 20 item 3: a quoted enum value is accepted with a warning (fmt writes it bare)
    "a quoted model name warns": ('agent a:\n  model: "opus"\n', [("W170", 2, 10)]),
    "a quoted unknown model is E008": ('agent a:\n  model: "gpt-4"\n', [("E008", 2, 10)]),
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

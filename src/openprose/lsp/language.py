"""What the editor says about the language itself: one line per keyword, property and value.

Descriptions are ours, summarising the OpenProse reference; the allowed values come from the
checker's own tables, so completion offers exactly what ``prose check`` accepts.
"""

from __future__ import annotations

from openprose.checker.agents import PATTERN_PERMISSIONS, SWITCH_PERMISSIONS
from openprose.vocabulary import (
    AGENT_PROPERTIES,
    BACKOFFS,
    MODELS,
    PERMISSION_VALUES,
    SESSION_PROPERTIES,
)

KEYWORD_DOCS: dict[str, str] = {
    "use": "Import a program (registry `@handle/slug`, URL or local `.prose` file); `as` names it.",
    "as": "Names what comes before it: an import's alias, or a loop's index variable.",
    "input": 'Declare a value the caller must supply: `input name: "description"`.',
    "output": "Bind a value the program gives back to its caller: `output name = expr`.",
    "agent": "Define a reusable agent template (model, prompt, persist, skills, permissions).",
    "block": "Define a reusable block of statements, run with `do name(args)`.",
    "session": "Run one AI session: an inline prompt, an agent, or both, with properties.",
    "resume": "Continue a persistent agent's session with its memory (`resume: agent`).",
    "let": "Bind a variable that may be reassigned later.",
    "const": "Bind a variable that may not be reassigned.",
    "do": "Run an indented block in sequence, or invoke a block definition (`do name`).",
    "parallel": "Run branches concurrently; modifiers choose the join strategy and failure policy.",
    "for": "Run the body once per element of a collection (`parallel for` runs them at once).",
    "in": "Names the collection a `for` loop walks.",
    "repeat": "Run the body a fixed number of times (`repeat 3 as i:`).",
    "loop": "Run the body until a condition holds, while it holds, or up to `max` iterations.",
    "until": "Loop until the model judges the `**condition**` true.",
    "while": "Loop while the model judges the `**condition**` true.",
    "try": "Run a body; a failure inside it goes to `catch`, and `finally` always runs.",
    "catch": "Handle a failure of the `try` body (`catch as err:` binds the error).",
    "finally": "Statements that run after `try`, whether it failed or not.",
    "throw": "Fail on purpose, with an optional message.",
    "ask": 'Ask a person a question mid-run and bind the answer: `ask "..."` with options, '
    "default, timeout.",
    "choice": "Let the model pick one `option` by the `**criteria**`.",
    "option": "One labelled branch of a `choice` block.",
    "if": "Run the body when the model judges the `**condition**` true.",
    "elif": "Another condition, tried when the ones before it were false.",
    "else": "The body that runs when no condition held.",
}

PROPERTY_DOCS: dict[str, str] = {
    "model": "The model that runs the session: " + ", ".join(sorted(MODELS)) + ".",
    "prompt": "The instructions (system prompt for an agent, task for a session).",
    "persist": "Keep the agent's memory: `true` (this run), `project`, `user`, or a path string.",
    "skills": "Imported skills the agent may use, as an array of strings.",
    "permissions": "What the agent may touch: read/write/execute patterns, bash and network.",
    "context": "Earlier results the session sees: a variable, `[a, b]` or `{ a, b }`.",
    "retry": "How many times to retry the session when it fails (a positive integer).",
    "backoff": "Waiting between retries: " + ", ".join(sorted(BACKOFFS)) + ".",
    "options": "The answers a person may choose from (by number or text), for `ask`.",
    "default": "The answer taken when nobody answers within `timeout:` (or on Enter), for `ask`.",
    "timeout": 'How long an `ask` waits: seconds, or "90s", "10m", "2h", "1d".',
    "returns": (
        "The shape of the answer: fields one a line (`title: string`, `tags: list of string`, "
        '`level: "low" | "high"`, `notes: optional string`) or `schema "file.json"`.'
    ),
}

PERMISSION_DOCS: dict[str, str] = {
    "read": "Files the agent may read (an array of glob patterns).",
    "write": "Files the agent may write (an array of glob patterns).",
    "execute": "Files the agent may execute (an array of glob patterns).",
    "bash": "Shell access: allow, deny or prompt.",
    "network": (
        "Network access: allow, deny, prompt, or an array of host patterns "
        '(["api.example.com", "*.example.org"]).'
    ),
    "deny": 'Hosts never fetched, whatever network allows (["*.ads.example.com"]).',
    "mcp": (
        "Tools of the MCP servers prose.toml declares ([mcp.servers.NAME]): allow, deny, "
        'prompt, or an array of grants (["notes", "search.lookup"]).'
    ),
}

VALUE_DOCS: dict[str, str] = {
    "sonnet": "Model: balanced speed and capability.",
    "opus": "Model: the most capable, for hard reasoning.",
    "haiku": "Model: the fastest and cheapest.",
    "true": "Persist memory for this run only.",
    "project": "Persist memory in the project, across runs (`.prose/agents/`).",
    "user": "Persist memory for the user, across projects.",
    "none": "Retry at once, without waiting.",
    "linear": "Wait longer by the same step before each retry.",
    "exponential": "Double the wait before each retry.",
    "allow": "Permission granted.",
    "deny": "Permission denied.",
    "prompt": "Ask the user each time.",
}

PERSIST_VALUES = ("true", "project", "user")
JOIN_STRATEGIES = ("all", "first", "any")
FAIL_POLICIES = ("fail-fast", "continue", "ignore")

# Keywords that may start a statement (the rest only continue one).
STATEMENT_KEYWORDS = (
    "use", "input", "output", "agent", "block", "session", "resume", "let", "const", "do",
    "parallel", "for", "repeat", "loop", "try", "catch", "finally", "throw", "choice", "option",
    "if", "elif", "else", "ask",
)  # fmt: skip
# Keywords that may start the value of `let x =` / `output y =`.
EXPRESSION_KEYWORDS = ("session", "resume", "do", "parallel", "for", "repeat", "loop", "ask")

__all__ = [
    "AGENT_PROPERTIES",
    "BACKOFFS",
    "EXPRESSION_KEYWORDS",
    "FAIL_POLICIES",
    "JOIN_STRATEGIES",
    "KEYWORD_DOCS",
    "MODELS",
    "PATTERN_PERMISSIONS",
    "PERMISSION_DOCS",
    "PERMISSION_VALUES",
    "PERSIST_VALUES",
    "PROPERTY_DOCS",
    "SESSION_PROPERTIES",
    "STATEMENT_KEYWORDS",
    "SWITCH_PERMISSIONS",
    "VALUE_DOCS",
]

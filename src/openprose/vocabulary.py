"""The reference's fixed value sets: what an identifier-valued property may say."""

from __future__ import annotations

from typing import Literal

from openprose import nodes as n

MODELS = frozenset({"sonnet", "opus", "haiku"})
BACKOFFS = frozenset({"none", "linear", "exponential"})
PERMISSION_VALUES = frozenset({"allow", "deny", "prompt"})

# Properties whose value is one identifier of a fixed set. Written as a string
# (`backoff: "exponential"`) such a value is accepted with W170; fmt writes it bare.
ENUM_PROPERTIES: dict[str, frozenset[str]] = {
    "model": MODELS,
    "backoff": BACKOFFS,
    "bash": PERMISSION_VALUES,
    "network": PERMISSION_VALUES,
}

# The properties an agent definition and a session may set (others are W005).
AGENT_PROPERTIES = (
    "model",
    "prompt",
    "persist",
    "skills",
    "permissions",
    "context",
    "retry",
    "backoff",
)
SESSION_PROPERTIES = ("model", "prompt", "context", "retry", "backoff", "returns")
# `ask "question"`: the answers it offers, the one taken when nobody answers in time, and how
# long it waits (docs/guide.md, "Asking a person").
ASK_PROPERTIES = ("options", "default", "timeout")

# What an agent's `persist:` asks for: none given, a scope, a folder, or a value that is none.
Persist = Literal["none", "true", "project", "user", "path", "invalid"]
PERSIST_SCOPES: dict[str, Persist] = {"true": "true", "project": "project", "user": "user"}


def persist_of(value: n.PropertyValue) -> tuple[Persist, str | None]:
    """The memory scope a ``persist:`` value asks for (and its path, for a string)."""
    if isinstance(value, n.Name) and value.id in PERSIST_SCOPES:
        return PERSIST_SCOPES[value.id], None
    if isinstance(value, n.StringLit) and value.value.strip():
        return "path", value.value
    return "invalid", None

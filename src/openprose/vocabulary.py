"""The reference's fixed value sets: what an identifier-valued property may say."""

from __future__ import annotations

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
SESSION_PROPERTIES = ("model", "prompt", "context", "retry", "backoff")

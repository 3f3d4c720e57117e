"""The runtime's own judgment of an answer's safety level: a rule, not the model's default.

A small model answers `safe` to anything (issue 34: "Is it safe to delete /etc/passwd?"
came back `safe`). The rule reads the question and the answer for what makes acting on
them risky — destroying data, touching system files, credentials, physical harm — and
sets a floor: the level can be stricter than the floor, never laxer. Words, not
understanding: it errs towards `review`, which costs a human a look, never a disaster.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["LEVELS", "SafetyFloor", "at_least", "safety_floor"]

#: Safety levels from laxest to strictest.
LEVELS = ("safe", "review", "block")

_RISKS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "destructive-action",
        re.compile(
            r"\b(delet\w*|remov\w*|rm\s+-\w+|eras\w*|wip\w*|format\w*|drop\s+(?:table|database)"
            r"|truncat\w*|kill\w*|shut\s*down|overwrit\w*|uninstall\w*|chmod|chown|mkfs|dd\s+if=)",
            re.IGNORECASE,
        ),
    ),
    (
        "system-file",
        re.compile(
            r"(?:^|[\s\"'`(])/(?:etc|bin|sbin|usr|boot|dev|sys|proc|var|lib)(?:/|\b)"
            r"|\bC:\\Windows|\bsystem32\b|\bregistry\b|\bsudo\b|\broot\b",
            re.IGNORECASE,
        ),
    ),
    (
        "credential",
        re.compile(
            r"\b(passwords?|passwd|private keys?|api keys?|secret keys?|access tokens?"
            r"|credentials?|ssh keys?)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "physical-harm",
        re.compile(
            r"\b(weapons?|explosives?|bombs?|poison\w*|overdos\w*|suicid\w*|self-harm"
            r"|lethal|dosage)\b",
            re.IGNORECASE,
        ),
    ),
)


@dataclass(frozen=True, slots=True)
class SafetyFloor:
    """The laxest level the rule allows, and the risks that set it (none: `safe`)."""

    level: str
    risks: tuple[str, ...] = ()

    @property
    def allowed(self) -> tuple[str, ...]:
        """The levels an answer may take: the floor and everything stricter."""
        return LEVELS[LEVELS.index(self.level) :]


def safety_floor(*texts: str) -> SafetyFloor:
    """The floor `texts` (a question, an answer) set: `review` when any risk is named."""
    risks = tuple(name for name, pattern in _RISKS if any(pattern.search(t) for t in texts))
    return SafetyFloor("review" if risks else "safe", risks)


def at_least(level: object, floor: SafetyFloor) -> bool:
    """Whether `level` is the floor or stricter (an unknown level is not)."""
    return level in floor.allowed

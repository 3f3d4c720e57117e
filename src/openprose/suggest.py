""" "Did you mean": the known word a misspelled one most likely stands for."""

from __future__ import annotations

from collections.abc import Iterable
from difflib import get_close_matches


def closest(word: str, known: Iterable[str], *, cutoff: float = 0.7) -> str | None:
    """The known word nearest to ``word`` (case-insensitively), or None when none is close."""
    candidates = list(known)
    lowered = {c.lower(): c for c in candidates}
    if word.lower() in lowered and word not in candidates:
        return lowered[word.lower()]  # `Session` for `session`: only the case differs
    match = get_close_matches(word.lower(), list(lowered), n=1, cutoff=cutoff)
    return lowered[match[0]] if match else None


def did_you_mean(word: str, known: Iterable[str], *, cutoff: float = 0.7) -> str:
    """`` (did you mean `x`?)`` for a close known word, else the empty string."""
    found = closest(word, known, cutoff=cutoff)
    return f" (did you mean `{found}`?)" if found is not None and found != word else ""

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


def is_misspelling(word: str, known: str) -> bool:
    """Whether ``word`` reads as a slip of the keys for ``known`` — a letter added, dropped,
    changed or two swapped, about once in four letters — rather than a different word that
    looks alike (`project_title` beside `project_status`)."""
    return _typing_distance(word.lower(), known.lower()) <= max(1, len(known) // 4)


def _typing_distance(a: str, b: str) -> int:
    """Edits (insert, delete, substitute, swap two neighbours) that turn ``a`` into ``b``."""
    if abs(len(a) - len(b)) > 3:
        return 4
    before: list[int] = []
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            cost = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y))
            if i > 1 and j > 1 and x == b[j - 2] and a[i - 2] == y:
                cost = min(cost, before[j - 2] + 1)
            current.append(cost)
        before, previous = previous, current
    return previous[-1]

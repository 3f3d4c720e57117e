"""Protocol versions and the vocabulary each one defines."""

from __future__ import annotations

import re
from typing import Final, Literal, get_args

Version = Literal["1.4", "1.5"]

VERSIONS: Final[tuple[Version, ...]] = get_args(Version)
DEFAULT_VERSION: Final[Version] = "1.4"

ASSISTANT_TAGS: Final[tuple[str, ...]] = ("g", "q", "o", "c", "o_f")
USER_TAGS: Final[tuple[str, ...]] = (*ASSISTANT_TAGS, "e", "e_o")
SOURCES: Final[tuple[str, ...]] = ("none", "web")
CYCLE_LIMIT: Final = 3
# Counts in commands and footers (indexes, cycles, assumptions) longer than this are not
# counts anyone wrote on purpose; they are refused before int() (which stops at 4,300
# digits with an error, and is quadratic before that).
COUNT_DIGITS: Final = 18


def small_count(digits: str) -> int | None:
    """The value of an ASCII digit string of at most COUNT_DIGITS digits, else None."""
    if len(digits) > COUNT_DIGITS or not (digits.isascii() and digits.isdigit()):
        return None
    return int(digits)


DEFAULT_LOCUS: Final = "default"
# 1.5's locus names, and the names it gives unnamed loci (`locus-2`, `locus-3`, ...).
LOCUS_NAME_1_5: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._/-]{0,63}$")
UNNAMED_LOCUS: Final = re.compile(r"^locus-([2-9]|[1-9]\d{1,5})$")

# The escape choices each version asks the assistant to surface.
ESCAPE_HINTS: Final[dict[Version, str]] = {
    "1.4": (
        "Escape options: send `!<e> --<g>` (or `--<q>/<o>/<c>/<o_f>`) to change locus "
        "or skip via `!<e_o>`."
    ),
    "1.5": (
        "Escape options: send `!<e> --<g>` (or `--<q>`, `--<o>`, `--<c>`, `--<o_f>`) "
        "to change locus, or `!<e_o>` to start an output pipeline."
    ),
}


def check_version(version: str) -> Version:
    """Return `version` as a `Version`, accepting an optional leading `v`."""
    bare = version.removeprefix("v")
    for known in VERSIONS:
        if bare == known:
            return known
    raise ValueError(f"unsupported VPP version {version!r}; expected one of {', '.join(VERSIONS)}")


def footer_version(version: Version) -> str:
    """The `Version=` value a footer carries, e.g. `v1.4`."""
    return f"v{version}"


def unnamed_locus(index: int) -> str:
    """Generic name for the locus with this 1-based index (`default`, `locus-2`, ...)."""
    return DEFAULT_LOCUS if index == 1 else f"locus-{index}"

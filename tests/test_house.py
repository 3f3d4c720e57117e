"""House rules over the whole source tree (issue 30, Goals): no module over ~800 lines.
Every package under src/ counts, the CLIs' and protocols' too."""

from __future__ import annotations

from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
LIMIT = 800  # lines a module may have
# Modules over the limit with a split under way on another branch: each goes when its split is
# merged (a module listed here that is back under the limit fails the test, so the entry goes).
BEING_SPLIT: dict[str, str] = {}


def line_counts() -> dict[str, int]:
    return {
        path.relative_to(SRC).as_posix(): path.read_text(encoding="utf-8").count("\n")
        for path in sorted(SRC.rglob("*.py"))
    }


def test_the_walk_sees_every_package() -> None:
    packages = {name.split("/", 1)[0] for name in line_counts()}
    assert {"openprose", "vlp", "vpp", "plsp"} <= packages


def test_no_module_is_over_the_limit() -> None:
    over = {name: lines for name, lines in line_counts().items() if lines > LIMIT}
    offenders = {name: lines for name, lines in over.items() if name not in BEING_SPLIT}
    assert offenders == {}, f"modules over {LIMIT} lines (split them by what they do): {offenders}"


def test_every_module_listed_as_being_split_is_still_over_the_limit() -> None:
    counts = line_counts()
    done = sorted(name for name in BEING_SPLIT if counts.get(name, 0) <= LIMIT)
    assert done == [], f"split (or gone): take them out of BEING_SPLIT: {done}"

"""Copy every ```prose block of the OpenProse language reference into reference_examples/.

Run once (and again when the reference changes):
    python tests/openprose/conformance/extract.py PATH/TO/reference.md
The blocks are written as NNN.prose in document order, each starting with a comment naming
the reference line it came from, so the test suite needs nothing outside the repository.
"""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

_FENCE = re.compile(r"^([ \t]*)```prose[ \t]*\r?\n(.*?)^[ \t]*```[ \t]*$", re.MULTILINE | re.DOTALL)


def extract(markdown: str) -> list[tuple[int, str]]:
    """(1-based line of the opening fence, block text with the fence's indentation removed)."""
    blocks = []
    for match in _FENCE.finditer(markdown):
        line = markdown.count("\n", 0, match.start()) + 1
        body = textwrap.dedent(match.group(2)) if match.group(1) else match.group(2)
        blocks.append((line, body))
    return blocks


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    reference = Path(argv[1])
    out = Path(__file__).parent / "reference_examples"
    out.mkdir(exist_ok=True)
    for old in out.glob("*.prose"):
        old.unlink()
    blocks = extract(reference.read_text(encoding="utf-8"))
    for number, (line, body) in enumerate(blocks, start=1):
        header = f"# reference line {line}\n"
        (out / f"{number:03d}.prose").write_text(header + body, encoding="utf-8")
    print(f"wrote {len(blocks)} blocks to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))

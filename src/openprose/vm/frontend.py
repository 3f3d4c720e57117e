"""Parse and check a program before it runs: a program with errors never runs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from openprose.diagnostics import Diagnostic
    from openprose.parser import ParseResult


def diagnose(parsed: ParseResult, project_dir: Path) -> list[Diagnostic]:
    """The parser's and the checker's diagnostics (`check` includes the parser's, and caps
    them all at one limit), in source order. Imported programs' contracts come from local
    files and the import cache (no network)."""
    from openprose.checker import check
    from openprose.imports import cache_contracts

    # Agent memory is checked where `resume:` runs (the run may create it before then), not
    # against what the disk holds before the run (docs/decisions.md, Issue 20 item 4).
    found = check(
        parsed,
        project_dir=project_dir,
        contracts=cache_contracts(project_dir),
        memory_on_disk=False,
    )
    return sorted(found, key=lambda d: (d.span.start, d.span.end))

"""`prose explain CODE`: a code's page, from the same tables as docs/diagnostics.md."""

from __future__ import annotations

import json
from collections.abc import Callable

from openprose.codes import CODES

Run = Callable[..., tuple[int, str, str]]


def test_every_code_has_a_page(prose: Run) -> None:
    code, out, _ = prose("explain", "--json", *CODES)
    assert code == 0
    pages = json.loads(out)
    assert [p["code"] for p in pages] == list(CODES)
    assert all(p["meaning"] == CODES[p["code"]].meaning and p["guide"] for p in pages)


def test_page_names_the_rule_and_the_guide_section(prose: Run) -> None:
    code, out, _ = prose("explain", "e024")
    assert code == 0
    assert out.splitlines()[0] == "E024 (error): Duplicate output declaration"
    assert "  - Output Bindings: Duplicate output name" in out
    assert "docs/guide.md, section “output”" in out


def test_guide_sections_named_by_pages_exist() -> None:
    from openprose.cli.explain import CODE_SECTIONS, GUIDE_SECTIONS
    from tests.docs.doc_blocks import ROOT

    headings = {
        line.lstrip("#").strip()
        for line in (ROOT / "docs" / "guide.md").read_text(encoding="utf-8").splitlines()
        if line.startswith("### ")
    }
    assert {*GUIDE_SECTIONS.values(), *CODE_SECTIONS.values(), "Diagnostics"} <= headings


def test_unknown_code_suggests_a_near_one(prose: Run) -> None:
    code, out, err = prose("explain", "E0244")
    assert code == 2 and "did you mean E024?" in err
    assert out == ""  # nothing to show: not even a blank line

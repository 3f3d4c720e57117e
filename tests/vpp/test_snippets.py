from __future__ import annotations

from pathlib import Path

import pytest

from vpp import header_snippet


@pytest.mark.parametrize("version", ["1.4", "1.5", "v1.5"])
def test_snippet_names_its_version_and_the_footer(version: str) -> None:
    text = header_snippet(version)
    bare = version.removeprefix("v")
    assert f"[Version=v{bare} | Tag=" in text
    assert "!<e_o>" in text


def test_unknown_version_is_refused() -> None:
    with pytest.raises(ValueError, match="1.4, 1.5"):
        header_snippet("2.0")


@pytest.mark.parametrize("version", ["1.4", "1.5"])
def test_snippet_is_the_protocols_own_text(version: str) -> None:
    published = Path(f"/work/shared/reference/vpp/v{version}/header-snippet.txt")
    assert header_snippet(version) == published.read_text(encoding="utf-8")

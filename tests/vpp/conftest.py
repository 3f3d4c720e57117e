"""Shared builders for VPP tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from vpp import build_footer
from vpp.versions import Version


def make_reply(
    tag: str,
    index: int,
    *,
    cycle: int = 1,
    locus: str = "default",
    version: Version = "1.4",
    body: str = "Body text.",
    sources: str = "none",
    assumptions: int = 0,
) -> str:
    footer = build_footer(
        tag,
        index,
        cycle=cycle,
        locus=locus,
        sources=sources,
        assumptions=assumptions,
        version="1.5" if version == "1.5" else "1.4",
    )
    return f"<{tag}>\n{body}\n{footer}" if body else f"<{tag}>\n{footer}"


@pytest.fixture
def reply() -> Callable[..., str]:
    return make_reply

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vpp import ASSISTANT_TAGS, build_footer, parse_footer
from vpp.versions import Version

CANONICAL = "[Version=v1.4 | Tag=q_1 | Sources=none | Assumptions=0 | Cycle=1/3 | Locus=default]"


def deviation_codes(text: str, version: Version = "1.4") -> list[str]:
    return [d.code for d in parse_footer(text, version).deviations]


def test_build_footer_is_canonical() -> None:
    line = build_footer("q", 1, cycle=1, locus="default")
    assert line == CANONICAL
    assert parse_footer(line).canonical


@pytest.mark.parametrize(
    "kwargs",
    [
        {"tag": "e"},
        {"index": 0},
        {"sources": "preprint"},
        {"assumptions": -1},
        {"cycle": 4},
        {"cycle": 0},
        {"locus": "a|b"},
    ],
)
def test_build_footer_rejects_out_of_range_fields(kwargs: dict[str, Any]) -> None:
    arguments: dict[str, Any] = {"tag": "q", "index": 1, "cycle": 1, "locus": "x"} | kwargs
    with pytest.raises(ValueError):
        build_footer(**arguments)


def test_1_5_locus_names_are_restricted() -> None:
    with pytest.raises(ValueError):
        build_footer("q", 1, cycle=1, locus="-bad", version="1.5")
    assert "Locus=-bad" in build_footer("q", 1, cycle=1, locus="-bad", version="1.4")


@pytest.mark.parametrize(
    ("variant", "code", "field", "value"),
    [
        (CANONICAL.replace("Tag=q_1", "Tag=q"), "footer-tag-index-missing", "index", None),
        (CANONICAL.replace("Tag=q_1", "Tag=<q_1>"), "footer-tag-brackets", "index", 1),
        (
            CANONICAL.replace("Sources=none", "Sources=<none>"),
            "footer-sources-brackets",
            "sources",
            "none",
        ),
        (CANONICAL.replace(" | Locus=default", ""), "footer-locus-missing", "locus", None),
        (
            CANONICAL.replace("Version=v1.4", "Version=1.4"),
            "footer-version-format",
            "version",
            "v1.4",
        ),
        (CANONICAL.replace("Cycle=1/3", "Cycle=1"), "footer-cycle-format", "cycle", 1),
        (CANONICAL.replace(" | ", "|"), "footer-spacing", "tag", "q"),
        (f"**{CANONICAL}**", "footer-decorated", "locus", "default"),
        (CANONICAL.replace("Tag=q_1", "Tag=<q>_<1>"), "footer-tag-brackets", "index", 1),
        (CANONICAL.replace("Tag=q_1", "Tag=<q>_1"), "footer-tag-brackets", "tag", "q"),
        (CANONICAL.replace("Cycle=1/3", "Cycle=<1>/3"), "footer-cycle-brackets", "cycle", 1),
        (f"`{CANONICAL}`", "footer-decorated", "index", 1),
        (
            CANONICAL.replace("Assumptions=0", "Assumptions=<0>"),
            "footer-assumptions-brackets",
            "assumptions",
            0,
        ),
    ],
)
def test_cosmetic_variants_are_read_and_reported(
    variant: str, code: str, field: str, value: object
) -> None:
    footer = parse_footer(variant)
    assert [d.code for d in footer.deviations] == [code]
    assert all(d.cosmetic for d in footer.deviations)
    assert getattr(footer, field) == value


def test_tag_in_brackets_without_index_reports_both() -> None:
    footer = parse_footer(CANONICAL.replace("Tag=q_1", "Tag=<q>"))
    assert footer.tag == "q" and footer.index is None
    assert {d.code for d in footer.deviations} == {
        "footer-tag-brackets",
        "footer-tag-index-missing",
    }


def test_o_f_without_index_is_not_read_as_o() -> None:
    footer = parse_footer(CANONICAL.replace("Tag=q_1", "Tag=o_f"))
    assert footer.tag == "o_f" and footer.index is None
    assert parse_footer(CANONICAL.replace("Tag=q_1", "Tag=o_f_12")).index == 12


@pytest.mark.parametrize(
    ("variant", "code"),
    [
        (CANONICAL.replace("Sources=none", "Sources=pre print"), "footer-sources-invalid"),
        (CANONICAL.replace("Tag=q_1", "Tag=e_1"), "footer-tag-invalid"),
        (CANONICAL.replace("Tag=q_1", "Tag=q_0"), "footer-tag-invalid"),
        (CANONICAL.replace("Assumptions=0", "Assumptions=two"), "footer-assumptions-invalid"),
        (CANONICAL.replace("Cycle=1/3", "Cycle=4/3"), "footer-cycle-invalid"),
        (CANONICAL.replace("Cycle=1/3", "Cycle=1/4"), "footer-cycle-invalid"),
        (CANONICAL.replace("Version=v1.4", "Version=latest"), "footer-version-invalid"),
        (CANONICAL.replace(" | Sources=none", ""), "footer-sources-missing"),
        (CANONICAL.replace("Version=v1.4 | ", ""), "footer-version-missing"),
        (CANONICAL.replace("Locus=default]", "Locus=default | Mood=ok]"), "footer-unknown-field"),
        (CANONICAL.replace("Locus=default]", "Locus=default | Tag=q_2]"), "footer-duplicate-field"),
        (CANONICAL.replace("Locus=default]", "Locus=default | oops]"), "footer-field-malformed"),
        (CANONICAL[:-1], "footer-unclosed"),
    ],
)
def test_invalid_footers_are_not_cosmetic(variant: str, code: str) -> None:
    footer = parse_footer(variant)
    assert code in deviation_codes(variant)
    assert any(not d.cosmetic for d in footer.deviations)


def test_an_unclosed_footer_is_still_checked_for_spacing() -> None:
    assert deviation_codes(CANONICAL[:-1]) == ["footer-unclosed"]
    assert deviation_codes(CANONICAL[:-1].replace(" | ", "|")) == [
        "footer-unclosed",
        "footer-spacing",
    ]


def test_field_order_is_a_deviation() -> None:
    swapped = "[Tag=q_1 | Version=v1.4 | Sources=none | Assumptions=0 | Cycle=1/3 | Locus=x]"
    assert deviation_codes(swapped) == ["footer-field-order"]


def test_locus_rules_differ_by_version() -> None:
    empty = CANONICAL.replace("Locus=default", "Locus=")
    assert deviation_codes(empty, "1.4") == []  # 1.4: `Locus=<name?>`, the name is optional
    assert deviation_codes(empty.replace("v1.4", "v1.5"), "1.5") == ["footer-locus-invalid"]


def test_non_footers_are_refused() -> None:
    with pytest.raises(ValueError):
        parse_footer("Thanks for reading.")


locus_names = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9 ._/-]{0,20}", fullmatch=True).map(str.rstrip)


@settings(max_examples=150)
@given(
    tag=st.sampled_from(ASSISTANT_TAGS),
    index=st.integers(1, 10_000),
    cycle=st.integers(1, 3),
    locus=locus_names,
    sources=st.sampled_from(["none", "web"]),
    assumptions=st.integers(0, 1000),
    version=st.sampled_from(["1.4", "1.5"]),
)
def test_build_then_parse_round_trips(
    tag: str, index: int, cycle: int, locus: str, sources: str, assumptions: int, version: Version
) -> None:
    line = build_footer(
        tag,
        index,
        cycle=cycle,
        locus=locus,
        sources=sources,
        assumptions=assumptions,
        version=version,
    )
    footer = parse_footer(line, version)
    assert footer.canonical
    assert (footer.tag, footer.index, footer.cycle, footer.locus) == (tag, index, cycle, locus)
    assert (footer.sources, footer.assumptions, footer.version) == (
        sources,
        assumptions,
        f"v{version}",
    )


@settings(max_examples=200)
@given(st.text(max_size=80))
def test_lenient_parser_never_crashes(text: str) -> None:
    candidate = "[Version=" + text
    footer = parse_footer(candidate)
    assert footer.raw == candidate.strip()


def test_a_1_4_source_label_as_the_seed_writes_it_is_cosmetic() -> None:
    # seed 000: `Sources=<...>`, examples `Sources=preprint-2024-02`, `Sources=prior-cycle`
    for label in ("preprint-2024-02", "prior-cycle"):
        footer = parse_footer(CANONICAL.replace("Sources=none", f"Sources={label}"))
        assert footer.sources == label
        assert [(d.code, d.cosmetic) for d in footer.deviations] == [("footer-sources-label", True)]
    # 1.5 is exact: none or web
    v15 = CANONICAL.replace("Version=v1.4", "Version=v1.5").replace(
        "Sources=none", "Sources=prior-cycle"
    )
    assert "footer-sources-invalid" in [d.code for d in parse_footer(v15, "1.5").deviations]

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vpp import ConversationState, build_footer, expect, initial_state, validate_exchange
from vpp.versions import ESCAPE_HINTS, Version

Reply = Callable[..., str]
BOTH: tuple[Version, ...] = ("1.4", "1.5")


def codes(
    user: str,
    assistant: str,
    version: Version = "1.4",
    *,
    state: ConversationState | None = None,
    strict: bool = True,
) -> list[str]:
    result = validate_exchange(user, assistant, state or initial_state(version), strict=strict)
    return [v.code for v in result.violations]


def state_after(commands: list[str], version: Version) -> ConversationState:
    state = initial_state(version)
    for command in commands:
        state = expect(command, state).next_state()
    return state


@pytest.mark.parametrize("version", BOTH)
def test_compliant_reply_passes(reply: Reply, version: Version) -> None:
    result = validate_exchange(
        "!<q>\nWhat next?", reply("q", 1, version=version), initial_state(version)
    )
    assert result.ok and result.violations == ()
    assert result.next_state.count("q") == 1


@pytest.mark.parametrize("version", BOTH)
@pytest.mark.parametrize(
    ("assistant", "code"),
    [
        (
            "Sure!\n[Version=v{v} | Tag=q_1 | Sources=none | Assumptions=0 | Cycle=1/3 | Locus=default]",
            "missing-or-invalid-header",
        ),
        (
            "!<q>\nx\n[Version=v{v} | Tag=q_1 | Sources=none | Assumptions=0 | Cycle=1/3 | Locus=default]",
            "missing-or-invalid-header",
        ),
        (
            "<q> x\n[Version=v{v} | Tag=q_1 | Sources=none | Assumptions=0 | Cycle=1/3 | Locus=default]",
            "missing-or-invalid-header",
        ),
        (
            "<o>\nx\n[Version=v{v} | Tag=q_1 | Sources=none | Assumptions=0 | Cycle=1/3 | Locus=default]",
            "tag-mismatch",
        ),
        (
            "<e>\nx\n[Version=v{v} | Tag=q_1 | Sources=none | Assumptions=0 | Cycle=1/3 | Locus=default]",
            "tag-mismatch",
        ),
        ("<q>\nx", "missing-or-malformed-footer"),
        (
            "<q>\nx\n[Version=v1.3 | Tag=q_1 | Sources=none | Assumptions=0 | Cycle=1/3 | Locus=default]",
            "footer-version-mismatch",
        ),
        (
            "<q>\nx\n[Version=v{v} | Tag=o_1 | Sources=none | Assumptions=0 | Cycle=1/3 | Locus=default]",
            "footer-tag-mismatch",
        ),
        (
            "<q>\nx\n[Version=v{v} | Tag=q_2 | Sources=none | Assumptions=0 | Cycle=1/3 | Locus=default]",
            "footer-tag-mismatch",
        ),
        (
            "<q>\nx\n[Version=v{v} | Tag=q_1 | Sources=none | Assumptions=0 | Cycle=2/3 | Locus=default]",
            "footer-cycle-mismatch",
        ),
        (
            "<q>\n<q>\nx\n[Version=v{v} | Tag=q_1 | Sources=none | Assumptions=0 | Cycle=1/3 | Locus=default]",
            "nested-header",
        ),
        (
            "<q>\n[Version=v{v} | Tag=q_1 | Sources=none | Assumptions=0 | Cycle=1/3 | Locus=default]\nx\n[Version=v{v} | Tag=q_1 | Sources=none | Assumptions=0 | Cycle=1/3 | Locus=default]",
            "nested-footer",
        ),
    ],
)
def test_each_reply_violation(assistant: str, code: str, version: Version) -> None:
    if version == "1.5" and code != "footer-tag-mismatch":  # the v1.5 table's names
        code = code.removeprefix("footer-")  # version-mismatch, cycle-mismatch...
    assert code in codes("!<q>", assistant.replace("{v}", version), version)


def test_locus_is_checked_exactly_in_1_5_and_free_in_1_4(reply: Reply) -> None:
    assert codes("!<q>", reply("q", 1, locus="research", version="1.5"), "1.5") == [
        "locus-mismatch"
    ]
    assert codes("!<q>", reply("q", 1, locus="research", version="1.4"), "1.4") == []


@pytest.mark.parametrize(
    ("variant", "code_1_4"),
    [
        ("Tag=q", "footer-tag-index-missing"),
        ("Tag=<q_1>", "footer-tag-brackets"),
        ("Sources=<none>", "footer-sources-brackets"),
    ],
)
def test_footer_variants_are_distinct_in_strict_mode_only(
    reply: Reply, variant: str, code_1_4: str
) -> None:
    field = variant.split("=")[0]
    for version in BOTH:
        canonical = reply("q", 1, version=version)
        original = next(p for p in canonical.split("[", 1)[1].split(" | ") if p.startswith(field))
        message = canonical.replace(original, variant)
        expected = code_1_4 if version == "1.4" else "missing-or-malformed-footer"
        assert codes("!<q>", message, version) == [expected]
        assert codes("!<q>", message, version, strict=False) == []


def test_missing_locus_is_cosmetic(reply: Reply) -> None:
    message = reply("q", 1).replace(" | Locus=default", "")
    assert codes("!<q>", message) == ["footer-locus-missing"]
    assert codes("!<q>", message, strict=False) == []


def test_several_deviations_are_reported_one_by_one_in_1_5(reply: Reply) -> None:
    message = (
        reply("q", 1, version="1.5").replace("Tag=q_1", "Tag=<q>").replace(" | Locus=default", "")
    )
    result = validate_exchange("!<q>", message, initial_state("1.5"))
    assert [v.code for v in result.violations] == ["missing-or-malformed-footer"] * 3
    assert len({v.message for v in result.violations}) == 3


@pytest.mark.parametrize("version", BOTH)
def test_text_after_the_footer(reply: Reply, version: Version) -> None:
    message = reply("q", 1, version=version) + "\nP.S. hello"
    expected = "text-after-footer" if version == "1.4" else "missing-or-malformed-footer"
    result = validate_exchange("!<q>", message, initial_state(version))
    assert [(v.code, v.line) for v in result.violations] == [(expected, 4)]


def test_violation_lines_point_into_the_reply(reply: Reply) -> None:
    message = "<o>\nline two\n<o>\n" + reply("o", 1).split("\n")[-1].replace("Cycle=1", "Cycle=2")
    result = validate_exchange("!<q>", message, initial_state())
    assert {(v.code, v.line) for v in result.violations} == {
        ("tag-mismatch", 1),
        ("nested-header", 3),
        ("footer-tag-mismatch", 4),
        ("footer-cycle-mismatch", 4),
    }


@pytest.mark.parametrize("version", BOTH)
def test_escape_options_required_when_due(reply: Reply, version: Version) -> None:
    if version == "1.5":
        before, user = ["!<o>", "!<c>", "!<o>", "!<c>", "!<o>"], "!<c>"
    else:
        before, user = ["!<o>", "!<c> --incorrect", "!<o> --incorrect"], "!<c> --incorrect"
    state = state_after(before, version)
    plan = expect(user, state)
    assert plan.escape_due and plan.cycle == 3
    bare = reply("c", plan.tag_index(), cycle=3, version=version)
    assert codes(user, bare, version, state=state) == ["missing-escape-options"]
    hinted = reply("c", plan.tag_index(), cycle=3, version=version, body=ESCAPE_HINTS[version])
    assert codes(user, hinted, version, state=state) == []


def test_1_5_recovery_body_must_be_the_fixed_one(reply: Reply) -> None:
    user = "!<g> --correct --incorrect"
    body = expect(user, initial_state("1.5")).recovery_body
    assert codes(user, reply("c", 1, version="1.5", body=body), "1.5") == []
    assert codes(user, reply("c", 1, version="1.5", body="Conflicting modifiers."), "1.5") == [
        "recovery-body-mismatch"
    ]
    assert codes(user, reply("g", 1, version="1.5", body=body), "1.5") == [
        "tag-mismatch",  # the wrapper tag
        "footer-tag-mismatch",  # the footer's Tag field, as the 1.5 reference runtime names it
    ]


@pytest.mark.parametrize(
    ("body", "ok"),
    [
        ("Error: --correct and --incorrect conflict. Try `!<q> --correct`.", True),
        ("Error: conflicting modifiers. Example: !<q> --incorrect --minor", True),
        ("Error: conflicting modifiers.", False),  # no example
        ("Error: conflict. Example: !<q> --correct --incorrect", False),  # example invalid
        ("Error: conflict.\nExample: !<q> --correct", False),  # not one line
    ],
)
def test_1_4_recovery_is_one_line_with_a_valid_example(reply: Reply, body: str, ok: bool) -> None:
    found = codes("!<q> --correct --incorrect", reply("c", 1, body=body))
    assert found == ([] if ok else ["recovery-body-invalid"])


def test_1_4_critique_question_cap(reply: Reply) -> None:
    questions = "\n".join(f"{n}. Why {n}?" for n in range(1, 27))
    assert codes("!<c> --minor", reply("c", 1, body=questions)) == ["too-many-questions"]
    capped = questions.rsplit("\n", 1)[0]
    assert codes("!<c> --minor", reply("c", 1, body=capped)) == []
    assert codes("!<q>", reply("q", 1, body=questions)) == []  # the cap is for <c> only


def test_1_4_e_o_reply_lists_assumptions(reply: Reply) -> None:
    assert codes("!<e_o>", reply("o", 1, body="Here is the draft.")) == ["assumptions-not-listed"]
    assert codes("!<e_o>", reply("o", 1, body="Assumptions:\n1. Python")) == []


def test_1_4_declared_assumptions_must_match(reply: Reply) -> None:
    assert codes("!<o> --assumptions=2", reply("o", 1, assumptions=2)) == []
    assert codes("!<o> --assumptions=2", reply("o", 1, assumptions=1)) == [
        "footer-assumptions-mismatch"
    ]


def test_1_4_o_incorrect_accepts_either_reply_and_indexes_it(reply: Reply) -> None:
    state = state_after(["!<o>"], "1.4")
    assert codes("!<o> --incorrect", reply("o", 2, cycle=2), state=state) == []
    assert codes("!<o> --incorrect", reply("c", 1, cycle=2), state=state) == []
    assert codes("!<o> --incorrect", reply("o", 1, cycle=2), state=state) == ["footer-tag-mismatch"]


def test_invalid_user_command_is_reported_separately(reply: Reply) -> None:
    result = validate_exchange("!<x>", reply("c", 1, body="Unknown tag. Example: !<g>"))
    assert result.violations == ()
    assert [v.code for v in result.command_violations] == ["unknown-tag"]
    assert not result.ok


@pytest.mark.parametrize("version", BOTH)
def test_repair_fixes_tag_line_and_footer_and_keeps_the_body(version: Version) -> None:
    body = "Line one.\n\n!<o> is just content here."
    broken = f"!<o> {body}\n[Tag=<o> | Sources=<web> | Assumptions=3]\ntrailing note"
    result = validate_exchange("!<q>", broken, initial_state(version), repair=True)
    assert not result.ok and result.repaired is not None
    lines = result.repaired.split("\n")
    assert lines[0] == "<q>"
    assert "\n".join(lines[1:-1]) == body + "\ntrailing note"
    assert (
        lines[-1]
        == f"[Version=v{version} | Tag=q_1 | Sources=web | Assumptions=3 | Cycle=1/3 | Locus=default]"
    )
    again = validate_exchange("!<q>", result.repaired, initial_state(version))
    assert again.ok


def test_repair_of_a_compliant_reply_is_the_reply(reply: Reply) -> None:
    original = reply("q", 1, body="Keep  me\n")
    assert validate_exchange("!<q>", original, repair=True).repaired == original


def test_repair_uses_the_fixed_recovery_body_in_1_5(reply: Reply) -> None:
    user = "!<e>"
    result = validate_exchange(user, "<g>\nwhat?", initial_state("1.5"), repair=True)
    assert result.repaired is not None
    assert result.repaired.split("\n")[1] == expect(user, initial_state("1.5")).recovery_body
    assert validate_exchange(user, result.repaired, initial_state("1.5")).violations == ()


def test_repair_adds_the_escape_hint_when_due() -> None:
    state = state_after(["!<o>", "!<c>", "!<o>", "!<c>", "!<o>"], "1.5")
    result = validate_exchange("!<c>", "<c>\nWhat is wrong?", state, repair=True)
    assert result.repaired is not None and ESCAPE_HINTS["1.5"] in result.repaired
    assert validate_exchange("!<c>", result.repaired, state).ok


def test_repair_keeps_a_1_4_locus_name(reply: Reply) -> None:
    message = reply("q", 1, locus="research").replace("Tag=q_1", "Tag=q")
    result = validate_exchange("!<q>", message, repair=True)
    assert result.repaired is not None and result.repaired.endswith("Locus=research]")
    assert result.next_state.locus == "research"


commands = st.sampled_from(
    [
        "!<g>",
        "!<q>",
        "!<o> --incorrect",
        "!<c>",
        "!<o_f>",
        "!<e> --<q>",
        "!<e_o>",
        "!<q> --minor --major",
        "oops",
    ]
)


@settings(max_examples=120, deadline=None)
@given(
    user=commands,
    junk=st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=120),
    version=st.sampled_from(BOTH),
)
def test_repaired_replies_always_validate(user: str, junk: str, version: Version) -> None:
    body_line = junk.replace("\r", " ")
    state = initial_state(version)
    result = validate_exchange(user, body_line, state, repair=True)
    assert result.repaired is not None
    again = validate_exchange(user, result.repaired, state)
    structural = {
        v.code
        for v in again.violations
        if v.code not in ("too-many-questions", "assumptions-not-listed")
    }
    assert structural == set()


def test_1_5_header_must_be_literally_line_1() -> None:
    reply = "\n\n<q>\nbody\n" + build_footer("q", 1, cycle=1, locus="default", version="1.5")
    result = validate_exchange("!<q>", reply, initial_state("1.5"), repair=True)
    assert [(v.code, v.line) for v in result.violations] == [("missing-or-invalid-header", 1)]
    assert result.repaired == reply.lstrip("\n")
    assert validate_exchange("!<q>", reply.replace("v1.5", "v1.4"), initial_state("1.4")).ok


def test_repair_keeps_crlf_line_ends() -> None:
    body = "line1\r\nline2  \r\n\r\n\tline3"
    reply = f"<g>\r\n{body}\r\n[Version=v1.4 | Tag=q_1]\r\n"
    result = validate_exchange("!<q>", reply, initial_state("1.4"), repair=True)
    assert result.repaired is not None
    assert result.repaired.startswith(f"<q>\r\n{body}\r\n[Version=v1.4 | Tag=q_1 |")
    assert "\n" not in result.repaired.replace("\r\n", "")
    assert validate_exchange("!<q>", result.repaired, initial_state("1.4")).ok


@pytest.mark.parametrize("version", BOTH)
def test_repair_drops_nested_wrappers_so_the_repair_validates(version: Version) -> None:
    stale = f"[Version=v{version} | Tag=<q> | Sources=web]"
    reply = f"<q>\nkeep me\n<q>\n{stale}\n  indented body  \n{stale}"
    result = validate_exchange("!<q>", reply, initial_state(version), repair=True)
    assert {"nested-header", "nested-footer"} <= {v.code for v in result.violations}
    assert result.repaired is not None
    assert result.repaired.split("\n")[1:3] == ["keep me", "  indented body  "]
    assert validate_exchange("!<q>", result.repaired, initial_state(version)).ok


# 1.4 "Minimal Tests (for this revision)" A-D, each with a passing and a failing reply.
@pytest.mark.parametrize(
    ("user", "good", "bad"),
    [
        ("!<e> --<g>", ("g", "Concepts."), ("q", "Concepts.")),
        ("!<e_o>", ("o", "Assumptions: none needed."), ("o", "Draft without the list.")),
        ("!<o> --correct --<q>", ("q", "Questions."), ("o", "Draft.")),
        (
            "!<q> --correct --incorrect",
            ("c", "Conflicting modifiers; send `!<q> --correct`."),
            ("c", "Conflicting modifiers.\nHere is more content."),
        ),
    ],
)
def test_spec_minimal_tests_a_to_d(
    reply: Reply, user: str, good: tuple[str, str], bad: tuple[str, str]
) -> None:
    assert codes(user, reply(good[0], 1, body=good[1])) == []
    assert codes(user, reply(bad[0], 1, body=bad[1])) != []


@pytest.mark.parametrize("version", BOTH)
def test_decorated_footer_is_read_reported_and_repaired(reply: Reply, version: Version) -> None:
    canonical = reply("q", 1, version=version)
    *rest, footer = canonical.split("\n")
    message = "\n".join([*rest, f"**{footer}**"])
    expected = "footer-decorated" if version == "1.4" else "missing-or-malformed-footer"
    result = validate_exchange("!<q>", message, initial_state(version), repair=True)
    assert [(v.code, v.line) for v in result.violations] == [(expected, 3)]
    assert result.repaired == canonical
    assert codes("!<q>", message, version, strict=False) == []
    # A wrong decorated footer is still compared field by field.
    assert "footer-tag-mismatch" in codes("!<q>", message.replace("q_1", "q_2"), version)


def test_decorated_footer_inside_the_body_is_nested(reply: Reply) -> None:
    message = reply("q", 1, body="text\n`[Version=v1.4 | Tag=q_1]`\nmore")
    assert codes("!<q>", message) == ["nested-footer"]


@pytest.mark.parametrize(
    ("line_1", "says"),
    [
        ("!<q>", "must not carry the user's '!'"),
        ("<q> Sure.", "must hold the tag alone:"),
        ("  <q>", "without spaces around it"),
        ("**<q>**", "without Markdown marks"),
        ("`<q>`", "without Markdown marks"),
    ],
)
def test_header_messages_say_what_is_wrong(reply: Reply, line_1: str, says: str) -> None:
    canonical = reply("q", 1)
    message = canonical.replace("<q>", line_1, 1)
    result = validate_exchange("!<q>", message, repair=True)
    assert [v.code for v in result.violations] == ["missing-or-invalid-header"]
    assert says in result.violations[0].message
    expected = canonical.replace("<q>", "<q>\nSure.", 1) if "Sure" in line_1 else canonical
    assert result.repaired == expected


def test_a_first_line_that_mentions_a_tag_in_code_is_body_text() -> None:
    result = validate_exchange("!<q>", "`<g>` is conceptual.", repair=True)
    assert [v.code for v in result.violations] == [
        "missing-or-invalid-header",
        "missing-or-malformed-footer",
    ]
    assert result.repaired is not None
    assert result.repaired.split("\n")[:2] == ["<q>", "`<g>` is conceptual."]


def test_a_footer_run_onto_the_last_line_says_where_and_is_split_off_by_repair() -> None:
    footer = "[Version=v1.4 | Tag=g_1 | Sources=web | Assumptions=0 | Cycle=1/3 | Locus=x]"
    result = validate_exchange("!<g>", f"<g>\nSome text. {footer}", repair=True)
    assert [(v.code, v.line, v.message) for v in result.violations] == [
        (
            "missing-or-malformed-footer",
            2,
            (
                "The reply must end with the compliance footer line"
                " (it is at column 12: put it on a line of its own)."
            ),
        )
    ]
    assert result.repaired == f"<g>\nSome text.\n{footer}"

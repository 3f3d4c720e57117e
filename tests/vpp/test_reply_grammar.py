"""`vpp.reply_grammar` and `vpp.body_check`: the frame the embedded model decodes in, and
the body a session accepts as the model's own (issue 34)."""

from __future__ import annotations

import re

import pytest

from openprose.providers import local_model_installed
from vpp import initial_state
from vpp.body_check import body_violations
from vpp.reply_grammar import BODY_LINES, LINE_CHARS, reply_grammar, reply_token_budget
from vpp.state import ConversationState, expect
from vpp.validate import STRUCTURAL_BODY, validate_exchange
from vpp.versions import ESCAPE_HINTS


def frame_of(grammar: str) -> tuple[str, str]:
    """The two literals of the root rule, unescaped."""
    root = grammar.splitlines()[0]
    match = re.fullmatch(r'root ::= "(.*)" body "(.*)"', root)
    assert match is not None, root
    return tuple(  # type: ignore[return-value]
        part.replace("\\n", "\n").replace('\\"', '"').replace("\\\\", "\\")
        for part in match.groups()
    )


def state_after(*exchanges: tuple[str, str]) -> ConversationState:
    state = initial_state("1.5")
    for user, reply in exchanges:
        state = validate_exchange(user, reply, state).next_state
    return state


def test_the_grammar_fixes_the_whole_frame_the_state_dictates() -> None:
    expectation = expect("!<e> --<q>\nstart over", initial_state("1.5"))
    before, after = frame_of(reply_grammar(expectation))
    reply = f"{before}An answer of my own.{after}"
    assert before == "<q>\n"
    assert after.startswith("\n[Version=v1.5 | Tag=q_1 |") and "Locus=locus-2]" in after
    assert validate_exchange("!<e> --<q>\nstart over", reply, initial_state("1.5")).ok


def test_declared_assumptions_and_due_escape_choices_are_part_of_the_frame() -> None:
    expectation = expect("!<g> --assumptions=2\nplan", initial_state("1.4"))
    assert "Assumptions=2" in frame_of(reply_grammar(expectation))[1]
    invalid = expect("!<g> --minor --minor\nplan", initial_state("1.5"))
    root = reply_grammar(invalid).splitlines()[0]
    assert "body" not in root and "Invalid VPP command" in root
    footers = [f"[Version=v1.5 | Tag=c_{i} | Sources=none | Assumptions=0 | Cycle={i}/3 | "
               "Locus=default]" for i in (1, 2)]  # fmt: skip
    state = state_after(
        ("!<c>\nx", f"<c>\nno\n{footers[0]}"),
        ("!<c>\nx", f"<c>\nno\n{footers[1]}"),
    )
    expectation = expect("!<c>\nx", state)
    assert expectation.escape_due
    before, after = frame_of(reply_grammar(expectation))
    assert ESCAPE_HINTS["1.5"] in after
    assert validate_exchange("!<c>\nx", f"{before}Still unclear.{after}", state).ok


def test_the_body_rule_bounds_lines_and_keeps_out_tags_footers_and_controls() -> None:
    grammar = reply_grammar(expect("!<g>\nhi", initial_state("1.5")))
    rules = dict(line.split(" ::= ", 1) for line in grammar.splitlines())
    assert rules["body"] == f'line ("\\n" line){{0,{BODY_LINES - 1}}}'
    assert rules["line"].startswith("[^\\x00-\\x20<>\\[\\]\\x7F] ")
    assert rules["line"].endswith(f"{{0,{LINE_CHARS - 1}}}")
    assert reply_token_budget() > BODY_LINES * LINE_CHARS


@pytest.mark.skipif(not local_model_installed(), reason="needs the [local] extra")
def test_llama_cpp_parses_the_grammar() -> None:
    from openprose.providers.local import grammar_parses

    assert grammar_parses(reply_grammar(expect("!<o_f>\ndone", initial_state("1.5"))))


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ("(your answer)", "placeholder-body"),
        (STRUCTURAL_BODY, "placeholder-body"),
        ("reply 2: !<g> more", "body-echoes-command"),
        ("Plan  a trip.", "body-echoes-user"),
    ],
)
def test_a_body_that_is_not_the_models_answer_is_found(body: str, code: str) -> None:
    user = "!<g>\nplan a trip"
    expectation = expect(user, initial_state("1.5"))
    reply = f"<g>\n{body}\n{frame_of(reply_grammar(expectation))[1].strip()}"
    assert code in {v.code for v in body_violations(user, reply, expectation)}


def test_an_own_answer_and_the_protocols_escape_choices_pass() -> None:
    user = "!<g>\nplan a trip"
    expectation = expect(user, initial_state("1.5"))
    after = frame_of(reply_grammar(expectation))[1]
    assert body_violations(user, f"<g>\nGo to Lisbon in May.{after}", expectation) == ()
    assert body_violations(user, f"<g>\n{after}", expectation) == ()  # empty: the validator's

"""Checks across messages, correction chains and effective()."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.vlp.conftest import base
from vlp import CorrectionCycleError, Thread, ThreadChecker, check_thread, effective
from vlp.thread import _correction_cycles, salvaged_fields


def codes(messages: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    return [(p.code, p.id) for p in check_thread(messages)]


def test_clean_dialogue_has_no_thread_problems(dialogue: list[dict[str, Any]]) -> None:
    assert check_thread(dialogue) == []


def test_duplicate_ids() -> None:
    assert codes([base(id="A"), base(id="A")]) == [("VLP301", "A")]


def test_unknown_and_forward_references() -> None:
    messages = [
        base(id="A", type="response", refers_to="Z"),
        base(id="B", type="response", refers_to=["A", "C"]),
        base(id="C"),
    ]
    assert sorted(codes(messages)) == [("VLP302", "A"), ("VLP303", "B")]


def test_seq_gaps_and_reordering_per_session() -> None:
    messages = [
        base(id="A", session_id="S", seq=1),
        base(id="X", session_id="T", seq=7),
        base(id="B", session_id="S", seq=2),
        base(id="C", session_id="S", seq=5),
        base(id="D", session_id="S", seq=4),
        base(id="E", session_id="S", seq=5),
    ]
    problems = check_thread(messages)
    assert [(p.code, p.id) for p in problems] == [("VLP304", "C"), ("VLP305", "D"), ("VLP305", "E")]
    assert "missing 3..4" in problems[0].message


def test_evidence_must_attach_to_claims_or_corrected_claims() -> None:
    evidence = {"type": "evidence", "provenance": ["p"]}
    messages = [
        base(id="Q", type="query"),
        base(id="E1", refers_to="Q", **evidence),
        base(id="C"),
        base(id="K", type="correction", refers_to="C"),
        base(id="E2", refers_to="K", **evidence),
        base(id="E3", refers_to="C", **evidence),
    ]
    assert codes(messages) == [("VLP306", "E1")]


def test_evidence_attached_forward_to_a_non_claim_is_caught_too() -> None:
    messages = [
        base(id="E", type="evidence", provenance=["p"], refers_to="N"),
        base(id="N", type="notice"),
    ]
    assert sorted(codes(messages)) == [("VLP303", "E"), ("VLP306", "E")]


def test_correction_cycles_are_errors() -> None:
    messages = [
        base(id="A"),
        base(id="C1", type="correction", refers_to=["A", "C2"]),
        base(id="C2", type="correction", refers_to="C1"),
    ]
    assert ("VLP307", "C1") in codes(messages)
    with pytest.raises(CorrectionCycleError, match="VLP307"):
        effective(messages, "A")
    assert codes([base(id="S", type="correction", refers_to="S")]) == [("VLP307", "S")]


def test_effective_follows_the_latest_correction(dialogue: list[dict[str, Any]]) -> None:
    current = effective(dialogue, "MSG001")
    assert current.content == "Adjusted tone to formal style."
    assert current.chain_ids == ("MSG001", "MSG005") and current.corrected
    assert current.confidence == 0.9
    untouched = effective(dialogue, "MSG002")
    assert untouched.content == "Please provide links." and untouched.chain_ids == ("MSG002",)


def test_effective_through_corrections_of_corrections() -> None:
    messages = [
        base(id="A", content="v1"),
        base(id="C1", type="correction", refers_to="A", content="v2"),
        base(id="C2", type="correction", refers_to="C1", content="v3"),
        base(id="C3", type="correction", refers_to="A", content="v4"),
        base(id="X", type="correction", refers_to="A", content="bad", confidence=0.99),  # invalid
    ]
    thread = Thread(messages)
    assert thread.effective("A").chain_ids == ("A", "C3")
    assert thread.effective("C1").content == "v3"
    messages.append(base(id="C4", type="correction", refers_to="C2", content="v5"))
    assert effective(messages, "A").chain_ids == ("A", "C1", "C2", "C4")
    with pytest.raises(KeyError):
        effective(messages, "X")


def test_correction_cannot_lower_safety() -> None:
    messages = [
        base(id="A", safety={"level": "block"}),
        base(id="C", type="correction", refers_to="A", safety={"level": "safe"}),
    ]
    assert effective(messages, "A").safety_level == "block"


def test_streaming_checker_matches_the_in_memory_thread(dialogue: list[dict[str, Any]]) -> None:
    checker = ThreadChecker()
    extra = dialogue + [base(id="MSG003"), base(id="R", type="response", refers_to="nowhere")]
    found = [p for line, msg in enumerate(extra, 1) for p in checker.add(msg, line)]
    found += checker.finish()
    assert [(p.code, p.line) for p in found] == [("VLP301", 6), ("VLP302", 7)]
    assert [(p.code, p.id) for p in Thread(extra).problems()] == [
        ("VLP301", "MSG003"),
        ("VLP302", "R"),
    ]


def test_long_correction_chains_do_not_hit_the_recursion_limit() -> None:
    messages = [base(id="C0")] + [
        base(id=f"C{i}", type="correction", refers_to=f"C{i - 1}", content=f"v{i}")
        for i in range(1, 3000)
    ]
    current = effective(messages, "C0")
    assert current.content == "v2999" and len(current.chain) == 3000


def test_a_correction_of_itself_is_a_cycle_for_effective_too() -> None:
    messages = [base(id="A"), base(id="S", type="correction", refers_to=["A", "S"])]
    assert ("VLP307", "S") in codes(messages)
    for ident in ("A", "S"):
        with pytest.raises(CorrectionCycleError, match="S -> S"):
            effective(messages, ident)


def _chain(count: int, kind: str) -> list[dict[str, Any]]:
    return [base(id="M0", content="v0")] + [
        base(id=f"M{i}", type=kind, refers_to=f"M{i - 1}", content=f"v{i}") for i in range(1, count)
    ]


@pytest.mark.parametrize("count", [4_000, 100_000])
def test_show_renders_long_correction_chains_in_linear_output(count: int) -> None:
    from vlp.render import render_thread

    thread = Thread(_chain(count, "correction"))
    text = render_thread(thread)
    assert f"now: v{count - 1}" in text
    assert f"… {count - 1 - 4} more … -> M{count - 1}" in text.splitlines()[2]
    assert len(text) < 600 * count  # no line grows with the chain: linear output
    current = thread.effective("M0")
    assert current.content == f"v{count - 1}" and len(current.chain_ids) == count
    assert thread.effective(f"M{count // 2}").chain_ids[0] == f"M{count // 2}"


@pytest.mark.parametrize("count", [4_000, 100_000])
def test_show_renders_long_reply_chains_without_recursion(count: int) -> None:
    from vlp.render import render_thread

    text = render_thread(Thread(_chain(count, "response")))
    assert f"[depth {count - 1}] M{count - 1} response" in text
    assert len(text) < 600 * count


@pytest.mark.parametrize(
    ("seq", "read"),
    [
        (7, 7),
        (0, 0),
        (-1, -1),
        (True, -1),  # a bool is no number here
        (7.0, 7),  # a whole float counts, as an int
        (7.5, -1),
        (2**63 - 1, 2**63 - 1),
        (2**63, -1),
        ("7", -1),
        (None, -1),
    ],
)
def test_salvaged_fields_of_an_invalid_message_keep_only_a_usable_seq(seq: Any, read: int) -> None:
    msg = {"id": "M1", "session_id": "S", "seq": seq, "refers_to": "M0"}
    fields = salvaged_fields(msg, b"ignored")
    assert fields == ("M1", 0, "", "S", read)
    assert type(fields[4]) is int


@pytest.mark.parametrize(
    ("raw", "fields"),
    [
        (b'{"id": "M1", "session_id" : "S\xc3\xa9", "seq":12, "sender', ("M1", 0, "", "S\xe9", 12)),
        (b'{"id":"M1","seq":0012,', ("M1", 0, "", "", 12)),
        (b'{"id":"\xff","seq":1.5', ("\ufffd", 0, "", "", -1)),  # undecodable id; no whole seq
        (b'{"id":"","seq":1234567890123456789', ("", 0, "", "", -1)),  # 19 digits: too long
        (b"[1, 2", ("", 0, "", "", -1)),
    ],
)
def test_salvaged_fields_of_an_unparsable_line_are_read_off_its_bytes(
    raw: bytes, fields: tuple[Any, ...]
) -> None:
    assert salvaged_fields(None, raw) == fields
    assert salvaged_fields([{"id": "X"}], raw) == fields  # not an object: the bytes too


def _cycles_searched_from_every_correction(corrects: dict[str, list[str]]) -> list[list[str]]:
    """The depth-first search of ``_correction_cycles`` started from every correction in
    order, none skipped: a plain recursive reference."""
    state: dict[str, int] = {}
    found: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        path.append(node)
        for target in corrects[node]:
            if target not in corrects or target == node:
                continue
            if state.get(target) == 1:
                found.append(path[path.index(target) :])
            elif target not in state:
                visit(target, path)
        state[node] = 2
        path.pop()

    for start in corrects:
        if start not in state:
            visit(start, [])
    return found


_NODES = st.sampled_from("ABCDEFGH")


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(_NODES, st.lists(_NODES, max_size=3), max_size=8))
@example({"A": ["B"], "B": ["C"], "C": ["A"], "D": ["A"]})
@example({"X": ["Y"], "A": ["X", "B"], "B": ["A"]})  # a correction of a plain message first
@example({"A": ["A"]})
def test_correction_cycles_are_those_of_a_search_from_every_correction(
    corrects: dict[str, list[str]],
) -> None:
    assert list(_correction_cycles(corrects)) == _cycles_searched_from_every_correction(corrects)

"""Hypothesis strategies for PLSP blocks and instructions."""

from __future__ import annotations

from hypothesis import strategies as st

from plsp.instr import (
    COMPARISONS,
    Condition,
    Delete,
    Fetch,
    If,
    Instruction,
    Opaque,
    Set,
    Signal,
    Update,
)
from plsp.syntax import Action, Assign, Log, Num, Ref, StateBlock, Str

identifiers = st.one_of(
    st.from_regex(r"[A-Za-z]", fullmatch=True), st.from_regex(r"[A-Za-z0-9]{1,4}", fullmatch=True)
)
strings = st.builds(Str, st.text(st.characters(blacklist_characters='"'), max_size=12))
numbers = st.builds(Num, st.from_regex(r"[0-9]{1,6}(\.[0-9]{1,4})?", fullmatch=True))
refs = st.builds(Ref, identifiers)
values = st.one_of(strings, numbers, refs)
value_lists = st.lists(values, min_size=1, max_size=4).map(tuple)
action_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True)
actions = st.builds(Action, action_names, st.lists(values, max_size=3).map(tuple))
logs = st.builds(Log, value_lists)


@st.composite
def blocks(draw: st.DrawFn) -> StateBlock:
    names = draw(st.lists(identifiers, unique=True, max_size=6))
    statements = [Assign(name, draw(values)) for name in names]
    statements += draw(st.lists(st.one_of(actions, logs), max_size=4))
    return StateBlock(tuple(draw(st.permutations(statements))))


sources = st.one_of(
    st.from_regex(r'[^\s,;"]{1,10}', fullmatch=True),
    st.text(st.characters(blacklist_characters='"'), min_size=1, max_size=10),
)
conditions = st.builds(Condition, values, st.sampled_from(COMPARISONS), values)
simple_directives = st.one_of(
    st.builds(Set, identifiers, values),
    st.builds(Update, identifiers, values),
    st.builds(Delete, identifiers),
    st.builds(Fetch, sources, identifiers),
    st.builds(Signal, st.one_of(actions, logs)),
)
opaque = st.builds(
    Opaque,
    st.from_regex(r"[a-z]{2,5}", fullmatch=True).filter(
        lambda n: n not in ("set", "upd", "del", "fetch", "sig", "if")
    ),
    st.one_of(st.none(), st.from_regex(r"[a-z0-9]([a-z0-9 =$]{0,8}[a-z0-9])?", fullmatch=True)),
)
branches = st.lists(simple_directives, min_size=1, max_size=3).map(tuple)
ifs = st.builds(If, conditions, branches, st.one_of(st.just(()), branches))
instructions = st.lists(st.one_of(simple_directives, ifs, opaque), max_size=5).map(
    lambda ds: Instruction(tuple(ds))
)

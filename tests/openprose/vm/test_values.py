"""How values are shown: `render_chunks` gives exactly `render`'s text, in pieces."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from openprose.vm.values import (
    Absent,
    ErrorValue,
    ProgramResult,
    as_collection,
    render,
    render_chunks,
    to_json,
)

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(),
    st.builds(ErrorValue, st.text(), st.sampled_from(["error", "timeout"]), st.text()),
    st.builds(Absent, st.text()),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.text(max_size=5), inner, max_size=4),
        st.builds(ProgramResult, st.text(max_size=5), st.dictionaries(st.text(), inner)),
    ),
    max_leaves=20,
)


@given(_values)
@example([])
@example({})
@example(["", [], {}, None])
@example([ProgramResult("p", {"a": ["x", {"b": "é"}]}), True, 2.5])
def test_chunks_join_to_the_rendered_text(value: Any) -> None:
    assert "".join(render_chunks(value)) == render(value)


def test_a_list_of_answers_is_one_piece_an_item() -> None:
    answers = [f"echo: Item x{i}" for i in range(1000)]
    pieces = list(render_chunks(answers))
    assert len(pieces) == 1000
    assert pieces[0] == "[1] echo: Item x0" and pieces[1] == "\n\n[2] echo: Item x1"


def test_pieces_are_made_only_when_taken() -> None:
    """The writer thread takes them: nothing is rendered when the binding is queued."""
    shown: list[int] = []

    class Loud:
        def __init__(self, n: int) -> None:
            self.n = n

        def __str__(self) -> str:
            shown.append(self.n)
            return f"loud {self.n}"

    pieces = render_chunks([Loud(1), Loud(2)])
    assert shown == []
    assert next(pieces) == "[1] " and next(pieces) == "loud 1" and shown == [1]


def test_a_list_of_json_scalars_is_its_own_json_form() -> None:
    """A 100,000-answer list is recorded (outputs, run.json's inputs) without a copy."""
    answers = ["a", 1, 2.5, True, None]
    assert to_json(answers) is answers
    mixed = ["a", Absent("(cancelled)"), ("t", ErrorValue("boom"))]
    assert to_json(mixed) == [
        "a",
        "(cancelled)",
        ["t", {"error": "boom", "kind": "error", "where": ""}],
    ]
    assert to_json(("a", "b")) == ["a", "b"]


def test_a_list_is_iterated_as_it_is() -> None:
    items = ["a", "b"]
    assert as_collection(items) is items
    assert as_collection(("a", "b")) == ["a", "b"]

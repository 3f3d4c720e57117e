"""`write_json`: `json.dump`'s text, written in pieces."""

from __future__ import annotations

import io
import json
import math
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from openprose.cli.json_out import write_json

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(alphabet=st.characters(exclude_categories=("Cs",)))
)
keys = st.text(max_size=4) | st.integers(-3, 3) | st.none() | st.booleans() | st.floats()
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=7)
        | st.tuples(inner, inner)
        | st.dictionaries(keys, inner, max_size=5)
    ),
    max_leaves=40,
)


def written(value: Any, piece: int) -> str:
    out = io.StringIO()
    write_json(value, out, piece)
    return out.getvalue()


@given(values, st.integers(1, 4))
@settings(max_examples=300, deadline=None)
@example({"a": [1, 2, 3], "b": {}}, 1)
@example([[1, 2, 3], 4, [5, [6, 7, 8]], {"k": [9, 10]}], 2)
@example({1: [1, 2], None: (3,), False: "x", 1.5: []}, 1)
@example([math.nan, -math.inf, "é\n\u2028", ""], 1)
def test_the_text_is_json_dumps_whatever_the_piece_size(value: Any, piece: int) -> None:
    assert written(value, piece) == json.dumps(value, ensure_ascii=False)


def test_a_long_list_goes_out_in_pieces_of_the_given_size() -> None:
    out = io.StringIO()
    pieces: list[str] = []
    out.write = pieces.append  # type: ignore[method-assign,assignment]
    results = [f"echo: item {i}" for i in range(10)]
    write_json({"status": "succeeded", "outputs": {"results": results}}, out, piece=4)
    assert "".join(pieces) == json.dumps(
        {"status": "succeeded", "outputs": {"results": results}}, ensure_ascii=False
    )
    # the 10 results in runs of 4, 4 and 2: no piece holds the whole list
    assert sum('"echo: item' in p for p in pieces) == 3
    assert max(len(p) for p in pieces) < len(json.dumps(results))


def test_what_json_refuses_is_refused() -> None:
    with pytest.raises(TypeError):
        written({"a": [object()]}, 1)
    with pytest.raises(TypeError):
        written({(1, 2): [1]}, 1)

"""An analysis that reuses the previous one (re-parse of the touched statements, reused
statements moved) gives exactly the diagnostics of a from-scratch analysis, after any
sequence of edits — each version analysed from the one before, as the server does."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openprose.checker import check
from openprose.lsp.documents import Documents
from openprose.parser import parse
from openprose.source import SourceFile
from tests.openprose.lsp.test_incremental import PROGRAM

_URI = "untitled:edited.prose"
_INSERTS = ["x", "\n", '"', '"""', "(", "[", "  ", "session ", ":", "# note\n", "{", "\\", ""]

# An edit: where (a fraction of the text), how many characters it removes, what it inserts.
_EDIT = st.tuples(
    st.floats(min_value=0, max_value=1, allow_nan=False),
    st.integers(min_value=0, max_value=8),
    st.sampled_from(_INSERTS) | st.text(alphabet='ab :"{}()\n#', max_size=4),
)


def _apply(text: str, edit: tuple[float, int, str]) -> str:
    where, removed, inserted = edit
    at = min(int(where * len(text)), len(text))
    return text[:at] + inserted + text[at + removed :]


def _from_scratch(store: Documents, text: str) -> list[object]:
    source = SourceFile.from_text(text, f"<{_URI}>")
    return list(check(parse(source), contracts=store.contract))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edits=st.lists(_EDIT, min_size=1, max_size=4))
def test_edits_analysed_incrementally_match_a_full_analysis(
    edits: list[tuple[float, int, str]],
) -> None:
    store = Documents()
    text = PROGRAM
    store.update(_URI, text, 1)
    for version, edit in enumerate(edits, start=2):
        text = _apply(text, edit)
        analysis = store.update(_URI, text, version)
        assert analysis.diagnostics == _from_scratch(store, text)


def test_an_edit_in_the_middle_reuses_the_statements_around_it() -> None:
    """The property above is not vacuous: an edit is re-parsed in part — the statements
    before it are the previous parse's objects, and so are those after it (their spans moved
    in place) — and still matches; the previous analysis, asked again, parses its own text."""
    store = Documents()
    before = store.update(_URI, PROGRAM, 1)
    first, last = before.result.program.body[0], before.result.program.body[-1]
    at = PROGRAM.index("Approach A", len(PROGRAM) // 2)
    text = PROGRAM[:at] + "x\n" + PROGRAM[at:]
    after = store.update(_URI, text, 2)
    assert after.result.program.body[0] is first
    assert after.result.program.body[-1] is last
    assert last.span.end_line == text.count("\n")  # moved a line down
    assert after.diagnostics == _from_scratch(store, text)
    assert before.result == parse(SourceFile.from_text(PROGRAM, f"<{_URI}>"))
    at = text.index("Approach B", len(text) // 4)
    text = text[:at] + "y" + text[at:]
    again = store.update(_URI, text, 3)  # and the next edit starts from there
    assert again.result.program.body[-1] is last
    assert again.diagnostics == _from_scratch(store, text)

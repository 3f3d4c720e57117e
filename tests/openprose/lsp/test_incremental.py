"""`reparse` gives what a full parse gives — tree, every span, comments, diagnostics — after
edits of every kind anywhere in a program, or declines."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import pytest

from openprose.lsp import _spanshift
from openprose.lsp.incremental import SpanTable, reparse
from openprose.parser import ParseResult, parse
from openprose.source import SourceFile, Span

_CHUNK = '''\
# part {i}
input topic{i}: "Subject {i}"

agent writer{i}:
  model: sonnet
  prompt: "You write about {{topic{i}}}"

let draft{i} = session "Draft {{topic{i}}}"
const config{i} = session: writer{i}
  prompt: """
Multi-line {i}
  indented
"""
  context: [draft{i}]
if **the draft is good**:
  session "Publish"
elif **it is close**:
  session "Polish"
else:
  session "Redo"
parallel ("any", count: 2):
  a{i} = session "Approach A"
  b{i} = session "Approach B"
try:
  session "Risky"
catch as err{i}:
  session "Recover"
    context: err{i}
let out{i} = [draft{i}, config{i}]
  | map:
      session "Summarize"
        context: item
'''
PROGRAM = "".join(_CHUNK.format(i=i) for i in range(40))
_INSERTS = ["x", "\n", '"', '"""', "(", "[", "  ", "session ", ":", "# note\n", "{", "\\"]


def _spans(value: Any, found: list[Span]) -> list[Span]:
    if isinstance(value, Span):
        found.append(value)
    elif isinstance(value, tuple):
        for item in value:
            _spans(item, found)
    elif dataclasses.is_dataclass(value):
        for field in dataclasses.fields(value):
            _spans(getattr(value, field.name), found)
    return found


def _same(reused: ParseResult, full: ParseResult) -> None:
    assert reused.program == full.program
    assert _spans(reused.program, []) == _spans(full.program, [])
    assert _spans(reused.program.comments, []) == _spans(full.program.comments, [])
    assert reused.diagnostics == full.diagnostics


def _edits(seed: int, count: int) -> list[tuple[int, int, str]]:
    rng = random.Random(seed)
    edits = []
    for _ in range(count):
        at = rng.randrange(len(PROGRAM))
        if rng.random() < 0.3:
            edits.append((at, at + rng.randrange(1, 6), ""))
        else:
            edits.append((at, at, rng.choice(_INSERTS)))
    return edits


@pytest.mark.parametrize("seed", range(4))
def test_one_edit_to_a_valid_program(seed: int) -> None:
    base = parse(SourceFile.from_text(PROGRAM, "<p>"))
    used = 0
    for start, end, text in _edits(seed, 40):
        source = SourceFile.from_text(PROGRAM[:start] + text + PROGRAM[end:], "<p>")
        reused = reparse(base, source)
        if reused is not None:
            used += 1
            _same(reused, parse(source))
    assert used >= 20  # the point: most single edits are re-parsed in part


def test_typing_a_statement_character_by_character() -> None:
    typed = 'let extra = session "More about {topic3}"\n  context: [draft3]\n'
    at = PROGRAM.index("if **the draft is good**", len(PROGRAM) // 2)
    previous = parse(SourceFile.from_text(PROGRAM, "<p>"))
    used = 0
    for length in range(1, len(typed) + 1):
        source = SourceFile.from_text(PROGRAM[:at] + typed[:length] + PROGRAM[at:], "<p>")
        full = parse(source)
        reused = reparse(previous, source)
        if reused is not None:
            used += 1
            _same(reused, full)
        previous = full
    assert used >= len(typed) // 2


def test_a_string_left_open_is_parsed_in_full() -> None:
    """An unterminated string swallows what follows: never a partial re-parse's business."""
    at = PROGRAM.index('session "Publish"', len(PROGRAM) // 2)
    source = SourceFile.from_text(PROGRAM[:at] + '"""\n' + PROGRAM[at:], "<p>")
    base = parse(SourceFile.from_text(PROGRAM, "<p>"))
    reused = reparse(base, source)
    if reused is not None:
        _same(reused, parse(source))


@pytest.mark.parametrize("seed", range(3))
def test_edits_moving_spans_in_place_give_a_full_parse(seed: int) -> None:
    """With its span table, a re-parse moves the previous tree's spans in place: each version
    re-parsed from the one before gives a full parse's tree, spans and diagnostics, and the
    table lists exactly the spans of the new tree."""
    rng = random.Random(seed)
    text = PROGRAM
    previous = parse(SourceFile.from_text(text, "<p>"))
    table = SpanTable.of(previous.program.body)
    used = 0
    undo: str | None = None
    for _ in range(30):
        # mostly what typing does (a prompt's text, a comment line), sometimes anything
        roll = rng.random()
        if undo is not None:  # the stray edit before is taken back
            text, undo = undo, None
        elif roll < 0.6:
            at = text.index('session "', rng.randrange(len(text) // 2)) + len('session "')
            text = text[:at] + "x" + text[at:]
        elif roll < 0.85:
            at = text.index("\n", rng.randrange(len(text) - 100)) + 1
            text = text[:at] + "# c\n" + text[at:]
        else:
            at = rng.randrange(len(text))
            undo = text
            text = text[:at] + rng.choice(_INSERTS) + text[at + rng.randrange(0, 3) :]
        source = SourceFile.from_text(text, "<p>")
        full = parse(source)
        reused = reparse(previous, source, table=table)
        if reused is None:
            previous, table = full, SpanTable.of(full.program.body)
            continue
        used += 1
        _same(reused, full)
        listed = list({id(span): span for span in _spans(reused.program.body, [])}.values())
        assert table.spans == listed
        assert all(a is b for a, b in zip(table.spans, listed, strict=True))
        assert table.bounds[-1] == len(table.spans)
        previous = reused
    assert used >= 10


def test_the_c_move_refuses_what_is_not_a_span_of_int_fields() -> None:
    """A wrong table raises rather than writing into an object that is not a span; the
    spans before the bad item are moved, the bad one is left as it was."""
    start, end = Span.__dict__["start"], Span.__dict__["end"]
    good = Span(1, 2, 1, 2, 1, 3)
    with pytest.raises(TypeError):
        _spanshift.move([good, "not a span"], 0, (start, end), 5)
    assert (good.start, good.end) == (6, 7)
    odd = Span(1, 2, 1, 2, 1, 3)
    object.__setattr__(odd, "end", "two")
    with pytest.raises(TypeError):
        _spanshift.move([odd], 0, (start, end), 5)
    assert (odd.start, odd.end) == (1, "two")
    with pytest.raises(TypeError):
        _spanshift.move([good], 0, (start, SourceFile.__dict__["text"]), 5)
    later = Span(10, 20, 2, 1, 2, 11)
    _spanshift.move([good, later], 1, (end,), -3)
    assert (good.start, good.end) == (6, 7)  # before `first`: not moved
    assert (later.start, later.end) == (10, 17)

"""Markdown around fenced JSON blocks (a chat answer, a document): the blocks' messages are
read at their lines and the text around them is one problem."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.vlp.conftest import base
from vlp.cli import main
from vlp.ndjson import read_records

ANSWER = """Sure! Here is the claim, as a VLP message:

```json
{pretty}
```

The evidence follows; note the `refers_to`.

```
{line}
```

```python
print("not a message")
```
{loose}
Hope this helps.
"""


def _answer(evidence: dict[str, object]) -> str:
    return ANSWER.format(
        pretty=json.dumps(base(id="C1", provenance=["db"]), indent=2),
        line=orjson.dumps(evidence).decode(),
        loose=orjson.dumps(base(id="N1", type="notice")).decode(),
    )


def test_blocks_are_read_and_the_prose_is_one_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    evidence = base(id="E1", type="evidence", refers_to="C1")  # no provenance: VLP202
    text = _answer(evidence)
    path = tmp_path / "answer.md"
    path.write_text(text)
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out.splitlines()
    evidence_line = text.split("\n").index(orjson.dumps(evidence).decode()) + 1
    assert out[0] == (
        f"{path}:1: VLP001 not JSON: text outside the 2 JSON code block(s) (lines 1, 18, "
        "24-26, 28); the blocks' messages were read. A VLP stream holds only messages: "
        "keep the blocks' JSON, one message a line"
    )
    assert out[1].startswith(f"{path}:{evidence_line}: VLP202 ")
    assert out[-1] == "INVALID: 4 message(s), 2 valid, 2 problem(s) in 1 file(s)"
    ids = [r.message["id"] for r in read_records(path) if r.message is not None]
    assert ids == ["C1", "E1", "N1"]


def test_a_fenced_document_alone_is_still_just_a_document(tmp_path: Path) -> None:
    path = tmp_path / "m.md"
    path.write_text("```json\n" + json.dumps([base(id="A"), base(id="B")], indent=2) + "\n```\n")
    assert [r.ok for r in read_records(path)] == [True, True]


def test_ndjson_that_mentions_fences_in_content_is_ndjson(tmp_path: Path) -> None:
    path = tmp_path / "t.ndjson"
    path.write_bytes(
        orjson.dumps(base(id="A", content="```json\n{}\n```")) + b"\n" + orjson.dumps(base())
    )
    assert [r.ok for r in read_records(path)] == [True, True]


PROSE = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40)


@settings(max_examples=80, deadline=None)
@given(
    pieces=st.lists(
        st.one_of(
            PROSE.map(lambda t: ("prose", t)),
            st.sampled_from(["json", "", "jsonl", "python"]).map(lambda lang: ("block", lang)),
        ),
        max_size=8,
    ),
    cut=st.integers(0, 400),
)
def test_any_markdown_gets_a_report_and_no_traceback(
    tmp_path_factory: pytest.TempPathFactory, pieces: list[tuple[str, str]], cut: int
) -> None:
    parts = []
    for kind, value in pieces:
        if kind == "prose":
            parts.append(value)
        else:
            parts.append(f"```{value}\n{json.dumps(base(), indent=2)}\n```")
    data = "\n".join(parts).encode()
    data = data[: len(data) - cut] if cut < len(data) else data
    path = tmp_path_factory.mktemp("m") / "x.md"
    path.write_bytes(data)
    for record in read_records(path):
        assert record.line >= 1
        for problem in record.problems:
            assert problem.line is not None and problem.message
    assert main(["validate", "-q", str(path)]) in (0, 1)

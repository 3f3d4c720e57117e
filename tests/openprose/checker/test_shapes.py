"""The checker and typed results: E180 for a shape that cannot be used, E181 for a field
that a typed value does not have (with the near-miss fix), and no alarm where the name may
hold something else."""

from __future__ import annotations

from pathlib import Path

import pytest

from openprose.checker import check
from openprose.fixes import fix_source
from openprose.parser import parse_text
from openprose.source import SourceFile

REVIEW = """let review = session "Review"
  returns:
    title: string
    severity: "low" | "high"
    files: list of string
    author: optional {name: string}
"""


def _codes(source: str, path: str = "<string>") -> list[tuple[str, int, int, str]]:
    found = check(parse_text(source, path))
    return [(d.code, d.line, d.column, d.message) for d in found if d.is_error]


def test_fields_that_exist_pass() -> None:
    source = REVIEW + (
        'session "Fix {review.title} ({review.severity}) in {review.files}"\n'
        'session "By {review.author.name}"\n'
        "let s = review.severity\n"
    )
    assert _codes(source) == []


def test_an_unknown_field_in_an_interpolation_is_e181_with_the_near_name() -> None:
    (found,) = _codes(REVIEW + 'session "Fix {review.titel}"\n')
    assert found[:3] == ("E181", 7, 14)
    assert "'review' has no field 'titel' (did you mean `title`?)" in found[3]


def test_nested_fields_and_attributes_are_checked() -> None:
    found = _codes(
        REVIEW
        + 'session "{review.author.nme}"\nlet x = review.files.first\nlet y = review.sevrity\n'
    )
    assert [f[0] for f in found] == ["E181", "E181", "E181"]
    assert "'review.author' has no field 'nme'" in found[0][3]
    assert "'review.files' has no field 'first': its shape is not an object" in found[1][3]
    assert "did you mean `severity`" in found[2][3]


def test_the_fix_replaces_the_near_miss_name() -> None:
    source = REVIEW + 'session "Fix {review.titel} now"\nlet s = review.sevrity\n'
    fixed = fix_source(SourceFile.from_text(source), unsafe=True)
    assert 'session "Fix {review.title} now"' in fixed.text
    assert "let s = review.severity" in fixed.text
    assert _codes(fixed.text) == []


def test_no_alarm_when_the_name_may_hold_something_else() -> None:
    rebound = REVIEW + 'review = session "Again"\nsession "{review.anything}"\n'
    assert _codes(rebound) == []
    looped = REVIEW + 'for review in ["a"]:\n  session "{review.anything}"\n'
    assert not [c for c in _codes(looped) if c[0] == "E181"]
    untyped = 'let review = session "Review"\nsession "{review.anything}"\n'
    assert _codes(untyped) == []
    # a schema that allows other fields: any name may be there
    open_schema = (
        'let r = session "A"\n  returns: schema """\n{"type": "object"}"""\nsession "{r.x}"\n'
    )
    assert _codes(open_schema) == []


def test_an_output_shape_types_its_name() -> None:
    source = 'output score: {value: integer} = session "Score"\nsession "{score.valu}"\n'
    (found,) = _codes(source)
    assert found[0] == "E181" and "did you mean `value`" in found[3]


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        ("strng", "Unknown type 'strng' (did you mean `string`?)"),
        ("list of text", "Unknown type 'text' (types: string, number, integer, boolean)"),
        ("{a: string, a: integer}", "Field 'a' declared twice"),
        ('schema "missing.json"', "schema file 'missing.json' not found"),
        ('schema """\n{"type": 3}"""', "not a valid JSON Schema"),
    ],
)
def test_e180_for_a_shape_that_cannot_be_used(shape: str, message: str) -> None:
    found = _codes(f'let r = session "A"\n  returns: {shape}\n')
    assert [f[0] for f in found] == ["E180"]
    assert message in found[0][3]
    output = _codes(f'output o: {shape} = session "A"\n')
    assert [f[0] for f in output] == ["E180"]


def test_a_schema_file_is_read_beside_the_program(tmp_path: Path) -> None:
    (tmp_path / "r.json").write_text(
        '{"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": false}'
    )
    source = 'let r = session "A"\n  returns: schema "r.json"\nsession "{r.a} {r.b}"\n'
    found = _codes(source, str(tmp_path / "main.prose"))
    assert [f[0] for f in found] == ["E181"] and "has no field 'b'" in found[0][3]


def test_returns_is_a_session_property_only() -> None:
    found = check(parse_text("agent a:\n  returns: string\n"))
    assert [d.code for d in found] == ["W005"]


def test_one_report_per_read_however_long_its_path() -> None:
    found = _codes(REVIEW + 'session "{review.titel.x}"\nlet y = review.titel.x.z\n')
    assert [(f[0], f[1]) for f in found] == [("E181", 7), ("E181", 8)]

"""Shapes (typed results): how `returns:` and `output name: shape =` parse, print back and
compile, and their JSON Schema."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from openprose import nodes as n
from openprose.compiler import compile_program
from openprose.formatter import format_source
from openprose.parser import parse_text
from openprose.printer import print_program
from openprose.printer import shape as shape_text
from openprose.shapes import ShapeError, json_schema, returns_of
from openprose.source import Span

_NOWHERE = Span(0, 0, 1, 1, 1, 1)

BLOCK = """\
let review = session "Review the change"
  returns:
    title: string
    severity: "low" | "medium" | "high"
    files: list of string
    notes: optional string
    findings: list of
      line: integer
      text: string
    author: optional
      name: string
"""


def _returns(source: str) -> n.Shape:
    parsed = parse_text(source)
    assert parsed.ok, [d.message for d in parsed.diagnostics]
    stmt = parsed.program.body[0]
    assert isinstance(stmt, n.Binding)
    shape = returns_of(stmt.value)
    assert shape is not None
    return shape


def test_a_block_of_fields_is_an_object_shape() -> None:
    shape = _returns(BLOCK)
    assert isinstance(shape, n.ObjectType)
    by_name = {f.name.id: f for f in shape.fields}
    assert list(by_name) == ["title", "severity", "files", "notes", "findings", "author"]
    assert by_name["severity"].shape == n.EnumType(
        options=tuple(
            n.StringLit(value=v, parts=(v,), span=shape.span) for v in ("low", "medium", "high")
        ),
        span=shape.span,
    )
    assert by_name["notes"].optional and not by_name["title"].optional
    findings = by_name["findings"].shape
    assert isinstance(findings, n.ListType) and isinstance(findings.item, n.ObjectType)
    assert [f.name.id for f in findings.item.fields] == ["line", "text"]
    author = by_name["author"]
    assert author.optional and isinstance(author.shape, n.ObjectType)


def test_the_json_schema_of_a_compact_shape() -> None:
    schema = json_schema(_returns(BLOCK), None)
    assert schema["required"] == ["title", "severity", "files", "findings"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["files"] == {"type": "array", "items": {"type": "string"}}
    assert schema["properties"]["severity"] == {
        "type": "string",
        "enum": ["low", "medium", "high"],
    }
    line = schema["properties"]["findings"]["items"]["properties"]["line"]
    assert line == {"type": "integer"}


@pytest.mark.parametrize(
    "source",
    [
        BLOCK,
        'let s = session "Score" returns: {score: number, ok: boolean}\n',
        'let s = session "Tags"\n  returns: list of "a" | "b"\n',
        'let s = session "One"\n  returns: integer\n',
        'let s = session "T"\n  returns: schema "review.schema.json"\n',
        'let s = session "T"\n  returns: schema """\n{"type": "string"}"""\n',
        'output summary: {title: string, tags: list of string} = session "Sum"\n',
        'output n: integer = session "Count"\n',
        (
            'agent a:\n  model: sonnet\nlet r = session: a\n  prompt: "Go"\n  returns:\n'
            "    a: {b: optional list of {c: string}}\n"
        ),
    ],
)
def test_shapes_print_back_to_the_same_tree_and_compile_stably(source: str) -> None:
    parsed = parse_text(source)
    assert parsed.ok, [d.message for d in parsed.diagnostics]
    printed = print_program(parsed.program)
    again = parse_text(printed)
    assert again.ok and again.program == parsed.program, printed
    assert format_source(again) == printed
    compiled = compile_program(parsed.program)
    assert compile_program(parse_text(compiled).program) == compiled


def test_fmt_keeps_comments_between_fields() -> None:
    source = (
        'let r = session "A"\n'
        "  returns:\n"
        "    # what the model names it\n"
        "    title:   string\n"
        "    tags: list of string  # lower case\n"
    )
    assert format_source(parse_text(source)) == source.replace("title:   ", "title: ")


def test_the_block_form_is_the_canonical_layout() -> None:
    source = 'let s = session "Score" returns: {score: number, tags: list of {t: string}}\n'
    printed = print_program(parse_text(source).program)
    assert printed == (
        'let s = session "Score"\n'
        "  returns:\n"
        "    score: number\n"
        "    tags: list of\n"
        "      t: string\n"
    )


def test_a_colon_without_equals_after_output_is_still_the_early_form() -> None:
    parsed = parse_text('output r: session "A"\n')
    assert [d.code for d in parsed.diagnostics] == ["E004"] or parsed.diagnostics
    (stmt,) = parsed.program.body
    assert isinstance(stmt, n.Output) and stmt.shape is None


@pytest.mark.parametrize(
    ("source", "where"),
    [
        ('session "A"\n  returns:\n    title string\n', "expected a field"),
        ('session "A"\n  returns: {a: string\n', "'}'"),
        ('session "A"\n  returns: list of\n', "expected a shape"),
    ],
)
def test_a_broken_shape_is_one_error_and_the_rest_parses(source: str, where: str) -> None:
    parsed = parse_text(source + 'session "B"\n')
    errors = [d for d in parsed.diagnostics if d.is_error]
    assert errors and where in errors[0].message
    assert isinstance(parsed.program.body[-1], n.Session)


def test_a_broken_field_line_keeps_the_other_fields() -> None:
    parsed = parse_text(
        'let r = session "A"\n  returns:\n    a: string\n    b string\n    c: integer\n'
    )
    assert len([d for d in parsed.diagnostics if d.is_error]) == 1
    stmt = parsed.program.body[0]
    assert isinstance(stmt, n.Binding)
    shape = returns_of(stmt.value)
    assert isinstance(shape, n.ObjectType)
    assert [f.name.id for f in shape.fields] == ["a", "c"]


def test_schemas_from_files_and_inline(tmp_path: Path) -> None:
    (tmp_path / "s.json").write_text('{"type": "object", "properties": {"x": {"type": "string"}}}')
    ref = _returns('let r = session "A"\n  returns: schema "s.json"\n')
    assert json_schema(ref, tmp_path)["properties"]["x"] == {"type": "string"}
    with pytest.raises(ShapeError, match="not found"):
        json_schema(ref, tmp_path / "elsewhere")
    (tmp_path / "s.json").write_text('{"type": 3}')
    with pytest.raises(ShapeError, match="not a valid JSON Schema"):
        json_schema(ref, tmp_path)
    inline = _returns('let r = session "A"\n  returns: schema """\n{"type": "integer"}"""\n')
    assert json_schema(inline, None) == {"type": "integer"}
    broken = _returns('let r = session "A"\n  returns: schema """\n{"type": }"""\n')
    with pytest.raises(ShapeError, match="not JSON"):
        json_schema(broken, None)


def test_walk_reaches_property_values_and_the_nodes_of_shapes() -> None:
    program = parse_text(
        BLOCK + 'output o: {n: integer} = session "B"\n  context: review\n'
    ).program
    walked = {type(node) for node in n.walk(program)}
    assert {n.ObjectType, n.ShapeField, n.ListType, n.EnumType, n.ScalarType} <= walked
    names = [node.id for node in n.walk(program) if isinstance(node, n.Name)]
    assert "review" in names[1:]  # the `context: review` value, past the binding's own name


_WORDS = st.sampled_from(["title", "files", "severity", "notes", "n", "input", "of", "list"])
_SCALARS = st.sampled_from(["string", "number", "integer", "boolean"]).map(
    lambda name: n.ScalarType(name=name, span=_NOWHERE)
)
_ENUMS = st.lists(st.sampled_from(["low", "high", "a b", "{x}", 'say "hi"']), min_size=1).map(
    lambda values: n.EnumType(
        options=tuple(n.StringLit(value=v, parts=(v,), span=_NOWHERE) for v in values),
        span=_NOWHERE,
    )
)


def _objects(inner: st.SearchStrategy[n.Shape]) -> st.SearchStrategy[n.Shape]:
    fields = st.lists(st.tuples(_WORDS, inner, st.booleans()), min_size=1, unique_by=lambda f: f[0])
    return fields.map(
        lambda items: n.ObjectType(
            fields=tuple(
                n.ShapeField(name=n.Name(id=w, span=_NOWHERE), shape=s, optional=o, span=_NOWHERE)
                for w, s, o in items
            ),
            span=_NOWHERE,
        )
    )


_SHAPES = st.recursive(
    _SCALARS | _ENUMS,
    lambda inner: inner.map(lambda s: n.ListType(item=s, span=_NOWHERE)) | _objects(inner),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(_SHAPES, st.booleans())
def test_any_shape_prints_back_to_itself_and_is_a_json_schema(
    shape: n.Shape, on_output: bool
) -> None:
    if on_output:
        program = f'output o: {shape_text(shape)} = session "A"\n'
    else:
        returns = n.Property(name=n.Name(id="returns", span=_NOWHERE), value=shape, span=_NOWHERE)
        session = n.Session(prompt=None, agent=None, properties=(returns,), span=_NOWHERE)
        program = print_program(
            n.Program(
                body=(
                    n.Binding(
                        kind="let",
                        target=n.Name(id="r", span=_NOWHERE),
                        value=session,
                        span=_NOWHERE,
                    ),
                ),
                span=_NOWHERE,
            )
        ).replace("let r = session", 'let r = session "A"', 1)
    parsed = parse_text(program)
    assert parsed.ok, (program, [d.message for d in parsed.diagnostics])
    (stmt,) = parsed.program.body
    found = stmt.shape if isinstance(stmt, n.Output) else returns_of(stmt.value)  # type: ignore[union-attr]
    assert found == shape, program
    Draft202012Validator.check_schema(json_schema(shape, None))

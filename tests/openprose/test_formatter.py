"""The formatter: canonical layout with comments kept, re-parsing to the same AST."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from openprose import nodes as n
from openprose.formatter import format_source
from openprose.parser import parse_text

ROOT = Path(__file__).resolve().parents[2]
REFERENCE_BLOCKS = sorted((ROOT / "tests/openprose/conformance/reference_examples").glob("*.prose"))


def fmt(text: str) -> str:
    return format_source(parse_text(textwrap.dedent(text)))


def assert_faithful(source: str) -> str:
    """fmt's output re-parses to the input's AST, keeps every comment, and is a fixed point."""
    before = parse_text(source)
    out = format_source(before)
    after = parse_text(out)
    assert after.ok, [d.message for d in after.diagnostics]
    assert after.program == before.program
    texts = sorted(c.text.rstrip() for c in before.program.comments)
    assert sorted(c.text.rstrip() for c in after.program.comments) == texts
    assert format_source(after) == out
    return out


def test_reference_comment_examples_keep_their_places() -> None:
    source = """\
        # Program header comment
        # Author: Example

        agent researcher:
            # This comment is inside the block
            model: sonnet
        # This comment is outside the block
        session "Do something"  # Explain what this does

        # This comment is between statements
        session "Do another thing"
        """
    assert fmt(source) == textwrap.dedent(
        """\
        # Program header comment
        # Author: Example

        agent researcher:
          # This comment is inside the block
          model: sonnet
        # This comment is outside the block
        session "Do something"  # Explain what this does

        # This comment is between statements
        session "Do another thing"
        """
    )


def test_fmt_does_not_reorder_hoist_or_expand() -> None:
    source = """\
        do later
        session "A" -> session "B"
        agent a:
          prompt: "p"
          model: opus
        block later:
          session "x"
        """
    assert fmt(source) == textwrap.dedent(source)


def test_blank_lines_collapse_to_one_and_never_follow_a_block_opener() -> None:
    source = 'agent a:\n\n  model: opus\n\n\n\nsession "x"\n\n\n'
    assert fmt(source) == 'agent a:\n  model: opus\n\nsession "x"\n'


def test_no_blank_line_is_invented() -> None:
    assert fmt('session "a"\nsession "b"\n') == 'session "a"\nsession "b"\n'


def test_comment_trailing_a_block_stays_in_the_block() -> None:
    source = """\
        if **ready**:
            session "go"
            # still inside the if body
        else:
            session "wait"
        # after everything
        """
    out = fmt(source)
    assert out == textwrap.dedent(
        """\
        if **ready**:
          session "go"
          # still inside the if body
        else:
          session "wait"
        # after everything
        """
    )
    assert_faithful(out)


def test_trailing_comment_after_multiline_string_follows_the_closing_quotes() -> None:
    source = 'session """\nLine one\n  indented\n"""  # explain\nsession "next"\n'
    assert assert_faithful(source) == source


def test_trailing_comments_use_two_spaces_and_no_trailing_whitespace() -> None:
    assert fmt('session "x"      #   note   \n') == 'session "x"  #   note\n'


def test_inline_session_properties_move_to_a_block() -> None:
    assert fmt('session "Research AI" context: topic\n') == (
        'session "Research AI"\n  context: topic\n'
    )


def test_pipeline_layout_single_and_chained() -> None:
    source = """\
        let a = items
            | map:
                session "x"
        let b = items | filter:
            session "y"
          | map:
            session "z"
        """
    assert fmt(source) == textwrap.dedent(
        """\
        let a = items | map:
          session "x"
        let b = items
          | filter:
              session "y"
          | map:
              session "z"
        """
    )


def test_literal_braces_are_escaped_only_where_needed() -> None:
    out = fmt(r'session "JSON {\"k\": 1} and \{name} and {} and {name}"' + "\n")
    assert out == r'session "JSON {\"k\": 1} and \{name} and {} and {name}"' + "\n"
    (stmt,) = parse_text(out).program.body
    assert isinstance(stmt, n.Session) and stmt.prompt is not None
    assert [p.name for p in stmt.prompt.interpolations] == ["name"]


def test_crlf_and_tabs_in_strings_normalize() -> None:
    out = fmt('session "a\tb"\r\nsession "c"\r\n')
    assert out == 'session "a\\tb"\nsession "c"\n'


def test_syntax_errors_leave_the_text_unchanged() -> None:
    broken = 'session "unterminated\n    do:\n'
    assert format_source(parse_text(broken)) == broken


def test_comment_only_and_empty_files() -> None:
    assert fmt("") == ""
    assert fmt("\n\n") == ""
    assert fmt("   # lonely\n\n# second\n") == "# lonely\n\n# second\n"


def test_comment_before_elif_and_catch_is_kept() -> None:
    source = """\
        if **a**:
          session "x"
        # about the elif
        elif **b**:
          session "y"
        try:
          session "z"
        # about the catch
        catch as err:
          session "w"
            context: err
        """
    assert fmt(source) == textwrap.dedent(source)
    assert_faithful(textwrap.dedent(source))


@pytest.mark.parametrize("path", REFERENCE_BLOCKS, ids=lambda p: p.name)
def test_reference_blocks_format_faithfully(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    if not parse_text(source).ok:
        pytest.skip("a syntax fragment, not a whole program")
    assert_faithful(source)


def test_deep_nesting_formats() -> None:
    depth = 400
    lines = [("    " * i) + "do:  # level" for i in range(depth)]
    lines.append("    " * depth + 'session "deep"')
    out = format_source(parse_text("\n".join(lines) + "\n"))
    assert out.splitlines()[-1] == "  " * depth + 'session "deep"'
    assert out.splitlines()[1] == "  do:  # level"


@pytest.mark.parametrize(
    "source",
    [
        'parallel:\n  a = session "x"\n  b = session "z"\n-> session "y"\n',
        'let r = parallel:\n  a = session "x"\n-> session "y" -> session "w"\n',
        'let xs = ["a"]\nlet r = xs | map:\n  session "On {item}"\n-> session "Sum up"\n',
        'repeat 2:\n  session "x"\n-> parallel:\n  session "p"\n-> session "end"\n',
    ],
)
def test_an_arrow_after_a_block_keeps_the_block(source: str) -> None:
    # A step with a body before `->` was printed as its header alone: the body was lost.
    assert parse_text(source).ok
    assert assert_faithful(source) == source

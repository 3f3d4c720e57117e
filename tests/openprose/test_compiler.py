"""The canonical compiler: canonicalize (AST to AST) and the printed compiled form."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from openprose import nodes as n
from openprose.compiler import canonicalize, compile_program
from openprose.depth import deep_recursion
from openprose.parser import parse_text

ROOT = Path(__file__).resolve().parents[2]
REFERENCE_BLOCKS = sorted((ROOT / "tests/openprose/conformance/reference_examples").glob("*.prose"))


def parsed(text: str) -> n.Program:
    result = parse_text(textwrap.dedent(text))
    assert result.ok, [d.message for d in result.diagnostics]
    return result.program


def compiled(text: str) -> str:
    return compile_program(parsed(text))


def test_reference_canonical_form_example() -> None:
    # Session Statement > Canonical Form: same structure, blank line gone.
    source = """\
        agent researcher:
          model: sonnet

        session: researcher
          prompt: "Do research"
        """
    assert compiled(source) == (
        'agent researcher:\n  model: sonnet\nsession: researcher\n  prompt: "Do research"\n'
    )


def test_comments_are_stripped() -> None:
    source = """\
        # header
        session "Hello"  # trailing
        # between
        session "Say hello # this is part of the string"
        """
    assert compiled(source) == (
        'session "Hello"\nsession "Say hello # this is part of the string"\n'
    )


def test_indentation_is_normalized_to_two_spaces() -> None:
    source = 'do:\n      session "a"\n      repeat 2:\n          session "b"\n'
    assert compiled(source) == 'do:\n  session "a"\n  repeat 2:\n    session "b"\n'


def test_block_definitions_are_hoisted_above_their_use() -> None:
    source = """\
        do validation-checks
        session "After"
        block validation-checks:
          session "Check syntax"
        """
    assert compiled(source) == (
        "block validation-checks:\n"
        '  session "Check syntax"\n'
        "do validation-checks\n"
        'session "After"\n'
    )


def test_top_level_definitions_are_grouped_in_processing_order() -> None:
    source = """\
        agent writer:
          model: opus
        session "One"
        use "@alice/research"
        block helper:
          session "Help"
        input topic: "The topic"
        session "Two"
        agent reader:
          model: haiku
        """
    program = canonicalize(parsed(source))
    kinds = [type(s).__name__ for s in program.body]
    assert kinds == ["Use", "Input", "AgentDef", "AgentDef", "BlockDef", "Session", "Session"]
    # Within each group (and among executable statements) source order is kept.
    names = [s.name.id for s in program.body if isinstance(s, n.AgentDef)]
    assert names == ["writer", "reader"]
    prompts = [s.prompt.value for s in program.body if isinstance(s, n.Session) and s.prompt]
    assert prompts == ["One", "Two"]


def test_nested_block_definitions_hoist_within_their_own_body() -> None:
    source = """\
        do:
          session "first"
          block inner:
            session "inner work"
          do inner
        """
    assert compiled(source) == (
        'do:\n  block inner:\n    session "inner work"\n  session "first"\n  do inner\n'
    )


def test_arrow_statement_expands_into_lines() -> None:
    assert compiled('session "Plan" -> session "Execute" -> session "Review"\n') == (
        'session "Plan"\nsession "Execute"\nsession "Review"\n'
    )


def test_arrow_value_becomes_a_do_block_keeping_last_step_properties() -> None:
    source = """\
        let draft = session "Outline"
        let workflow = session "Draft" -> session "Edit"
          context: draft
        """
    assert compiled(source) == (
        'let draft = session "Outline"\n'
        "let workflow = do:\n"
        '  session "Draft"\n'
        '  session "Edit"\n'
        "    context: draft\n"
    )


def test_arrow_in_a_parallel_branch_stays_one_branch() -> None:
    source = """\
        parallel:
          session "A" -> session "B"
          x = session "C" -> session "D"
        """
    program = canonicalize(parsed(source))
    (block,) = program.body
    assert isinstance(block, n.Parallel)
    assert len(block.branches) == 2
    assert all(isinstance(b.body, n.DoBlock) for b in block.branches)
    assert block.branches[1].name is not None and block.branches[1].name.id == "x"


def test_arrow_of_values_is_left_alone() -> None:
    # `let x = a -> b` has steps that cannot stand on their own line; nothing to expand.
    binding = canonicalize(parsed('let a = "x"\nlet y = a -> a\n')).body[1]
    assert isinstance(binding, n.Binding) and isinstance(binding.value, n.Arrow)


def test_agent_properties_take_canonical_order() -> None:
    source = """\
        agent a:
          permissions:
            bash: deny
            read: ["*.md"]
          skills: ["web-search"]
          color: blue
          prompt: "You help"
          persist: true
          model: opus
        """
    assert compiled(source) == textwrap.dedent(
        """\
        agent a:
          model: opus
          prompt: "You help"
          persist: true
          skills: ["web-search"]
          permissions:
            read: ["*.md"]
            bash: deny
          color: blue
        """
    )


def test_session_properties_take_canonical_order() -> None:
    source = """\
        session: a
          backoff: linear
          retry: 3
          context: x
          prompt: "Go"
          model: haiku
        """
    lines = compiled(source).splitlines()
    assert [line.split(":")[0].strip() for line in lines[1:]] == [
        "model",
        "prompt",
        "context",
        "retry",
        "backoff",
    ]


def test_modifiers_take_canonical_order_and_empty_parens_go() -> None:
    source = """\
        parallel (on-fail: "ignore", count: 2, "any"):
          session "A"
        parallel ():
          session "B"
        loop ():
          session "C"
        block b():
          session "D"
        do b()
        """
    assert compiled(source) == textwrap.dedent(
        """\
        block b:
          session "D"
        parallel ("any", count: 2, on-fail: "ignore"):
          session "A"
        parallel:
          session "B"
        loop:
          session "C"
        do b
        """
    )


def test_one_line_triple_string_becomes_single_quoted() -> None:
    source = 'session """\nOne line"""\nsession """\nTwo\nlines\n"""\n'
    assert compiled(source) == 'session "One line"\nsession """\nTwo\nlines\n"""\n'


def test_integer_literals_are_normalized() -> None:
    assert compiled('repeat 007:\n  session "x"\n') == 'repeat 7:\n  session "x"\n'


def test_strings_are_re_escaped() -> None:
    source = r'session "tab\there \"q\" back\\slash {name} \{literal} {} { spaced }"' + "\n"
    assert compiled(source) == source


@pytest.mark.parametrize("path", REFERENCE_BLOCKS, ids=lambda p: p.name)
def test_reference_blocks_compile_idempotently_and_reparse_to_canonical_ast(path: Path) -> None:
    result = parse_text(path.read_text(encoding="utf-8"))
    if not result.ok:
        pytest.skip("a syntax fragment, not a whole program")
    text = compile_program(result.program)
    again = parse_text(text)
    assert again.ok, [d.message for d in again.diagnostics]
    assert again.program == canonicalize(result.program)
    assert compile_program(again.program) == text
    assert canonicalize(canonicalize(result.program)) == canonicalize(result.program)


def test_deeply_nested_program_compiles() -> None:
    depth = 400
    lines = [("  " * i) + "do:" for i in range(depth)] + ["  " * depth + 'session "deep"']
    result = parse_text("\n".join(lines) + "\n")
    assert result.ok
    text = compile_program(result.program)
    assert text.splitlines()[-1] == "  " * depth + 'session "deep"'
    with deep_recursion():  # comparing 400-deep trees recurses too
        assert parse_text(text).program == canonicalize(result.program)


def test_empty_program_compiles_to_empty_text() -> None:
    assert compile_program(parsed("# only a comment\n")) == ""


def test_hoisted_block_still_sees_variables_bound_before_it() -> None:
    from openprose import check_source
    from openprose.source import SourceFile

    source = """\
        let topic = session "Pick a topic"
        block research:
          session "Research {topic}"
            context: topic
        do research
        """
    text = compiled(source)
    assert text.splitlines()[0] == "block research:"
    assert check_source(SourceFile.from_text(text)) == []

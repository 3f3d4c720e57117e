"""Habits: each recogniser of another language's syntax, called directly on scanned tokens —
the diagnostic it returns (code, span, help, fix) and the position it hands back. The parser's
use of them is covered by test_parser.py and checker/test_workflow_habits.py."""

from __future__ import annotations

from dataclasses import dataclass, field

from openprose import habits
from openprose import nodes as n
from openprose.diagnostics import Diagnostic
from openprose.fixes import apply_edits
from openprose.scanner import Token, scan
from openprose.source import SourceFile, Span


@dataclass
class View:
    """A TokenView over ``text`` (what the parser gives the habits)."""

    text: str
    source: SourceFile = field(init=False)
    tokens: list[Token] = field(init=False)
    kinds: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.source = SourceFile.from_text(self.text, "habit.prose")
        self.tokens = scan(self.source).tokens
        self.kinds = [t[0] for t in self.tokens]

    def at(self, word: str) -> int:
        return next(i for i, t in enumerate(self.tokens) if t[1] == word)

    def fixed(self, found: object) -> str:
        assert isinstance(found, Diagnostic) and found.fix is not None
        return apply_edits(self.text, list(found.fix.edits))


def a_name(view: View, word: str) -> n.Name:
    token = view.tokens[view.at(word)]
    span = Span(token[2], token[3], token[4], token[5], token[6], token[7])
    return n.Name(span=span, id=word)


def test_control_words_name_the_rule_and_only_return_gets_a_fix() -> None:
    view = View("loop:\n  break\n")
    found = habits.control_word(view, view.at("break"), None)
    assert (found.code, found.path, found.fix) == ("E004", "habit.prose", None)
    assert "no `break`" in found.message and found.rule is not None
    assert habits.CONTROL_WORDS == {"break", "continue", "return", "pass", "assert"}


def test_return_of_the_name_the_statement_above_bound_removes_the_line() -> None:
    view = View('block b:\n  let x = session "a"\n  return x\n')
    at = Span(0, 0, 1, 1, 1, 1)  # spans do not matter to the fix, the name does
    value = n.NumberLit(span=at, value=1, raw="1")
    bound = n.Binding(span=at, kind="let", target=n.Name(span=at, id="x"), value=value)
    found = habits.control_word(view, view.at("return"), bound)
    assert view.fixed(found) == 'block b:\n  let x = session "a"\n'
    # without the binding above, the value would change: no fix
    assert habits.control_word(view, view.at("return"), None).fix is None


def test_a_legacy_import_is_rewritten_as_use_and_the_position_moves_past_it() -> None:
    view = View('import "web" from "github:x/y"\n')
    found, end = habits.legacy_import(view, 0)
    assert found.code == "E123" and view.kinds[end] == "NEWLINE"
    assert view.fixed(found) == 'use "github:x/y/web"\n'


def test_a_property_under_a_session_at_its_indentation_is_indented() -> None:
    view = View('session "x"\ncontext: a\n')
    found = habits.unindented_property(view.source, view.tokens[view.at("context")])
    assert found is not None and view.fixed(found) == 'session "x"\n  context: a\n'
    lone = View("x = 1\ncontext: a\n")
    assert habits.unindented_property(lone.source, lone.tokens[lone.at("context")]) is None


def test_a_colon_binding_is_an_equals_and_a_type_annotation_is_removed() -> None:
    view = View('let x: session "a"\n')
    found, value_at = habits.colon_for_equals(view, view.at(":"), "let")
    assert view.fixed(found) == 'let x = session "a"\n' and view.kinds[value_at] == "session"
    typed = View('let x: string = session "a"\n')
    found, value_at = habits.colon_for_equals(typed, typed.at(":"), "let")
    assert "no type annotations" in found.message
    assert typed.fixed(found) == 'let x = session "a"\n' and typed.kinds[value_at] == "session"


def test_input_forms_of_other_languages() -> None:
    bare = View("input topic\n")
    found = habits.input_without_description(bare, 2, a_name(bare, "topic"))
    assert found.code == "E005" and found.help == 'add a description after a colon: `: "…"`'
    assert bare.fixed(found) == 'input topic: ""\n'

    default = View('input depth = "shallow"\n')
    found = habits.input_default(default, default.at("="), a_name(default, "depth"))
    assert found.fix is not None and not found.fix.safe
    assert default.fixed(found) == 'input depth: "shallow"\n'

    typed = View("input count: number\n")
    found = habits.unquoted_description(typed, 3, 4, a_name(typed, "count"))
    assert "not a type" in found.message
    assert typed.fixed(found) == 'input count: "count (number)"\n'


def test_clause_habits_write_the_openprose_words() -> None:
    view = View('try:\n  session "a"\nexcept:\n  session "b"\n')
    found = habits.except_clause(view, view.at("except"))
    assert found is not None and "catch:" in view.fixed(found)
    assert habits.except_clause(view, view.at("try")) is None

    branch = View('if **a**:\n  session "x"\nelse if **b**:\n  session "y"\n')
    else_at = branch.at("else")
    found = habits.else_if(branch.source, branch.tokens[else_at], branch.tokens[else_at + 1])
    assert "elif **b**:" in branch.fixed(found)

    option = View('choice **c**:\n  option Scale up:\n    session "x"\n')
    first = option.at("option") + 1
    found = habits.unquoted_label(option, first, first + 3)
    assert found is not None and 'option "Scale up":' in option.fixed(found)


def test_quoting_escapes_what_a_string_literal_needs() -> None:
    assert habits.quote('say "hi" {x}\n') == '"say \\"hi\\" \\{x}\\n"'
    assert habits.plain_quote('say "hi" {x}') == '"say \\"hi\\" {x}"'


def test_a_yaml_block_of_text_is_a_triple_quoted_string() -> None:
    view = View("session: a\n  prompt: |\n    Line one\n    Line two\n")
    reading = habits.yaml_block_text(view, "prompt", view.at("|"))
    assert reading is not None
    found, text, end = reading
    assert text.value == "Line one\nLine two\n" and text.triple
    assert view.fixed(found) == 'session: a\n  prompt: """\nLine one\nLine two\n"""\n'
    assert found.fix is not None and found.fix.safe
    assert view.kinds[end] == "DEDENT"  # past the text: the session's block ends next
    assert habits.yaml_block_text(View("x = 1\n"), "prompt", 0) is None


def test_a_yaml_dash_list_is_a_bracketed_list_on_the_property_line() -> None:
    view = View("agent a:\n  skills:\n    - web-search\n    - files\n")
    first = view.at("-")
    reading = habits.yaml_dash_list(view, "skills", first)
    assert reading is not None
    found, array, end = reading
    assert found.code == "E013" and len(array.elements) == 2
    assert view.fixed(found) == 'agent a:\n  skills: ["web-search", "files"]\n'
    assert view.kinds[end] == "DEDENT"
    # a prompt is one value: its `- x` lines are no list
    assert habits.yaml_dash_list(view, "prompt", first) is None


def test_loose_property_values_are_quoted_or_bracketed() -> None:
    prompt = View("agent a:\n  prompt: You are a {role} helper\n")
    at = prompt.at("You")
    span = prompt.source.span(prompt.tokens[at][2], len(prompt.text) - 1)
    raw = prompt.text[span.start : span.end]
    assert prompt.fixed(habits.unquoted_prompt(prompt.source, span, raw)).endswith(
        'prompt: "You are a {role} helper"\n'
    )

    patterns = View("read: *.md, *.txt\n")
    span = patterns.source.span(6, len(patterns.text) - 1)
    found, listed = habits.unquoted_patterns(patterns.source, span, "*.md, *.txt")
    assert found.code == "E016" and listed == ["*.md", "*.txt"]
    assert patterns.fixed(found) == 'read: ["*.md", "*.txt"]\n'

    context = View("context: notes draft\n")
    names = [a_name(context, "notes"), a_name(context, "draft")]
    span = context.source.span(9, 20)
    assert context.fixed(habits.context_in_brackets(context.source, span, names)) == (
        "context: [notes, draft]\n"
    )
    assert habits.unbracketed_list(context.source, "skills", span).code == "E013"

    repeat = View('repeat 3 times:\n  session "x"\n')
    times = repeat.at("times")
    found = habits.extra_times(
        repeat.source, repeat.tokens[times - 1], repeat.tokens[times], "m", None
    )
    assert repeat.fixed(found) == 'repeat 3:\n  session "x"\n'


def test_a_python_range_loop_is_a_repeat_with_its_count() -> None:
    view = View('for i in range(5):\n  session "x"\n')
    reading = habits.range_loop(view, 0, view.at("range"), a_name(view, "i"), None, False)
    assert reading is not None and reading[1] == 5
    assert view.fixed(reading[0]) == 'repeat 5 as i:\n  session "x"\n'
    parallel = habits.range_loop(view, 0, view.at("range"), a_name(view, "i"), None, True)
    assert parallel is not None and parallel[0].fix is None  # no rewrite for a parallel for
    assert habits.range_loop(view, 0, view.at("i"), a_name(view, "i"), None, False) is None


def test_a_code_condition_is_one_unsafe_discretion() -> None:
    view = View('if depth <= 0:\n  session "x"\n')
    reading = habits.plain_condition(view, 1, (":",))
    assert reading is not None
    found, condition, end = reading
    assert condition.text == "depth <= 0" and view.kinds[end] == ":"
    assert "no operators or comparisons" in found.message
    assert found.fix is not None and not found.fix.safe
    assert view.fixed(found) == 'if **depth <= 0**:\n  session "x"\n'


def test_call_arguments_get_their_commas_and_parentheses() -> None:
    view = View('do r("a" "b")\n')
    second = [i for i, t in enumerate(view.tokens) if t[0] == "STRING"][1]
    found = habits.missing_comma(view.source, view.tokens[second - 1], view.tokens[second])
    assert view.fixed(found) == 'do r("a", "b")\n'

    bare = View('do r "a"\n')
    found = habits.unparenthesised_argument(bare.source, a_name(bare, "r"), bare.tokens[2])
    assert bare.fixed(found) == 'do r("a")\n'


def test_session_lines_move_the_prompt_to_its_property() -> None:
    both = View('session "Summarize": writer\n')
    found = habits.prompt_and_agent(both, both.at('"Summarize"'))
    assert both.fixed(found) == 'session: writer\n  prompt: "Summarize"\n'

    mixed = View('session: researcher "Find the sources"\n  model: opus\n')
    found = habits.agent_then_prompt(mixed, mixed.at('"Find the sources"'))
    assert mixed.fixed(found) == (
        'session: researcher\n  prompt: "Find the sources"\n  model: opus\n'
    )

    colon = View('session "Synthesize":\n  model: opus\n')
    found = habits.header_colon(colon.source, colon.tokens[colon.at(":")])
    assert colon.fixed(found) == 'session "Synthesize"\n  model: opus\n'

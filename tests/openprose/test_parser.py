"""Parser: the AST of every construct, exact spans, diagnostics with positions, recovery and
hardening against hostile input."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from openprose import nodes as n
from openprose.codes import CODES
from openprose.parser import ParseResult, decode_source, parse_text, read_source
from openprose.source import Span

# Node equality ignores spans, so expected trees can use any span.
S = Span(0, 0, 1, 1, 1, 1)


def name(id_: str) -> n.Name:
    return n.Name(span=S, id=id_)


def string(value: str) -> n.StringLit:
    return n.StringLit(span=S, value=value, parts=(value,) if value else ())


def prop(key: str, value: n.Expr | n.PermissionsBlock) -> n.Property:
    return n.Property(span=S, name=name(key), value=value)


def session(prompt: str | None = None, **kw: object) -> n.Session:
    return n.Session(span=S, prompt=string(prompt) if prompt is not None else None, **kw)  # type: ignore[arg-type]


def ok(text: str, *, empty_bodies: int = 0) -> tuple[n.Stmt, ...]:
    """The program's statements; it must parse with no diagnostic but ``empty_bodies`` W100
    warnings (a `statement*` body left empty)."""
    result = parse_text(text)
    codes = [d.code for d in result.diagnostics]
    assert codes == ["W100"] * empty_bodies, [d.to_dict() for d in result.diagnostics]
    return result.program.body


def one(text: str) -> n.Stmt:
    (stmt,) = ok(text)
    return stmt


def diags(text: str) -> list[tuple[str, int, int]]:
    return [(d.code, d.line, d.column) for d in parse_text(text).diagnostics]


def where(span: Span) -> tuple[int, int, int, int]:
    return (span.line, span.column, span.end_line, span.end_column)


# --- sessions, agents, properties ------------------------------------------------------------


def test_session_forms() -> None:
    assert one('session "Hello"') == session("Hello")
    assert one("session: researcher") == n.Session(span=S, agent=name("researcher"))
    assert one("session analysis: researcher") == n.Session(
        span=S, name=name("analysis"), agent=name("researcher")
    )
    assert one("resume: captain") == n.Session(span=S, kind="resume", agent=name("captain"))


def test_session_property_block_and_span() -> None:
    stmt = one('session: researcher\n  model: opus  # override\n  prompt: "Deep"\n')
    assert stmt == n.Session(
        span=S,
        agent=name("researcher"),
        properties=(prop("model", name("opus")), prop("prompt", string("Deep"))),
    )
    assert where(stmt.span) == (1, 1, 3, 17)  # through the last property, not its newline


def test_inline_session_properties() -> None:
    stmt = one('session "Research AI" context: "AI" retry: 2')
    assert isinstance(stmt, n.Session)
    assert stmt.properties == (
        prop("context", string("AI")),
        prop("retry", n.NumberLit(span=S, value=2, raw="2")),
    )


def test_agent_with_all_properties() -> None:
    text = (
        "agent web-researcher:\n"
        "  model: sonnet\n"
        '  prompt: "You research"\n'
        '  persist: ".prose/custom/"\n'
        '  skills: ["web-search", "summarizer"]\n'
        "  permissions:\n"
        '    read: ["*.md", "*.txt"]\n'
        "    bash: deny\n"
        "  custom-thing: 3\n"
    )
    stmt = one(text)
    assert isinstance(stmt, n.AgentDef) and stmt.name.id == "web-researcher"
    assert [p.name.id for p in stmt.properties] == [
        "model", "prompt", "persist", "skills", "permissions", "custom-thing"
    ]  # fmt: skip
    permissions = stmt.properties[4].value
    assert isinstance(permissions, n.PermissionsBlock)
    assert permissions.rules == (
        prop("read", n.ArrayLit(span=S, elements=(string("*.md"), string("*.txt")))),
        prop("bash", name("deny")),
    )
    assert where(permissions.span) == (7, 5, 8, 15)
    assert where(stmt.span) == (1, 1, 9, 18)


def test_agent_without_properties_is_allowed() -> None:
    assert one("agent quick:\n") == n.AgentDef(span=S, name=name("quick"), properties=())
    assert ok('agent quick:\nsession "next"\n')[1] == session("next")


def test_empty_bodies_where_the_grammar_allows_them() -> None:
    text = 'do:\nblock b:\nparallel:\nrepeat 2:\nloop:\nlet x = xs | map:\nsession "end"\n'
    body = ok(text, empty_bodies=6)
    # each empty body is W100 at the line that was probably meant to be indented
    assert [d.line for d in parse_text(text).diagnostics] == [2, 3, 4, 5, 6, 7]
    assert [type(s).__name__ for s in body] == [
        "DoBlock", "BlockDef", "Parallel", "Repeat", "Loop", "Binding", "Session"
    ]  # fmt: skip


def test_empty_condition_and_option_bodies_are_left_to_the_checker() -> None:
    # if/elif/else and option bodies may be empty (W154/W153 are the checker's), choice may
    # have no options (E166); the clauses after an empty body still attach to their statement.
    source = (
        'if **a**:\n  # todo\nelif **b**:\nelse:\nchoice **c**:\n  option "A":\nchoice **d**:\n'
    )
    result = parse_text(source)
    assert result.diagnostics == ()
    first, second, third = result.program.body
    assert isinstance(first, n.If) and isinstance(second, n.Choice)
    assert [b.body for b in first.branches] == [(), ()] and first.else_body == ()
    assert [o.body for o in second.options] == [()]
    assert isinstance(third, n.Choice) and third.options == ()


def test_empty_try_clause_is_one_error_and_the_clauses_still_attach() -> None:
    result = parse_text('try:\ncatch as e:\nfinally:\n  session "f"\n')
    assert [(d.code, d.line, d.column) for d in result.diagnostics] == [
        ("E105", 1, 5),
        ("E105", 2, 12),
    ]
    (stmt,) = result.program.body
    assert isinstance(stmt, n.Try) and stmt.body == ()
    assert stmt.catch is not None and stmt.catch.body == ()
    assert stmt.finally_body is not None and len(stmt.finally_body) == 1


def test_property_values_are_generic_expressions() -> None:
    stmt = one('session "x"\n  context: { a, b }\n  other: result.findings\n')
    assert isinstance(stmt, n.Session)
    assert stmt.properties[0].value == n.ObjectContext(span=S, names=(name("a"), name("b")))
    assert stmt.properties[1].value == n.Attribute(span=S, value=name("result"), attr="findings")


# --- declarations and bindings ---------------------------------------------------------------


def test_use_input_output() -> None:
    body = ok(
        'use "@alice/research"\nuse "@bob/critique" as critic\ninput topic: "The subject"\noutput findings = session "S"\n  context: raw\n'
    )
    assert body[0] == n.Use(span=S, path=string("@alice/research"))
    assert body[1] == n.Use(span=S, path=string("@bob/critique"), alias=name("critic"))
    assert body[2] == n.Input(span=S, name=name("topic"), description=string("The subject"))
    assert body[3] == n.Output(
        span=S,
        name=name("findings"),
        value=session("S", properties=(prop("context", name("raw")),)),
    )


def test_let_const_assign_and_destructure() -> None:
    body = ok(
        'let a = session "x"\nconst b = [a, "lit", 3]\na = b\nlet { f, s } = research(topic: "q", n: 2)\n'
    )
    assert body[0] == n.Binding(span=S, kind="let", target=name("a"), value=session("x"))
    assert body[1] == n.Binding(
        span=S,
        kind="const",
        target=name("b"),
        value=n.ArrayLit(
            span=S, elements=(name("a"), string("lit"), n.NumberLit(span=S, value=3, raw="3"))
        ),
    )
    assert body[2] == n.Assign(span=S, target=name("a"), value=name("b"))
    assert body[3] == n.Binding(
        span=S,
        kind="let",
        target=n.Destructure(span=S, names=(name("f"), name("s"))),
        value=n.ProgramCall(
            span=S,
            callee=name("research"),
            args=(
                n.KeywordArg(span=S, name=name("topic"), value=string("q")),
                n.KeywordArg(span=S, name=name("n"), value=n.NumberLit(span=S, value=2, raw="2")),
            ),
        ),
    )


@pytest.mark.parametrize(
    ("text", "column"),
    [('input : "x"\n', 7), ('output = session "a"\n', 8), ("block :\n", 7), ("block (a):\n", 7)],
)
def test_missing_declared_name_is_left_to_the_checker(text: str, column: int) -> None:
    # the checker reports E020 / E023 / E151 on the empty name; the parser stays quiet
    (stmt,) = ok(text, empty_bodies=text.startswith("block"))
    assert isinstance(stmt, n.Input | n.Output | n.BlockDef)
    assert stmt.name.id == ""
    assert where(stmt.name.span) == (1, column, 1, column)


def test_program_call_argument_names_may_be_keywords() -> None:
    stmt = one("name(input: value)")
    assert isinstance(stmt, n.ProgramCall) and stmt.args[0].name.id == "input"


# --- composition -----------------------------------------------------------------------------


def test_do_block_and_do_call() -> None:
    body = ok(
        'do:\n  session "a"\n  session "b"\ndo review-pipeline\ndo process-item("data.csv", mode)\n'
    )
    assert body[0] == n.DoBlock(span=S, body=(session("a"), session("b")))
    assert body[1] == n.DoCall(span=S, name=name("review-pipeline"))
    assert body[2] == n.DoCall(
        span=S, name=name("process-item"), args=(string("data.csv"), name("mode")), has_parens=True
    )


def test_block_definition_with_params() -> None:
    stmt = one('block review(topic, mode):\n  session "Research {topic}"\n')
    assert isinstance(stmt, n.BlockDef)
    assert stmt.params == (name("topic"), name("mode")) and stmt.has_parens
    prompt = stmt.body[0].prompt  # type: ignore[union-attr]
    assert prompt is not None and prompt.interpolations[0].name == "topic"


def test_arrow_sequence() -> None:
    stmt = one('let w = session "A" -> session "B" -> do x')
    assert isinstance(stmt, n.Binding)
    assert stmt.value == n.Arrow(
        span=S, steps=(session("A"), session("B"), n.DoCall(span=S, name=name("x")))
    )
    assert where(stmt.value.span) == (1, 9, 1, 43)


def test_let_with_block_values() -> None:
    body = ok('let r = do:\n  session "a"\nlet p = parallel:\n  session "b"\n')
    assert body[0] == n.Binding(
        span=S, kind="let", target=name("r"), value=n.DoBlock(span=S, body=(session("a"),))
    )
    assert isinstance(body[1], n.Binding) and isinstance(body[1].value, n.Parallel)


# --- parallel and loops ----------------------------------------------------------------------


def test_parallel_branches_and_modifiers() -> None:
    stmt = one('parallel ("any", count: 2, on-fail: "ignore"):\n  a = session "A"\n  session "B"\n')
    assert stmt == n.Parallel(
        span=S,
        modifiers=(
            n.Modifier(span=S, name=None, value=string("any")),
            n.Modifier(span=S, name=name("count"), value=n.NumberLit(span=S, value=2, raw="2")),
            n.Modifier(span=S, name=name("on-fail"), value=string("ignore")),
        ),
        branches=(
            n.ParallelBranch(span=S, name=name("a"), body=session("A")),
            n.ParallelBranch(span=S, name=None, body=session("B")),
        ),
        has_parens=True,
    )


def test_repeat_for_and_parallel_for() -> None:
    body = ok(
        'repeat 3 as i:\n  session "x"\n'
        'for item, i in ["a", "b"]:\n  session "y"\n'
        'parallel ("first") for t in topics:\n  session "z"\n'
    )
    assert body[0] == n.Repeat(
        span=S, count=n.NumberLit(span=S, value=3, raw="3"), index=name("i"), body=(session("x"),)
    )
    assert body[1] == n.ForEach(
        span=S, item=name("item"), index=name("i"),
        collection=n.ArrayLit(span=S, elements=(string("a"), string("b"))), body=(session("y"),),
    )  # fmt: skip
    assert body[2] == n.ForEach(
        span=S, item=name("t"), index=None, collection=name("topics"), body=(session("z"),),
        parallel=True, modifiers=(n.Modifier(span=S, name=None, value=string("first")),),
    )  # fmt: skip


def test_loop_variants() -> None:
    body = ok(
        'loop:\n  session "a"\n'
        'loop (max: 50):\n  session "b"\n'
        'loop until **done** (max: 10) as attempt:\n  session "c"\n'
        'loop while ***\n  more to do\n***:\n  session "d"\n'
    )
    assert body[0] == n.Loop(
        span=S, kind="loop", condition=None, modifiers=(), index=None, body=(session("a"),)
    )
    max50 = n.Modifier(span=S, name=name("max"), value=n.NumberLit(span=S, value=50, raw="50"))
    assert body[1] == n.Loop(
        span=S,
        kind="loop",
        condition=None,
        modifiers=(max50,),
        index=None,
        body=(session("b"),),
        has_parens=True,
    )
    assert isinstance(body[2], n.Loop) and body[2].kind == "until"
    assert body[2].condition == n.Discretion(span=S, text="done")
    assert body[2].index == name("attempt")
    assert isinstance(body[3], n.Loop) and body[3].condition == n.Discretion(
        span=S, text="\n  more to do\n", triple=True
    )


# --- pipelines -------------------------------------------------------------------------------


def _op(op: str, prompt: str, **kw: n.Name) -> n.PipeOp:
    return n.PipeOp(span=S, op=op, body=(session(prompt),), **kw)


def test_pipeline_on_one_line() -> None:
    stmt = one('let s = items | map:\n  session "m"\n')
    assert isinstance(stmt, n.Binding)
    assert stmt.value == n.Pipeline(span=S, source=name("items"), ops=(_op("map", "m"),))


def test_pipeline_chained_on_continuation_lines() -> None:
    text = (
        "let result = topics\n"
        "  | filter:\n"
        '      session "f"\n'
        "  | map:\n"
        '      session "m"\n'
        "  | reduce(acc, x):\n"
        '      session "r"\n'
        'session "after"\n'
    )
    body = ok(text)
    expected = n.Pipeline(
        span=S,
        source=name("topics"),
        ops=(
            _op("filter", "f"),
            _op("map", "m"),
            _op("reduce", "r", accumulator=name("acc"), item=name("x")),
        ),
    )
    assert body[0] == n.Binding(span=S, kind="let", target=name("result"), value=expected)
    assert where(body[0].span) == (1, 1, 7, 18)
    assert body[1] == session("after")


def test_pipeline_one_line_then_continuation_between_levels() -> None:
    text = 'let x = items | map:\n    session "m"\n  | pmap:\n    session "p"\nsession "after"\n'
    body = ok(text)
    assert isinstance(body[0], n.Binding) and isinstance(body[0].value, n.Pipeline)
    assert [o.op for o in body[0].value.ops] == ["map", "pmap"]
    assert body[1] == session("after")


def test_pipeline_continuation_at_statement_level() -> None:
    body = ok('let x = items | map:\n  session "m"\n| filter:\n  session "f"\n')
    assert isinstance(body[0], n.Binding) and isinstance(body[0].value, n.Pipeline)
    assert [o.op for o in body[0].value.ops] == ["map", "filter"]


def test_pipeline_continuation_ending_in_an_empty_stage_keeps_the_enclosing_block() -> None:
    # The statement after the pipeline stays in the loop body (it used to escape it).
    (loop,) = ok(
        'loop:\n  xs\n    | map:\n    | filter:\n  session "in the loop"\n', empty_bodies=2
    )
    assert isinstance(loop, n.Loop) and len(loop.body) == 2
    assert isinstance(loop.body[0], n.Pipeline) and loop.body[1] == session("in the loop")


def test_nested_pipeline_ending_in_an_empty_stage_lets_the_outer_one_continue() -> None:
    (outer,) = ok(
        "xs\n  | map:\n      ys\n        | map:\n        | filter:\n  | pmap:\n", empty_bodies=3
    )
    assert isinstance(outer, n.Pipeline) and [o.op for o in outer.ops] == ["map", "pmap"]
    inner = outer.ops[0].body[0]
    assert isinstance(inner, n.Pipeline) and [o.op for o in inner.ops] == ["map", "filter"]


def test_statement_left_at_a_pipeline_continuation_level_is_E104() -> None:
    # `session "x"` is indented under the pipeline; it must not end the `do:` body early.
    text = (
        'do:\n  let y = xs\n    | map:\n        session "a"\n    session "x"\n  session "z"\n'
        'session "top"\n'
    )
    result = parse_text(text)
    assert [(d.code, d.line, d.column) for d in result.diagnostics] == [("E104", 5, 5)]
    do, top = result.program.body
    assert isinstance(do, n.DoBlock) and isinstance(do.body[0], n.Invalid)
    assert do.body[1] == session("z") and top == session("top")


# --- error handling and conditionals ---------------------------------------------------------


def test_try_catch_finally_and_throw() -> None:
    stmt = one('try:\n  session "a"\ncatch as err:\n  throw\nfinally:\n  throw "bye"\n')
    assert stmt == n.Try(
        span=S,
        body=(session("a"),),
        catch=n.CatchClause(span=S, error=name("err"), body=(n.Throw(span=S),)),
        finally_body=(n.Throw(span=S, message=string("bye")),),
    )
    assert isinstance(stmt, n.Try) and stmt.finally_span is not None
    assert where(stmt.finally_span) == (5, 1, 6, 14)


def test_choice_options() -> None:
    stmt = one('choice **best**:\n  option "A":\n    session "a"\n  option "B":\n    session "b"\n')
    assert stmt == n.Choice(
        span=S,
        criteria=n.Discretion(span=S, text="best"),
        options=(
            n.ChoiceOption(span=S, label=string("A"), body=(session("a"),)),
            n.ChoiceOption(span=S, label=string("B"), body=(session("b"),)),
        ),
    )


def test_if_elif_else() -> None:
    stmt = one('if **a**:\n  session "1"\nelif **b**:\n  session "2"\nelse:\n  session "3"\n')
    assert stmt == n.If(
        span=S,
        branches=(
            n.CondBranch(span=S, condition=n.Discretion(span=S, text="a"), body=(session("1"),)),
            n.CondBranch(span=S, condition=n.Discretion(span=S, text="b"), body=(session("2"),)),
        ),
        else_body=(session("3"),),
    )
    assert isinstance(stmt, n.If) and where(stmt.span) == (1, 1, 6, 14)


def test_empty_discretion_parses_for_the_checker() -> None:
    stmt = one('if ****:\n  session "a"\n')
    assert isinstance(stmt, n.If)
    assert stmt.branches[0].condition == n.Discretion(span=S, text="")


def test_forgotten_property_colon_points_at_the_value() -> None:
    result = parse_text('session "a"\n  model opus\n  prompt: "x"\n')
    assert diags('session "a"\n  model opus\n  prompt: "x"\n') == [("E004", 2, 9)]
    (stmt,) = result.program.body
    assert isinstance(stmt, n.Session) and [p.name.id for p in stmt.properties] == ["prompt"]


def test_prompt_after_session_colon_says_how_to_write_an_inline_prompt() -> None:
    (d,) = parse_text('session: "Research the topic"\n').diagnostics
    assert (d.code, d.line, d.column) == ("E004", 1, 10)
    assert 'inline prompt is written session "..." without the colon' in d.message


def test_comments_live_beside_the_tree() -> None:
    result = parse_text("# header\nagent a:\n  # inside\n  model: sonnet\n# outside\n")
    assert [c.text for c in result.program.comments] == [" header", " inside", " outside"]
    assert result.diagnostics == ()


# --- diagnostics: each with a failing and a passing case, code and position ------------------

DIAGNOSTIC_CASES = [
    # (code, bad source, (line, column), good source)
    ("E001", 'session "ok"\nsession "Hello\n', (2, 9), 'session "ok"\nsession "Hello"\n'),
    ("E001", 'session """\nnever closed\n', (1, 9), 'session """\nclosed\n"""\n'),
    ("E002", 'session "bad \\x"\n', (1, 14), 'session "fine \\\\x"\n'),
    ("E004", 'session "a" "b"\n', (1, 13), 'session "a" -> session "b"\n'),
    ("E004", "let = 3\n", (1, 5), "let x = 3\n"),
    ("E005", "let x =\n", (1, 8), "let x = y\n"),
    ("E005", "agent\n", (1, 6), "agent a:\n"),
    ("E101", 'do:\n\tsession "a"\n', (2, 1), 'do:\n    session "a"\n'),
    ("E102", 'session "a" ?\n', (1, 13), 'session "a?"\n'),
    (
        "E103",
        'do:\n    session "a"\n  session "b"\n',
        (3, 1),
        'do:\n    session "a"\n    session "b"\n',
    ),
    ("E104", 'session "a"\n    session "b"\n', (2, 1), 'session "a"\nsession "b"\n'),
    ("E105", "try:\ncatch:\n  throw\n", (1, 5), 'try:\n  session "a"\ncatch:\n  throw\n'),
    (
        "E105",
        'try:\n  throw\nfinally:\nsession "a"\n',
        (3, 9),
        'try:\n  throw\nfinally:\n  session "a"\n',
    ),
    ("E106", 'session """text\n"""\n', (1, 9), 'session """\ntext\n"""\n'),
    ("E107", 'if **never closed:\n  session "a"\n', (1, 4), 'if **closed**:\n  session "a"\n'),
    ("E108", "loop until ***\nnever closed\n", (1, 12), "loop until ***\nclosed\n***:\n  throw\n"),
    ("E109", "let x = [a, b\nlet y = 1\n", (1, 9), "let x = [a, b]\nlet y = 1\n"),
    (
        "E110",
        'elif **x**:\n  session "a"\n',
        (1, 1),
        'if **y**:\n  throw\nelif **x**:\n  session "a"\n',
    ),
    (
        "E111",
        'session "a"\nelse:\n  session "b"\n',
        (2, 1),
        'if **y**:\n  session "a"\nelse:\n  session "b"\n',
    ),
    (
        "E112",
        "if **y**:\n  throw\nelse:\n  throw\nelse:\n  throw\n",
        (5, 1),
        "if **y**:\n  throw\nelse:\n  throw\n",
    ),
    (
        "E112",
        "if **y**:\n  throw\nelse:\n  throw\nelif **z**:\n  throw\n",
        (5, 1),
        "if **y**:\n  throw\nelif **z**:\n  throw\n",
    ),
    ("E113", "catch:\n  throw\n", (1, 1), "try:\n  throw\ncatch:\n  throw\n"),
    ("E113", "finally:\n  throw\n", (1, 1), "try:\n  throw\nfinally:\n  throw\n"),
    ("E114", 'option "A":\n  throw\n', (1, 1), 'choice **c**:\n  option "A":\n    throw\n'),
    ("E116", '"just a string"\n', (1, 1), 'let s = "just a string"\n'),
    (
        "E119",
        "try:\n  throw\ncatch:\n  throw\ncatch:\n  throw\n",
        (5, 1),
        "try:\n  throw\ncatch:\n  throw\n",
    ),
    (
        "E119",
        "try:\n  throw\nfinally:\n  throw\ncatch:\n  throw\n",
        (5, 1),
        "try:\n  throw\ncatch:\n  throw\nfinally:\n  throw\n",
    ),
    ("E120", "let x = xs | sort:\n  throw\n", (1, 14), "let x = xs | map:\n  throw\n"),
    ("E121", "let x = xs | reduce:\n  throw\n", (1, 14), "let x = xs | reduce(a, b):\n  throw\n"),
    (
        "E121",
        "let x = xs | reduce(a):\n  throw\n",
        (1, 20),
        "let x = xs | reduce(a, b):\n  throw\n",
    ),
]


@pytest.mark.parametrize(
    ("code", "bad", "position", "good"), DIAGNOSTIC_CASES, ids=[c[0] for c in DIAGNOSTIC_CASES]
)
def test_diagnostic_rows(code: str, bad: str, position: tuple[int, int], good: str) -> None:
    found = diags(bad)
    assert (code, *position) in found, found
    assert diags(good) == []
    for d in parse_text(bad).diagnostics:
        assert d.code in CODES and d.severity == CODES[d.code].severity


def test_error_message_format() -> None:
    result = parse_text('session "ok"\n    session "Hello\n')
    rendered = [d.render(result.source) for d in result.diagnostics if d.code == "E001"]
    assert rendered == [
        'Error at line 2, column 13: Unterminated string literal\n      session "Hello\n'
        + " " * 14
        + "^"
    ]
    # one caret, at the opening quote, as in the reference's example
    result = parse_text('session "Hello\n')
    assert result.diagnostics[0].render(result.source) == (
        'Error at line 1, column 9: Unterminated string literal\n  session "Hello\n          ^'
    )


# --- recovery --------------------------------------------------------------------------------


def test_every_independent_error_is_reported() -> None:
    text = (
        'session "one\n'  # E001
        "let = 2\n"  # E004
        "agent a:\n"
        "  model: sonnet\n"
        "  ???\n"  # E102, inside a property block
        '  prompt: "fine"\n'
        "do:\n"
        '  session "a" )\n'  # E004 inside a block
        'else:\n  session "b"\n'  # E111
        'session "bad \\q"\n'  # E002
        'session "last"\n'
    )
    result = parse_text(text)
    assert [(d.code, d.line) for d in result.diagnostics] == [
        ("E001", 1), ("E004", 2), ("E102", 5), ("E004", 8), ("E111", 9), ("E002", 11)
    ]  # fmt: skip
    body = result.program.body
    assert body[-1] == session("last")
    agent = next(s for s in body if isinstance(s, n.AgentDef))
    assert [p.name.id for p in agent.properties] == ["model", "prompt"]


def test_broken_header_still_checks_its_block() -> None:
    result = parse_text('for in items:\n  session "x\n  session "ok"\nsession "after"\n')
    assert [(d.code, d.line) for d in result.diagnostics] == [("E004", 1), ("E001", 2)]
    assert isinstance(result.program.body[0], n.Invalid)
    assert result.program.body[-1] == session("after")


def test_a_condition_without_asterisks_is_one_error_and_the_loop_still_parses() -> None:
    result = parse_text('loop until bad:\n  session "x\n  session "ok"\nsession "after"\n')
    assert [(d.code, d.line) for d in result.diagnostics] == [("E004", 1), ("E001", 2)]
    loop = result.program.body[0]
    assert isinstance(loop, n.Loop) and loop.condition == n.Discretion(
        span=loop.condition.span, text="bad", triple=False
    )
    assert result.program.body[-1] == session("after")


def test_unclosed_bracket_is_one_diagnostic_and_the_next_line_parses() -> None:
    result = parse_text('do:\n  let x = [a\n  session "b"\n')
    assert diags('do:\n  let x = [a\n  session "b"\n') == [("E109", 2, 11)]
    (block,) = result.program.body
    assert isinstance(block, n.DoBlock) and block.body[1] == session("b")


def test_invalid_node_covers_the_broken_line() -> None:
    result = parse_text('let = 2\nsession "ok"\n')
    bad = result.program.body[0]
    assert isinstance(bad, n.Invalid) and bad.text == "let = 2"
    assert where(bad.span) == (1, 1, 1, 8)


# --- hostile input ---------------------------------------------------------------------------


def nested(depth: int) -> str:
    return "".join("  " * i + "do:\n" for i in range(depth)) + "  " * depth + 'session "x"\n'


def test_empty_and_blank_files() -> None:
    for text in ("", "\n\n", "   \n", "# only a comment", "\ufeff"):
        result = parse_text(text)
        assert result.program.body == () and result.diagnostics == ()


def test_400_nested_blocks_parse() -> None:
    result = parse_text(nested(400))
    assert result.diagnostics == ()
    node: n.Stmt = result.program.body[0]
    for _ in range(400):
        assert isinstance(node, n.DoBlock)
        node = node.body[0]
    assert node == session("x")


def test_nesting_beyond_the_cap_is_a_diagnostic() -> None:
    result = parse_text(nested(1100) + 'session "after"\n')
    # reported at the first token inside the 1001st level
    assert [(d.code, d.line, d.column) for d in result.diagnostics] == [("E115", 1002, 2003)]
    assert result.program.body[-1] == session("after")
    deep_brackets = parse_text("let x = " + "[" * 5000 + "]" * 5000 + "\n")
    assert [d.code for d in deep_brackets.diagnostics] == ["E115"]


@pytest.mark.parametrize(
    "text",
    [
        "repeat " * 6000 + "3:\n  throw\n",
        "parallel (" * 6000 + "\n",
        "for x in " * 6000 + "y:\n",
        'session "a" context: ' * 6000 + "\n",
        "f(a: " * 6000,
        "let x = " + "[" * 6000,
    ],
    ids=["repeat", "parallel", "for", "inline-property", "call", "array"],
)
def test_deep_expressions_hit_the_cap_not_the_stack(text: str) -> None:
    assert "E115" in [d.code for d in parse_text(text).diagnostics]


@pytest.mark.parametrize(
    "header", ["x y:", "elif **c**:", 'session "a"', "agent a:", 'option "o":']
)
def test_deeply_nested_broken_blocks_never_recurse_out(header: str) -> None:
    text = "".join("  " * i + header + "\n" for i in range(3000))
    result = parse_text(text)
    assert result.diagnostics and all(d.code in CODES for d in result.diagnostics)


def test_long_line_and_large_file() -> None:
    long_line = parse_text(
        'session "' + "a" * 200_000 + '"\nlet x = [' + ", ".join(["a"] * 20_000) + "]\n"
    )
    assert long_line.diagnostics == ()
    # 10 MB in long lines keeps the test quick; bench/frontend.py covers many short lines.
    chunk = 'session "hello {x} ' + "lorem ipsum " * 80 + '"\n  context: [a, b]\n# note\n'
    big = chunk * (10_000_000 // len(chunk))
    start = time.perf_counter()
    result = parse_text(big + "let = broken\n")
    assert [(d.code, d.line) for d in result.diagnostics] == [("E004", big.count("\n") + 1)]
    assert time.perf_counter() - start < 60


def test_binary_garbage_is_capped() -> None:
    garbage = "".join(chr(c % 0x2FF) for c in range(0, 300_000, 7)) + "\n" * 3000 + "?\n" * 3000
    result = parse_text(garbage)
    assert result.diagnostics
    assert len(result.diagnostics) <= 1001
    assert result.diagnostics[-1].code == "E117"


def test_non_utf8_is_E100_at_the_bad_byte(tmp_path: Path) -> None:
    path = tmp_path / "bad.prose"
    path.write_bytes(b'session "ok"\nsession "caf\xe9"\n')
    source, found = read_source(path)
    assert source is None
    assert [(d.code, d.line, d.column) for d in found] == [("E100", 2, 13)]
    good = tmp_path / "good.prose"
    good.write_bytes(b'\xef\xbb\xbfsession "caf\xc3\xa9"\n')
    source, found = read_source(good)
    assert found == [] and source is not None and source.text == 'session "café"\n'


def test_unreadable_file_is_E118(tmp_path: Path) -> None:
    source, found = read_source(tmp_path / "missing.prose")
    assert source is None and [(d.code, d.line, d.column) for d in found] == [("E118", 1, 1)]


def test_random_bytes_never_raise() -> None:
    data = bytes((i * 7919 + 13) % 256 for i in range(50_000))
    source, found = decode_source(data)
    assert source is None and found[0].code == "E100"
    lossy = data.decode("latin-1")
    assert isinstance(parse_text(lossy), ParseResult)


# --- spans on every node ---------------------------------------------------------------------

_OPENING_TEXT: dict[type, tuple[str, ...]] = {
    n.Session: ("session", "resume"),
    n.Binding: ("let", "const"),
    n.Use: ("use",),
    n.Input: ("input",),
    n.Output: ("output",),
    n.AgentDef: ("agent",),
    n.BlockDef: ("block",),
    n.DoBlock: ("do",),
    n.DoCall: ("do",),
    n.Parallel: ("parallel",),
    n.Repeat: ("repeat",),
    n.Loop: ("loop",),
    n.Try: ("try",),
    n.Throw: ("throw",),
    n.Choice: ("choice",),
    n.ChoiceOption: ("option",),
    n.If: ("if",),
    n.CatchClause: ("catch",),
    n.PipeOp: ("|",),
    n.ArrayLit: ("[",),
    n.ObjectContext: ("{",),
    n.Destructure: ("{",),
    n.Discretion: ("**",),
    n.StringLit: ('"',),
}


def _children(node: object) -> list[object]:
    found: list[object] = []
    for field in getattr(node, "__dataclass_fields__", {}):
        if field == "span":
            continue
        value = getattr(node, field)
        items = value if isinstance(value, tuple) else (value,)
        found.extend(
            item
            for item in items
            if hasattr(item, "__dataclass_fields__") and not isinstance(item, Span)
        )
    return found


def test_every_node_of_every_reference_example_has_an_exact_span() -> None:
    folder = Path(__file__).parent / "conformance" / "reference_examples"
    checked = 0
    for path in sorted(folder.glob("*.prose")):
        text = path.read_text(encoding="utf-8")
        result = parse_text(text)
        stack: list[tuple[object, Span]] = [
            (stmt, result.program.span) for stmt in result.program.body
        ]
        while stack:
            node, parent = stack.pop()
            span: Span = node.span  # type: ignore[attr-defined]
            assert parent.start <= span.start <= span.end <= parent.end, (path.name, node)
            assert result.source.position(span.start) == (span.line, span.column)
            assert result.source.position(span.end) == (span.end_line, span.end_column)
            source_text = text[span.start : span.end]
            assert source_text == source_text.strip(), (path.name, node)  # no stray layout
            if isinstance(node, n.Name):
                assert source_text == node.id
            elif isinstance(node, n.NumberLit):
                assert source_text == node.raw
            elif type(node) in _OPENING_TEXT and not isinstance(node, n.Invalid):
                assert source_text.startswith(_OPENING_TEXT[type(node)]), (path.name, node)
            checked += 1
            stack.extend((child, span) for child in _children(node))
    assert checked > 1000  # the walk really visited the trees


# --- interaction with the garbage collector --------------------------------------------------


def test_parse_restores_the_collector_and_leaves_frozen_objects_alone() -> None:
    import gc

    assert gc.isenabled()
    parse_text('session "a"\n')
    assert gc.isenabled() and gc.get_freeze_count() == 0
    gc.disable()
    try:
        parse_text('session "a"\n')
        assert not gc.isenabled()
    finally:
        gc.enable()
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert frozen > 0
        parse_text('session "a"\n')
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()


def test_the_bench_program_is_valid_and_uses_every_construct() -> None:
    import importlib.util

    path = Path(__file__).parents[2] / "bench" / "frontend.py"
    spec = importlib.util.spec_from_file_location("bench_frontend", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    result = parse_text(bench._build(bench._PROSE_CHUNK, 300))
    assert result.diagnostics == ()
    seen: set[str] = set()
    stack: list[object] = list(result.program.body)
    while stack:
        node = stack.pop()
        seen.add(type(node).__name__)
        stack.extend(_children(node))
    statement_kinds = {t.__name__ for t in n.Stmt.__args__} - {"Invalid"}
    assert statement_kinds <= seen


def test_layout_errors_report_one_diagnostic_not_a_cascade() -> None:
    # A property line indented too deep is E104 only; its `name: value` is not then reported
    # again as an unexpected ':' (it is parsed as a property, for its own errors).
    assert diags('agent a:\n  model: sonnet\n    prompt: "odd"\n') == [("E104", 3, 1)]
    assert diags('agent a:\n  model: sonnet\n    prompt: "odd" "x"\n') == [
        ("E104", 3, 1),
        ("E004", 3, 19),
    ]
    # A line dedented to no known level is E103 only, whatever is on it.
    assert diags('agent a:\n    model: sonnet\n  prompt: "x"\n') == [("E103", 3, 1)]
    # and the lines after it parse normally
    result = parse_text('do:\n    session "a"\n  session "b"\nsession: nobody x\n')
    assert [(d.code, d.line, d.column) for d in result.diagnostics] == [
        ("E103", 3, 1),
        ("E004", 4, 17),
    ]


def test_E100_offset_is_the_files_own_byte_offset_after_a_bom() -> None:
    # The BOM is stripped before decoding; the offset in the message still counts it, so it
    # names the bad byte's offset in the file. Line and column ignore the BOM, as for valid files.
    source, found = decode_source(b'\xef\xbb\xbfsession "caf\xe9"\n')
    assert source is None
    assert [(d.code, d.line, d.column) for d in found] == [("E100", 1, 13)]
    assert "byte 0xe9 at offset 15" in found[0].message
    _, found = decode_source(b'session "caf\xe9"\n')
    assert "byte 0xe9 at offset 12" in found[0].message


def test_block_under_a_broken_agent_or_session_header_is_checked_as_properties() -> None:
    # Parsed as statements, `model: sonnet` would be a second, dependent "unexpected ':'".
    assert diags("agent a\n  model: sonnet\n") == [("E005", 1, 8)]
    assert diags('session "x" "y"\n  model: opus\n') == [("E004", 1, 13)]
    # an independent error inside that block is still reported
    assert diags("agent a b:\n  model: sonnet\n  colour: 1 2\n") == [
        ("E004", 1, 9),
        ("E004", 3, 13),
    ]


# --- real programs beyond the grammar: one diagnostic a problem, and the fix -----------------


def _fixed(text: str, *, unsafe: bool = False) -> str:
    from openprose.fixes import fix_source
    from openprose.source import SourceFile

    return fix_source(SourceFile.from_text(text), unsafe=unsafe).text


def test_properties_indented_under_a_property_move_out_to_its_column() -> None:
    text = 'session "a"\n  prompt: "p"\n    context: []\n    retry: 2\nsession "b"\n'
    (found,) = parse_text(text).diagnostics
    assert (found.code, found.line) == ("E104", 3) and found.fix and found.fix.safe
    assert _fixed(text) == 'session "a"\n  prompt: "p"\n  context: []\n  retry: 2\nsession "b"\n'


def test_no_dedent_fix_when_a_string_of_the_run_spans_lines() -> None:
    text = 'session "a"\n  context: []\n    prompt: """\n    x\n    """\n'
    (found,) = parse_text(text).diagnostics
    assert found.code == "E104" and found.fix is None


@pytest.mark.parametrize(
    ("text", "keyword", "condition"),
    [
        ('if depth <= 0:\n  session "a"\n', "if", "depth <= 0"),
        ('if **short** or n < 1:\n  session "a"\n', "if", "short or n < 1"),
        ('if **a**:\n  session "a"\nelif j > i:\n  session "b"\n', "elif", "j > i"),
        ('loop until done (max: 3):\n  session "a"\n', "until", "done"),
        ('loop while n < 3 as i:\n  session "a"\n', "while", "n < 3"),
        ('choice best one:\n  option "x":\n    session "a"\n', "choice", "best one"),
    ],
)
def test_a_condition_without_asterisks_is_one_error_with_the_discretion_fix(
    text: str, keyword: str, condition: str
) -> None:
    (found,) = [d for d in parse_text(text).diagnostics]
    assert found.code == "E004" and f"`{keyword}`" in found.message
    assert found.fix is not None and not found.fix.safe
    assert f"**{condition}**" in _fixed(text, unsafe=True)
    assert parse_text(_fixed(text, unsafe=True)).ok


def test_output_without_a_name_is_one_error_and_its_properties_are_not_statements() -> None:
    text = 'block f(x):\n  output session "a"\n    context: x\n    retry: 2\n  output x\n'
    assert diags(text) == [("E023", 2, 10), ("E023", 5, 10)]
    body = parse_text(text).program.body[0].body  # type: ignore[attr-defined]
    assert all(isinstance(s, n.Invalid) for s in body)
    assert diags('output = session "a"\n') == []  # the checker's E023, not the parser's


def test_a_keyed_context_object_is_one_error_with_the_names_fix() -> None:
    text = 'let a = session "x"\nsession "y"\n  context: { draft: a, notes: a }\n'
    (found,) = parse_text(text).diagnostics
    assert found.code == "E004" and (found.line, found.column) == (3, 12)
    assert "context: { a, a }" in _fixed(text, unsafe=True)
    assert _fixed(text) == text


def test_properties_under_a_broken_line_are_checked_as_properties() -> None:
    text = 'let x = session: writer extra\n  prompt: "p"\n  context: []\n'
    assert [d.code for d in parse_text(text).diagnostics] == ["E004"]


def test_early_forms_are_one_error_each_with_a_safe_fix_and_parse_as_meant() -> None:
    text = (
        'session "Merge":\n  context: []\n'
        'session "Call" (retry: 3, backoff: linear)\n'
        'repeat 2: session "Again"\n'
    )
    found = parse_text(text).diagnostics
    assert [(d.code, d.line) for d in found] == [("E004", 1), ("E004", 3), ("E004", 4)]
    assert all(d.fix is not None and d.fix.safe for d in found)
    merge, call, again = parse_text(text).program.body
    assert [p.name.id for p in merge.properties] == ["context"]  # type: ignore[attr-defined]
    assert [p.name.id for p in call.properties] == ["retry", "backoff"]  # type: ignore[attr-defined]
    assert isinstance(again, n.Repeat) and again.body == (session("Again"),)
    assert _fixed(text) == (
        'session "Merge"\n  context: []\n'
        'session "Call"\n  retry: 3\n  backoff: linear\n'
        'repeat 2:\n  session "Again"\n'
    )


def test_no_inline_body_fix_when_a_block_follows_or_the_statement_is_incomplete() -> None:
    assert [d.fix for d in parse_text('if **a**: session "x"\n  context: []\n').diagnostics]
    assert all(d.fix is None for d in parse_text("repeat 2: let x =\n").diagnostics)
    with_block = parse_text('session "x" (retry: 2)\n  context: []\n').diagnostics
    assert [(d.code, d.fix) for d in with_block] == [("E004", None)]


def test_a_choice_with_bare_statements_reports_the_form_once() -> None:
    text = 'choice **which is better**:\n  session "A"\n  session "B"\n  session "C"\n'
    assert diags(text) == [("E004", 2, 3)]


def test_statements_nested_on_one_header_line_stop_at_the_nesting_limit() -> None:
    # `repeat 1: repeat 1: …` nests like indented blocks: bounded, never a RecursionError
    for count in (50, 5_000):
        result = parse_text("repeat 1: " * count + 'session "x"\n')
        assert result.diagnostics and {d.code for d in result.diagnostics} == {"E004"}


def test_a_block_may_set_its_recursion_limit() -> None:
    # reference VM, "Recursion Depth Limits": block process(chunk, depth) (max_depth: 50):
    (block,) = ok('block process(chunk, depth) (max_depth: 50):\n  session "x"\n')
    assert isinstance(block, n.BlockDef) and [p.id for p in block.params] == ["chunk", "depth"]
    (mod,) = block.modifiers
    assert mod.name is not None and mod.name.id == "max_depth" and mod.value.value == 50  # type: ignore[attr-defined]
    (bare,) = ok('block tidy (max_depth: 2):\n  session "x"\n')
    assert isinstance(bare, n.BlockDef) and bare.params == () and len(bare.modifiers) == 1

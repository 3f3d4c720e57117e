"""The tree's one walk (`nodes.children`/`nodes.walk`), and every statement type handled by
every stage: parser, printer, compiler, checker, language-server index and interpreter.

Adding a node class to `nodes.Stmt` makes `test_every_statement_type_has_a_sample` fail until
it has a sample below; the sample then runs through each stage, and fails where a stage has no
handler for it."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

from openprose import nodes as n
from openprose.checker import check
from openprose.checker.state import Checker
from openprose.compiler import canonicalize, compile_program
from openprose.depth import MAX_NESTING
from openprose.lsp.index import _Indexer
from openprose.parser import parse_text
from openprose.printer import print_program
from openprose.vm.interpreter import _HANDLERS as INTERPRETER_HANDLERS

# One program per statement type, holding it as a top-level statement.
SAMPLES: dict[type, str] = {
    n.Use: 'use "alice/research"\n',
    n.Input: 'input topic: "what to research"\n',
    n.Output: 'output report: {title: string} = session "Write it"\n',  # with a shape
    n.AgentDef: 'agent writer:\n  model: sonnet\n  prompt: "You write."\n',
    n.BlockDef: 'block greet(name):\n  session "Hello {name}"\n',
    n.Binding: 'let x = session "a"\n',
    n.Assign: 'let x = session "a"\nx = session "b"\n',
    n.Session: 'session "Hello"\n  returns: list of string\n',  # with a shape
    n.Ask: 'let plan = ask "Which plan?"\n  options: ["fast", "safe"]\n  default: "safe"\n'
    'ask "Ready to ship {plan}?" timeout: "10m"\n',
    n.ProgramCall: 'use "alice/research"\nresearch(topic: "AI")\n',
    n.DoBlock: 'do:\n  session "a"\n',
    n.DoCall: 'block greet:\n  session "hi"\ndo greet\n',
    n.Arrow: 'session "a" -> session "b"\n',
    n.Parallel: 'parallel:\n  a = session "x"\n  b = session "y"\n',
    n.Repeat: 'repeat 2:\n  session "a"\n',
    n.ForEach: 'let xs = ["a", "b"]\nfor x in xs:\n  session "About {x}"\n',
    n.Loop: 'loop until **done** (max: 3):\n  session "again"\n',
    n.Pipeline: 'let xs = ["a"]\nxs | map:\n  session "About {item}"\n',
    n.Try: 'try:\n  session "a"\ncatch as err:\n  session "b"\nfinally:\n  session "c"\n',
    n.Throw: 'throw "stop"\n',
    n.Choice: 'choice **which**:\n  option "a":\n    session "a"\n  option "b":\n    session "b"\n',
    n.If: 'if **x**:\n  session "a"\nelif **y**:\n  session "b"\nelse:\n  session "c"\n',
    n.Invalid: 'session "a"\nlet = = 3\n',
}

# Stages a statement type is allowed to skip, and why.
EXEMPT: dict[tuple[type, str], str] = {
    (n.Invalid, "index"): "source the parser rejected declares nothing to navigate to",
    (n.Invalid, "interpreter"): "the VM never runs a program with errors",
    (n.Invalid, "compiler"): "a program with errors is not compiled",
}

STATEMENTS = [pytest.param(cls, id=cls.__name__) for cls in n.STATEMENT_TYPES]


def _parsed(cls: type) -> n.Program:
    result = parse_text(SAMPLES[cls])
    assert (result.diagnostics != ()) == (cls is n.Invalid), result.diagnostics
    return result.program


def _skip_if_exempt(cls: type, stage: str) -> None:
    reason = EXEMPT.get((cls, stage))
    if reason is not None:
        pytest.skip(reason)


def test_every_statement_type_has_a_sample() -> None:
    missing = [cls.__name__ for cls in n.STATEMENT_TYPES if cls not in SAMPLES]
    assert missing == [], "add a sample program (and a handler in every stage) for these"


def test_every_node_class_is_a_node_type() -> None:
    # A class left out of the `Node` union would be invisible to `children` and `walk`.
    defined = {
        cls
        for _, cls in inspect.getmembers(n, inspect.isclass)
        if dataclasses.is_dataclass(cls) and cls.__module__ == n.__name__
    }
    assert defined == set(n.NODE_TYPES)


@pytest.mark.parametrize("cls", STATEMENTS)
def test_the_parser_reads_it(cls: type) -> None:
    assert cls in {type(stmt) for stmt in _parsed(cls).body}


@pytest.mark.parametrize("cls", STATEMENTS)
def test_the_printer_writes_what_parses_back_to_it(cls: type) -> None:
    program = _parsed(cls)
    printed = print_program(program)
    again = parse_text(printed)
    assert again.program == program, printed


@pytest.mark.parametrize("cls", STATEMENTS)
def test_the_compiler_output_parses_to_its_canonical_tree(cls: type) -> None:
    _skip_if_exempt(cls, "compiler")
    program = _parsed(cls)
    compiled = compile_program(program)
    assert parse_text(compiled).program == canonicalize(program)
    assert compile_program(parse_text(compiled).program) == compiled


@pytest.mark.parametrize("cls", STATEMENTS)
def test_the_checker_has_a_handler_it_visits(cls: type, monkeypatch: pytest.MonkeyPatch) -> None:
    handled: set[type] = set()
    visit = Checker.visit

    def spying(self: Checker, node: Any) -> None:
        if type(node) in self.dispatch:
            handled.add(type(node))
        visit(self, node)

    monkeypatch.setattr(Checker, "visit", spying)
    check(SAMPLES[cls])
    assert cls in handled


@pytest.mark.parametrize("cls", STATEMENTS)
def test_the_language_server_index_has_a_handler(cls: type) -> None:
    _skip_if_exempt(cls, "index")
    assert cls in _Indexer().dispatch


@pytest.mark.parametrize("cls", STATEMENTS)
def test_the_interpreter_has_a_handler(cls: type) -> None:
    _skip_if_exempt(cls, "interpreter")
    assert cls in INTERPRETER_HANDLERS


# --- children and walk ---------------------------------------------------------------------


def test_children_are_the_nodes_directly_inside_in_field_order() -> None:
    program = parse_text('let x = session "About {topic}"\n').program
    (binding,) = program.body
    assert isinstance(binding, n.Binding)
    assert list(n.children(binding)) == [binding.target, binding.value]
    session = binding.value
    assert isinstance(session, n.Session) and session.prompt is not None
    # text parts of a string are not nodes; its interpolation is
    assert list(n.children(session.prompt)) == list(session.prompt.interpolations)


def test_children_leave_out_spans_comments_and_labels() -> None:
    program = parse_text(
        '# a note\nblock f(x):\n  session "{x}"\ntry:\n  do f(topic: "a")\nfinally:\n'
        '  session "b"\n'
    ).program
    assert program.comments  # kept beside the tree, not in it
    assert list(n.children(program)) == list(program.body)
    try_ = program.body[1]
    assert isinstance(try_, n.Try) and try_.finally_body is not None
    assert list(n.children(try_)) == [*try_.body, *try_.finally_body]
    call = try_.body[0]
    assert isinstance(call, n.DoCall) and call.labels
    assert list(n.children(call)) == [call.name, *call.args]


def test_walk_is_depth_first_each_node_before_its_children() -> None:
    program = parse_text('if **a**:\n  let x = session "p"\nelse:\n  throw "t"\n').program
    names = [type(node).__name__ for node in n.walk(program)]
    assert names == [
        "Program",
        "If",
        "CondBranch",
        "Discretion",
        "Binding",
        "Name",
        "Session",
        "StringLit",
        "Throw",
        "StringLit",
    ]


def test_walk_reaches_every_node_of_every_sample_once() -> None:
    for text in SAMPLES.values():
        program = parse_text(text).program
        walked = list(n.walk(program))
        assert len({id(node) for node in walked}) == len(walked)
        # every node met is a child of exactly one node met before it (or the root)
        parents = [child for node in walked for child in n.children(node)]
        assert sorted(map(id, parents)) == sorted(id(node) for node in walked[1:])


def test_walk_goes_as_deep_as_the_parser_allows() -> None:
    depth = MAX_NESTING - 1
    text = "".join("  " * level + "do:\n" for level in range(depth))
    text += "  " * depth + 'session "deep"\n'
    result = parse_text(text)
    assert result.diagnostics == ()
    sessions = [node for node in n.walk(result.program) if isinstance(node, n.Session)]
    assert len(sessions) == 1

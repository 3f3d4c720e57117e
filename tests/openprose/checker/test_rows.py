"""Conformance: every row of every validation table of the reference (and every code of its
"Validation Rules" list) has a failing program that reports the row's code at an exact
position, and a passing program that does not report it.

Every case is source text: the parser keeps an empty name (`input : "x"`) and an empty
`if`/`option` body for the checker to report (docs/decisions.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import pytest

from openprose.checker import check
from openprose.checker.rows import ROWS
from openprose.codes import CODES
from openprose.contracts import ProgramContract
from openprose.parser import parse_text


def research_contract(path: str, base: Path | None) -> ProgramContract | None:
    if path == "@alice/research":
        return ProgramContract(("topic",), ("findings", "sources"))
    return None


class Case(NamedTuple):
    failing: str
    line: int
    column: int
    passing: str
    options: dict[str, Any] | None = None


RESEARCH = {"contracts": research_contract}
USE_RESEARCH = 'use "@alice/research" as research\n'
LONG = "x" * 10_001

CASES: dict[tuple[str, str], Case] = {
    # --- String Literals ---
    ("String Literals", "Unterminated string"): Case('session "Hello\n', 1, 9, 'session "Hello"\n'),
    ("String Literals", "Unknown escape sequence"): Case(
        'session "a\\qb"\n', 1, 11, 'session "a\\nb"\n'
    ),
    ("String Literals", "Empty string as prompt"): Case(
        'session ""\n', 1, 9, 'session "Say hello"\n'
    ),
    ("String Literals", "Undefined interpolation variable"): Case(
        'let name = session "Ask the name"\nsession "Hello {nme}, welcome"\n',
        2,
        16,
        'let name = session "Ask the name"\nsession "Hello {name}, welcome"\n',
    ),
    # --- Use Statements ---
    ("Use Statements", "Empty path"): Case('use ""\n', 1, 5, 'use "@alice/research"\n'),
    ("Use Statements", "Invalid path format"): Case(
        'use "@alice"\n', 1, 5, 'use "@alice/research"\n'
    ),
    ("Use Statements", "Duplicate import"): Case(
        'use "@alice/research"\nuse "@alice/research"\n',
        2,
        5,
        'use "@alice/research"\nuse "@alice/critique"\n',
    ),
    ("Use Statements", "Missing alias for dup"): Case(
        'use "@alice/research"\nuse "@bob/research"\n',
        2,
        5,
        'use "@alice/research"\nuse "@bob/research" as bob-research\n',
    ),
    # --- Input Declarations ---
    ("Input Declarations", "Empty input name"): Case(
        'input : "The subject"\n', 1, 1, 'input topic: "The subject"\n'
    ),
    ("Input Declarations", "Empty description"): Case(
        'input topic: ""\n', 1, 14, 'input topic: "The subject to research"\n'
    ),
    ("Input Declarations", "Duplicate input name"): Case(
        'input topic: "The subject"\ninput topic: "Again"\n',
        2,
        7,
        'input topic: "The subject"\ninput depth: "How deep"\n',
    ),
    ("Input Declarations", "Input after executable"): Case(
        'session "Start"\ninput topic: "The subject"\n',
        2,
        1,
        'input topic: "The subject"\nsession "Start"\n',
    ),
    # --- Output Bindings ---
    ("Output Bindings", "Empty output name"): Case(
        'output = session "Synthesize"\n', 1, 1, 'output findings = session "Synthesize"\n'
    ),
    ("Output Bindings", "Duplicate output name"): Case(
        'output findings = session "A"\noutput findings = session "B"\n',
        2,
        8,
        'output findings = session "A"\noutput sources = session "B"\n',
    ),
    ("Output Bindings", "Output name conflicts"): Case(
        'let raw = session "Research"\noutput raw = session "Synthesize"\n',
        2,
        8,
        'let raw = session "Research"\noutput findings = session "Synthesize"\n  context: raw\n',
    ),
    # --- Program Invocation ---
    ("Program Invocation", "Unknown program"): Case(
        'let result = research(topic: "quantum")\n',
        1,
        14,
        USE_RESEARCH + 'let result = research(topic: "quantum")\n',
        RESEARCH,
    ),
    ("Program Invocation", "Missing required input"): Case(
        USE_RESEARCH + "let result = research()\n",
        2,
        14,
        USE_RESEARCH + 'let result = research(topic: "quantum")\n',
        RESEARCH,
    ),
    ("Program Invocation", "Unknown input name"): Case(
        USE_RESEARCH + 'let result = research(topic: "q", depth: "deep")\n',
        2,
        35,
        USE_RESEARCH + 'let result = research(topic: "q")\n',
        RESEARCH,
    ),
    ("Program Invocation", "Unknown output property"): Case(
        USE_RESEARCH + 'let result = research(topic: "q")\nsession "Write"\n'
        "  context: result.summary\n",
        4,
        19,
        USE_RESEARCH + 'let result = research(topic: "q")\nsession "Write"\n'
        "  context: result.findings\n",
        RESEARCH,
    ),
    # --- Agent Definitions ---
    ("Agent Definitions", "Duplicate agent name"): Case(
        "agent writer:\n  model: opus\nagent writer:\n  model: haiku\n",
        3,
        7,
        "agent writer:\n  model: opus\nagent editor:\n  model: haiku\n",
    ),
    ("Agent Definitions", "Invalid model value"): Case(
        "agent writer:\n  model: gpt4\n", 2, 10, "agent writer:\n  model: sonnet\n"
    ),
    ("Agent Definitions", "Empty prompt property"): Case(
        'agent writer:\n  prompt: ""\n', 2, 11, 'agent writer:\n  prompt: "You write"\n'
    ),
    ("Agent Definitions", "Duplicate property"): Case(
        "agent writer:\n  model: opus\n  model: haiku\n",
        3,
        3,
        'agent writer:\n  model: opus\n  prompt: "You write"\n',
    ),
    # --- Session Statement ---
    ("Session Statement", "Missing prompt and agent"): Case(
        "let x = session\n", 1, 9, 'let x = session "Do it"\n'
    ),
    ("Session Statement", "Undefined agent reference"): Case(
        "session: ghost\n", 1, 10, "agent ghost:\n  model: haiku\nsession: ghost\n"
    ),
    ("Session Statement", 'Empty prompt `""`'): Case(
        'let x = session ""\n', 1, 17, 'let x = session "Go"\n'
    ),
    ("Session Statement", "Whitespace-only prompt"): Case(
        'session "   "\n', 1, 9, 'session " Go "\n'
    ),
    ("Session Statement", "Prompt > 10,000 chars"): Case(
        f'session "{LONG}"\n', 1, 9, f'session "{LONG[:10_000]}"\n'
    ),
    ("Session Statement", "Duplicate property"): Case(
        'session "Call the API"\n  retry: 2\n  retry: 3\n',
        3,
        3,
        'session "Call the API"\n  retry: 2\n  backoff: linear\n',
    ),
    # --- Resume Statement ---
    ("Resume Statement", "`resume:` on non-persistent agent"): Case(
        "agent captain:\n  model: opus\nsession: captain\nresume: captain\n",
        4,
        9,
        "agent captain:\n  model: opus\n  persist: true\nsession: captain\nresume: captain\n",
    ),
    ("Resume Statement", "`resume:` with no existing memory"): Case(
        "agent captain:\n  persist: true\nresume: captain\n",
        3,
        9,
        "agent captain:\n  persist: true\nsession: captain\nresume: captain\n",
    ),
    ("Resume Statement", "`session:` on persistent agent with memory"): Case(
        "agent captain:\n  persist: true\nsession: captain\nsession: captain\n",
        4,
        10,
        "agent captain:\n  persist: true\nsession: captain\nresume: captain\n",
    ),
    ("Resume Statement", "Undefined agent reference"): Case(
        "resume: captain\n",
        1,
        9,
        "agent captain:\n  persist: true\nsession: captain\nresume: captain\n",
    ),
    # --- Variables & Context ---
    ("Variables & Context", "Duplicate variable name"): Case(
        'let result = session "Outer"\nlet items = ["a"]\nfor item in items:\n'
        '  let result = session "Inner"\n',
        4,
        7,
        'let result = session "Outer"\nlet items = ["a"]\nfor item in items:\n'
        '  let inner = session "Inner"\n',
    ),
    ("Variables & Context", "Const reassignment"): Case(
        'const config = session "Get config"\nconfig = session "Change"\n',
        2,
        1,
        'let config = session "Get config"\nconfig = session "Change"\n',
    ),
    ("Variables & Context", "Undefined variable reference"): Case(
        "let copy = draft\n", 1, 12, 'let draft = session "Draft"\nlet copy = draft\n'
    ),
    ("Variables & Context", "Variable conflicts with agent"): Case(
        'agent writer:\n  model: opus\nlet writer = session "Write"\n',
        3,
        5,
        'agent writer:\n  model: opus\nlet draft = session "Write"\n',
    ),
    ("Variables & Context", "Undefined context variable"): Case(
        'session "Summarize"\n  context: research\n',
        2,
        12,
        'let research = session "Research"\nsession "Summarize"\n  context: research\n',
    ),
    ("Variables & Context", "Non-identifier in context array"): Case(
        'let a = session "A"\nsession "Combine"\n  context: [a, "b"]\n',
        3,
        16,
        'let a = session "A"\nlet b = session "B"\nsession "Combine"\n  context: [a, b]\n',
    ),
    # --- Block Parameters ---
    ("Block Parameters", "Argument count mismatch"): Case(
        'block review(topic):\n  session "Review {topic}"\ndo review("a", "b")\n',
        3,
        4,
        'block review(topic):\n  session "Review {topic}"\ndo review("a")\n',
    ),
    ("Block Parameters", "Parameter shadows outer"): Case(
        'let topic = session "Pick"\nblock review(topic):\n  session "Review {topic}"\n',
        2,
        14,
        'let topic = session "Pick"\nblock review(subject):\n  session "Review {subject}"\n',
    ),
    # --- Composition Blocks ---
    ("Composition Blocks", "Undefined block reference"): Case(
        "do checks\n", 1, 4, 'do checks\nblock checks:\n  session "Check syntax"\n'
    ),
    ("Composition Blocks", "Duplicate block definition"): Case(
        'block checks:\n  session "A"\nblock checks:\n  session "B"\n',
        3,
        7,
        'block checks:\n  session "A"\nblock reviews:\n  session "B"\n',
    ),
    ("Composition Blocks", "Block name conflicts with agent"): Case(
        'agent review:\n  model: opus\nblock review:\n  session "A"\n',
        3,
        7,
        'agent reviewer:\n  model: opus\nblock review:\n  session "A"\n',
    ),
    ("Composition Blocks", "Empty block name"): Case(
        'block :\n  session "A"\n', 1, 1, 'block checks:\n  session "A"\n'
    ),
    # --- Parallel Blocks ---
    ("Parallel Blocks", "Invalid join strategy"): Case(
        'parallel ("fastest"):\n  session "A"\n  session "B"\n',
        1,
        11,
        'parallel ("first"):\n  session "A"\n  session "B"\n',
    ),
    ("Parallel Blocks", "Invalid on-fail policy"): Case(
        'parallel (on-fail: "retry"):\n  session "A"\n',
        1,
        20,
        'parallel (on-fail: "continue"):\n  session "A"\n',
    ),
    ("Parallel Blocks", 'Count without "any"'): Case(
        'parallel ("first", count: 1):\n  session "A"\n  session "B"\n',
        1,
        20,
        'parallel ("any", count: 1):\n  session "A"\n  session "B"\n',
    ),
    ("Parallel Blocks", "Count less than 1"): Case(
        'parallel ("any", count: 0):\n  session "A"\n',
        1,
        25,
        'parallel ("any", count: 1):\n  session "A"\n',
    ),
    ("Parallel Blocks", "Count exceeds branches"): Case(
        'parallel ("any", count: 3):\n  session "A"\n  session "B"\n',
        1,
        25,
        'parallel ("any", count: 2):\n  session "A"\n  session "B"\n',
    ),
    ("Parallel Blocks", "Duplicate variable in parallel"): Case(
        'parallel:\n  a = session "A"\n  a = session "B"\n',
        3,
        3,
        'parallel:\n  a = session "A"\n  b = session "B"\n',
    ),
    ("Parallel Blocks", "Variable conflicts with agent"): Case(
        'agent sec:\n  model: opus\nparallel:\n  sec = session "Security review"\n',
        4,
        3,
        "agent sec:\n  model: opus\nparallel:\n  security = session: sec\n",
    ),
    ("Parallel Blocks", "Undefined variable in object context"): Case(
        'parallel:\n  a = session "A"\nsession "Combine"\n  context: { a, b }\n',
        4,
        17,
        'parallel:\n  a = session "A"\n  b = session "B"\nsession "Combine"\n  context: { a, b }\n',
    ),
    # --- Fixed Loops ---
    ("Fixed Loops", "Repeat count must be positive"): Case(
        'repeat 0:\n  session "Idea"\n', 1, 8, 'repeat 3:\n  session "Idea"\n'
    ),
    ("Fixed Loops", "Repeat count must be integer"): Case(
        'repeat 2.5:\n  session "Idea"\n', 1, 8, 'repeat 2:\n  session "Idea"\n'
    ),
    ("Fixed Loops", "Undefined collection variable"): Case(
        'for fruit in fruits:\n  session "Describe"\n',
        1,
        14,
        'let fruits = ["apple"]\nfor fruit in fruits:\n  session "Describe"\n',
    ),
    ("Fixed Loops", "Loop variable shadows outer"): Case(
        'let item = session "outer"\nfor item in ["a", "b"]:\n  session "Process"\n'
        "    context: item\n",
        2,
        5,
        'let item = session "outer"\nfor each in ["a", "b"]:\n  session "Process"\n'
        "    context: each\n",
    ),
    # --- Unbounded Loops ---
    ("Unbounded Loops", "Loop without max or condition"): Case(
        'loop:\n  session "Next"\n', 1, 1, 'loop (max: 50):\n  session "Next"\n'
    ),
    ("Unbounded Loops", "Max iterations <= 0"): Case(
        'loop (max: 0):\n  session "Next"\n', 1, 12, 'loop (max: 1):\n  session "Next"\n'
    ),
    ("Unbounded Loops", "Max iterations not integer"): Case(
        'loop (max: 2.5):\n  session "Next"\n', 1, 12, 'loop (max: 2):\n  session "Next"\n'
    ),
    ("Unbounded Loops", "Empty discretion condition"): Case(
        'loop until **  ** (max: 3):\n  session "Next"\n',
        1,
        12,
        'loop until **the task is complete** (max: 3):\n  session "Next"\n',
    ),
    ("Unbounded Loops", "Very short condition"): Case(
        'loop until **done** (max: 3):\n  session "Next"\n',
        1,
        12,
        'loop until **all tests pass** (max: 3):\n  session "Next"\n',
    ),
    ("Unbounded Loops", "Loop variable shadows outer"): Case(
        'let i = session "outer"\nloop until **the work is done** (max: 3) as i:\n'
        '  session "Use"\n    context: i\n',
        2,
        45,
        'let i = session "outer"\nloop until **the work is done** (max: 3) as attempt:\n'
        '  session "Use"\n    context: attempt\n',
    ),
    # --- Pipeline Operations ---
    ("Pipeline Operations", "Undefined input collection"): Case(
        'let out = articles | map:\n  session "Summarize"\n    context: item\n',
        1,
        11,
        'let articles = ["a"]\nlet out = articles | map:\n  session "Summarize"\n'
        "    context: item\n",
    ),
    ("Pipeline Operations", "Invalid pipe operator"): Case(
        'let xs = ["a"]\nlet out = xs | sort:\n  session "S"\n',
        2,
        16,
        'let xs = ["a"]\nlet out = xs | map:\n  session "S"\n',
    ),
    ("Pipeline Operations", "Reduce without variables"): Case(
        'let xs = ["a"]\nlet out = xs | reduce:\n  session "S"\n',
        2,
        16,
        'let xs = ["a"]\nlet out = xs | reduce(acc, x):\n  session "S"\n    context: [acc, x]\n',
    ),
    ("Pipeline Operations", "Pipeline variable shadows outer"): Case(
        'let item = session "outer"\nlet items = ["a"]\nlet out = items | map:\n'
        '  session "P"\n    context: item\n',
        3,
        17,
        'let thing = session "outer"\nlet items = ["a"]\nlet out = items | map:\n'
        '  session "P"\n    context: item\n',
    ),
    # --- Error Handling ---
    ("Error Handling", "Try without catch or finally"): Case(
        'try:\n  session "Risky"\n',
        1,
        1,
        'try:\n  session "Risky"\nfinally:\n  session "Clean up"\n',
    ),
    ("Error Handling", "Error variable shadows outer"): Case(
        'let err = session "A"\ntry:\n  session "Risky"\ncatch as err:\n  session "Log"\n',
        4,
        10,
        'let e = session "A"\ntry:\n  session "Risky"\ncatch as err:\n  session "Log"\n',
    ),
    ("Error Handling", "Empty throw message"): Case('throw ""\n', 1, 7, 'throw "Precondition"\n'),
    ("Error Handling", "Non-positive retry count"): Case(
        'session "API"\n  retry: 0\n', 2, 10, 'session "API"\n  retry: 1\n'
    ),
    ("Error Handling", "Non-integer retry count"): Case(
        'session "API"\n  retry: 1.5\n', 2, 10, 'session "API"\n  retry: 2\n'
    ),
    ("Error Handling", "High retry count (>10)"): Case(
        'session "API"\n  retry: 11\n', 2, 10, 'session "API"\n  retry: 10\n'
    ),
    ("Error Handling", "Invalid backoff strategy"): Case(
        'session "API"\n  retry: 3\n  backoff: random\n',
        3,
        12,
        'session "API"\n  retry: 3\n  backoff: exponential\n',
    ),
    ("Error Handling", "Retry on agent definition"): Case(
        "agent caller:\n  retry: 3\n",
        2,
        3,
        "agent caller:\n  model: haiku\nsession: caller\n  retry: 3\n",
    ),
    # --- Choice Blocks ---
    ("Choice Blocks", "Choice without options"): Case(
        'choice **the best approach**:\n  session "A"\n',
        1,
        1,
        'choice **the best approach**:\n  option "A":\n    session "A"\n',
    ),
    ("Choice Blocks", "Empty criteria"): Case(
        'choice ** **:\n  option "A":\n    session "A"\n',
        1,
        8,
        'choice **the best approach**:\n  option "A":\n    session "A"\n',
    ),
    ("Choice Blocks", "Duplicate option labels"): Case(
        'choice **the best approach**:\n  option "A":\n    session "A"\n  option "A":\n'
        '    session "B"\n',
        4,
        10,
        'choice **the best approach**:\n  option "A":\n    session "A"\n  option "B":\n'
        '    session "B"\n',
    ),
    ("Choice Blocks", "Empty option body"): Case(
        'choice **the best approach**:\n  option "A":\n    # to do\n  option "B":\n'
        '    session "B"\n',
        2,
        3,
        'choice **the best approach**:\n  option "A":\n    session "A"\n',
    ),
    # --- Conditional Statements ---
    ("Conditional Statements", "Empty condition"): Case(
        'if **   **:\n  session "A"\n', 1, 4, 'if **the system is healthy**:\n  session "A"\n'
    ),
    ("Conditional Statements", "Elif without if"): Case(
        'session "A"\nelif **the other case holds**:\n  session "B"\n',
        2,
        1,
        'if **the first case holds**:\n  session "A"\nelif **the other case holds**:\n'
        '  session "B"\n',
    ),
    ("Conditional Statements", "Else without if"): Case(
        'session "A"\nelse:\n  session "B"\n',
        2,
        1,
        'if **the first case holds**:\n  session "A"\nelse:\n  session "B"\n',
    ),
    ("Conditional Statements", "Multiple else"): Case(
        'if **the first case holds**:\n  session "A"\nelse:\n  session "B"\nelse:\n  session "C"\n',
        5,
        1,
        'if **the first case holds**:\n  session "A"\nelse:\n  session "B"\n',
    ),
    ("Conditional Statements", "Empty body"): Case(
        'if **the system is healthy**:\n  # nothing to do yet\nelse:\n  session "B"\n',
        1,
        1,
        'if **the system is healthy**:\n  session "A"\n',
    ),
    # --- Validation Rules (codes no section table mentions) ---
    ("Validation Rules", "Unexpected token"): Case(
        'session "A" "B"\n', 1, 13, 'session "A"\nsession "B"\n'
    ),
    ("Validation Rules", "Invalid syntax"): Case(
        "session:\n", 1, 9, "agent a:\n  model: opus\nsession: a\n"
    ),
    ("Validation Rules", "Skills must be an array"): Case(
        'use "@anthropic/web-search"\nagent a:\n  skills: "web-search"\n',
        3,
        11,
        'use "@anthropic/web-search"\nagent a:\n  skills: ["web-search"]\n',
    ),
    ("Validation Rules", "Skill name must be a string"): Case(
        'use "@anthropic/web-search"\nagent a:\n  skills: [web-search]\n',
        3,
        12,
        'use "@anthropic/web-search"\nagent a:\n  skills: ["web-search"]\n',
    ),
    ("Validation Rules", "Permissions must be a block"): Case(
        'agent a:\n  permissions: "all"\n', 2, 16, "agent a:\n  permissions:\n    bash: deny\n"
    ),
    ("Validation Rules", "Permission pattern must be a string"): Case(
        "agent a:\n  permissions:\n    read: [docs]\n",
        3,
        12,
        'agent a:\n  permissions:\n    read: ["docs/*.md"]\n',
    ),
    ("Validation Rules", "Unknown property name"): Case(
        'session "A"\n  temperature: 1\n', 2, 3, 'session "A"\n  retry: 1\n'
    ),
    ("Validation Rules", "Unknown import source format"): Case(
        'use "https://example.com/x.txt"\n', 1, 5, 'use "@example/x"\n'
    ),
    ("Validation Rules", "Skill not imported"): Case(
        'agent a:\n  skills: ["web-search"]\n',
        2,
        12,
        'use "@anthropic/web-search"\nagent a:\n  skills: ["web-search"]\n',
    ),
    ("Validation Rules", "Unknown permission type"): Case(
        "agent a:\n  permissions:\n    email: deny\n",
        3,
        5,
        "agent a:\n  permissions:\n    network: deny\n",
    ),
    ("Validation Rules", "Unknown permission value"): Case(
        "agent a:\n  permissions:\n    bash: maybe\n",
        3,
        11,
        "agent a:\n  permissions:\n    bash: prompt\n",
    ),
    ("Validation Rules", "Empty skills array"): Case(
        "agent a:\n  skills: []\n", 2, 11, 'use "@a/search"\nagent a:\n  skills: ["search"]\n'
    ),
}


def _run(source: str, case: Case) -> list[Any]:
    return check(parse_text(source), **(case.options or {}))


ROW_IDS = [f"{row.section}: {row.check}" for row in ROWS]


def test_every_row_has_a_case() -> None:
    assert set(CASES) == {(row.section, row.check) for row in ROWS}


@pytest.mark.parametrize("row", ROWS, ids=ROW_IDS)
def test_failing_program_reports_the_row(row: Any) -> None:
    case = CASES[(row.section, row.check)]
    found = [(d.code, d.line, d.column) for d in _run(case.failing, case)]
    assert (row.code, case.line, case.column) in found, found


@pytest.mark.parametrize("row", ROWS, ids=ROW_IDS)
def test_passing_program_is_clean(row: Any) -> None:
    case = CASES[(row.section, row.check)]
    found = _run(case.passing, case)
    assert [d for d in found if d.code == row.code or d.is_error] == []


@pytest.mark.parametrize("row", ROWS, ids=ROW_IDS)
def test_row_severity_matches_the_reference(row: Any) -> None:
    case = CASES[(row.section, row.check)]
    found = [d for d in _run(case.failing, case) if d.code == row.code]
    assert found and all(d.severity == CODES[row.code].severity for d in found)


@pytest.mark.parametrize(
    ("source", "code", "span"),
    [
        ('input : "The subject"\n', "E020", (1, 1, 1, 6)),
        ('output = session "Synthesize"\n', "E023", (1, 1, 1, 7)),
        ('block :\n  session "A"\n', "E151", (1, 1, 1, 6)),
        ('block (topic):\n  session "{topic}"\n', "E151", (1, 1, 1, 6)),
    ],
)
def test_empty_names_are_reported_from_source(
    source: str, code: str, span: tuple[int, int, int, int]
) -> None:
    # The parser keeps a statement with a missing name (an empty Name), so the reference's
    # empty-name rows fire for real source, at the statement's keyword, and nothing else does.
    found = [(d.code, (d.line, d.column, d.end_line, d.end_column)) for d in check(source)]
    assert found == [(code, span)]


@pytest.mark.parametrize(
    ("source", "code", "span"),
    [
        ('if **the system is healthy**:\nelif **it is degraded**:\n  session "B"\n', "W154",
         (1, 1, 1, 3)),
        ('if **the system is healthy**:\n  session "A"\nelif **it is degraded**:\n', "W154",
         (3, 1, 3, 5)),
        ('if **the system is healthy**:\n  session "A"\nelse:\n', "W154", (3, 1, 3, 5)),
        ('choice **the best approach**:\n  option "A":\n', "W153", (2, 3, 2, 9)),
        ("choice **the best approach**:\n", "E166", (1, 1, 1, 7)),
    ],
)  # fmt: skip
def test_empty_bodies_are_reported_from_source(
    source: str, code: str, span: tuple[int, int, int, int]
) -> None:
    # An empty if/elif/else or option body parses (docs/decisions.md: "Empty bodies"), so the
    # reference's warning is the only diagnostic; a choice with no option lines is E166.
    found = [(d.code, (d.line, d.column, d.end_line, d.end_column)) for d in check(source)]
    assert found == [(code, span)]

"""Second pass over the reference documents' program blocks (docs/decisions.md,
"Conformance (protocol transcripts)", programs part).

- prose.md's "Input Prompt Formats" gives inputs a discretion prompt (`input next:
  **...**`, also the multi-line `***` form): admitted, kept by fmt and compile.
- A fixed-set property value written as a string (`backoff: "exponential"`, from the
  reference's own retry example) is printed bare by fmt and compile; the canonical tree now
  holds the name too, so fmt and compile keep the tree.
"""

from __future__ import annotations

import pytest

from openprose import nodes as n
from openprose.checker import check
from openprose.compiler import canonicalize, compile_program
from openprose.formatter import format_source
from openprose.parser import parse_text

PROMPTS = """\
input confirm: "Proceed? (yes/no)"
input next_step: **What should we do next given the diagnosis?**
input approval: ***
  The fix is in.
  Deploy to production?
***
session "Go"
  context: [confirm, next_step, approval]
"""


def test_an_input_may_have_a_discretion_prompt() -> None:
    parsed = parse_text(PROMPTS)
    assert parsed.ok, parsed.diagnostics
    assert not [d for d in check(parsed) if d.is_error]
    inputs = [s for s in parsed.program.body if isinstance(s, n.Input)]
    assert [type(i.description).__name__ for i in inputs] == [
        "StringLit",
        "Discretion",
        "Discretion",
    ]
    assert [i.text for i in inputs] == [
        "Proceed? (yes/no)",
        "What should we do next given the diagnosis?",
        "\n  The fix is in.\n  Deploy to production?\n",
    ]


def test_discretion_prompts_survive_fmt_and_compile() -> None:
    parsed = parse_text(PROMPTS)
    formatted = format_source(parsed)
    assert formatted == PROMPTS
    compiled = compile_program(parsed.program)
    assert "input next_step: **What should we do next given the diagnosis?**\n" in compiled
    back = parse_text(compiled)
    assert back.ok and back.program == canonicalize(parsed.program)
    assert compile_program(back.program) == compiled


def test_an_empty_discretion_prompt_asks_for_a_description() -> None:
    diagnostics = check(parse_text('input x: ****\nsession "go"\n'))
    assert "W140" in [d.code for d in diagnostics]


@pytest.mark.parametrize(
    ("text", "code", "column"),
    [
        ("input x: **a** extra\n", "E004", 16),
        ('input x: session "a"\n', "E004", 10),
        ("input x:\n", "E005", 9),
    ],
)
def test_other_input_values_stay_one_error(text: str, code: str, column: int) -> None:
    found = [(d.code, d.column) for d in parse_text(text).diagnostics]
    assert found == [(code, column)]


def test_a_quoted_enum_value_is_the_name_in_the_canonical_tree() -> None:
    text = 'session "Flaky API"\n  retry: 3\n  backoff: "exponential"\n'
    parsed = parse_text(text)
    (prop,) = [p for p in parsed.program.body[0].properties if p.name.id == "backoff"]
    assert isinstance(prop.value, n.StringLit)
    (canonical,) = [
        p for p in canonicalize(parsed.program).body[0].properties if p.name.id == "backoff"
    ]
    assert canonical.value == n.Name(span=prop.value.span, id="exponential")
    formatted = format_source(parsed)
    assert "backoff: exponential" in formatted
    assert canonicalize(parse_text(formatted).program) == canonicalize(parsed.program)
    compiled = compile_program(parsed.program)
    assert parse_text(compiled).program == canonicalize(parsed.program)


def test_a_quoted_value_outside_the_set_stays_a_string() -> None:
    parsed = parse_text('session "x"\n  backoff: "sometimes"\n')
    (prop,) = canonicalize(parsed.program).body[0].properties
    assert isinstance(prop.value, n.StringLit)


UNDERSCORED = """\
loop until **_the summary
  fits on one page_** (max: 3):
  session "Shorten the summary"
if **_the draft is done_**:
  session "Ship it"
"""


def test_prose_md_s_underscored_discretion_spans_lines() -> None:
    # prose.md's grammar: discretion := "**" TEXT "**" | "**_" TEXT "_**" (the multi-line
    # form, Markdown's spelling of ***): read as a multi-line discretion, printed as ***.
    parsed = parse_text(UNDERSCORED)
    assert parsed.ok, parsed.diagnostics
    loop, branch = parsed.program.body
    assert loop.condition == n.Discretion(
        span=loop.condition.span, text="the summary\n  fits on one page", triple=True
    )
    assert branch.branches[0].condition.text == "_the draft is done_"  # one line: as before
    compiled = compile_program(parsed.program)
    assert compiled.startswith("loop until ***the summary\n  fits on one page*** (max: 3):\n")
    back = parse_text(compiled)
    assert back.ok and back.program == canonicalize(parsed.program)
    assert parse_text(UNDERSCORED.replace("\n", "\r\n")).program == parsed.program


def test_an_underscored_discretion_never_closed_is_still_e107() -> None:
    found = [
        (d.code, d.line, d.column) for d in parse_text('if **_open\n  session "b"\n').diagnostics
    ]
    assert found[0] == ("E107", 1, 4)

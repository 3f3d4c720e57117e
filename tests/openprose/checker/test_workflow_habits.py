"""Habits seen in realistic workflows (decisions, "Programs as people write them (session
14)"): each stays an error where the reference states a rule, names that rule, and carries
the rewrite when it is mechanical (safe) or likely (unsafe)."""

from __future__ import annotations

from pathlib import Path

import pytest

from openprose.diagnostics import Diagnostic
from openprose.fixes import fix_source
from openprose.source import SourceFile
from tests.openprose.checker.conftest import Check


def fixed(source: str, *, unsafe: bool = False) -> str:
    return fix_source(SourceFile.from_text(source), unsafe=unsafe).text


def only(found: list[Diagnostic]) -> Diagnostic:
    assert len(found) == 1, found
    return found[0]


# --- inputs ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "rewritten"),
    [
        ("input topic: string", 'input topic: "topic (string)"'),
        ("input tags: list[str]", 'input tags: "tags (list[str])"'),
        ("input audience: the people who read it", 'input audience: "the people who read it"'),
        ("input style: the user's style", 'input style: "the user\'s style"'),
        ("input topic", 'input topic: ""'),
    ],
)
def test_an_input_without_a_quoted_description_is_one_error_with_a_safe_fix(
    line: str, rewritten: str, checked: Check
) -> None:
    source = f'{line}\nsession "Use {{{line.split()[1].rstrip(":")}}}"\n'
    found = only(checked(source))
    assert found.code in ("E004", "E005") and found.rule.startswith("Input Declarations")
    assert found.fix is not None and found.fix.safe
    assert fixed(source).splitlines()[0] == rewritten
    # no error left (`input topic: ""` then asks for a description: the W140 row)
    assert not [d for d in checked(fixed(source)) if d.is_error]


def test_a_type_is_named_as_such(checked: Check) -> None:
    found = only(checked("input count: number\n"))
    assert "not a type (OpenProse values are text)" in found.message


def test_a_default_value_gets_no_fix_and_says_the_caller_gives_it(checked: Check) -> None:
    found = only(checked("input count: number = 3\n"))
    assert found.fix is None and "no default" in found.help


def test_an_equals_sign_is_an_unsafe_colon(checked: Check) -> None:
    source = 'input depth = "shallow"\n'
    found = only(checked(source))
    assert found.fix is not None and not found.fix.safe
    assert fixed(source, unsafe=True) == 'input depth: "shallow"\n'


# --- counts written as names ----------------------------------------------------------------


def test_repeat_of_a_const_number_writes_the_number(checked: Check) -> None:
    source = 'const MAX = 3\nrepeat MAX:\n  session "Try"\n'
    found = only(checked(source))
    assert found.code == "E157" and "(const MAX = 3, line 1)" in found.message
    assert fixed(source) == 'const MAX = 3\nrepeat 3:\n  session "Try"\n'


def test_a_let_number_is_an_unsafe_fix_and_a_loop_max_too(checked: Check) -> None:
    source = 'let n = 2\nloop until **the work is done** (max: n):\n  session "Work"\n'
    found = only(checked(source))
    assert found.code == "E160" and found.fix is not None and not found.fix.safe
    assert "(max: 2)" in fixed(source, unsafe=True)


def test_a_count_only_the_run_knows_names_the_forms_that_take_one(checked: Check) -> None:
    found = only(checked('input rounds: "How many"\nrepeat rounds:\n  session "Round"\n'))
    assert found.fix is None and "for x in items" in found.help and "loop until" in found.help


# --- control words of other languages -------------------------------------------------------


def test_break_continue_and_pass_name_what_to_do_instead(checked: Check) -> None:
    source = (
        "loop until **every script has run** (max: 5):\n"
        '  session "Run one"\n'
        "  if **it failed**:\n"
        "    break\n"
        "  continue\n"
        "  pass\n"
    )
    found = [(d.code, d.line, d.message.split(":")[0]) for d in checked(source)]
    assert found == [
        ("E004", 4, "OpenProse has no `break`"),
        ("E004", 5, "OpenProse has no `continue`"),
        ("E004", 6, "OpenProse has no `pass`"),
    ]


def test_return_of_the_name_just_bound_is_removed(checked: Check) -> None:
    source = 'block score(c):\n  let notes = session "Assess {c}"\n  return notes\n'
    assert only(checked(source)).fix is not None
    assert fixed(source) == 'block score(c):\n  let notes = session "Assess {c}"\n'


def test_return_at_top_level_looks_at_the_statement_above_it_not_a_block_s(
    checked: Check,
) -> None:
    source = (
        'block b():\n  let x = session "a"\n  let z = session "b"\n\n'
        'let y = session "c"\nreturn x\n'
    )
    assert only(checked(source)).fix is None  # `let y` is above, not the block's `let x`


def test_return_of_a_session_drops_the_word(checked: Check) -> None:
    source = 'block b:\n  return session "Final"\n'
    assert fixed(source) == 'block b:\n  session "Final"\n'


def test_return_before_more_statements_has_no_fix(checked: Check) -> None:
    source = 'block b:\n  let y = session "q"\n  return y\n  session "after"\n'
    assert only(checked(source)).fix is None


def test_except_is_read_as_catch(checked: Check) -> None:
    source = 'try:\n  session "Migrate"\nexcept:\n  session "Roll back"\n'
    found = only(checked(source))  # no E162: the try keeps its handler
    assert found.message == "`except` is written `catch` in OpenProse"
    assert fixed(source) == 'try:\n  session "Migrate"\ncatch:\n  session "Roll back"\n'


# --- choice, arrows, pipelines --------------------------------------------------------------


def test_an_unquoted_option_label_is_quoted(checked: Check) -> None:
    source = 'choice **which fits**:\n  option Scale up:\n    session "Scale"\n'
    found = only(checked(source))
    assert found.rule.startswith("Choice Blocks") and found.fix is not None
    assert '  option "Scale up":\n' in fixed(source)


def test_an_arrow_after_properties_explains_the_chain(checked: Check) -> None:
    source = 'let a = session "Draft"\n  context: []\n  -> session "Notes"\n'
    found = only(checked(source))
    assert found.message.startswith("`->` joins sessions on one line")


def test_a_stage_inside_the_body_above_explains_the_layout(checked: Check) -> None:
    source = 'let k = ["a"] | filter:\n  session "Keep {item}?"\n  | map:\n    session "Up"\n'
    found = only(checked(source))
    assert "this `|` is inside the body above" in found.message


def test_reduce_without_names_is_one_error(checked: Check) -> None:
    source = 'let r = ["a", "b"] | reduce:\n  session "Merge"\n    context: item\n'
    assert only(checked(source)).code == "E121"


def test_item_outside_a_pipeline_says_where_it_exists(checked: Check) -> None:
    found = only(checked('session "x"\n  context: item\n'))
    assert "only inside a map, filter or pmap body" in found.message


# --- strings --------------------------------------------------------------------------------


def test_a_windows_path_doubles_every_backslash_of_the_path(checked: Check) -> None:
    source = 'session "Save to C:\\Users\\team\\notes.md please"\n'
    found = only(checked(source))  # \U is unknown; \t and \n are known but part of the path
    assert found.code == "E002" and found.fix is not None and not found.fix.safe
    assert (
        fixed(source, unsafe=True) == 'session "Save to C:\\\\Users\\\\team\\\\notes.md please"\n'
    )


def test_a_regex_keeps_the_one_backslash_fix() -> None:
    assert fixed('session "Match \\d+ here"\n', unsafe=True) == 'session "Match \\\\d+ here"\n'


# --- names and declarations ----------------------------------------------------------------


def test_resume_of_an_agent_without_persist_gives_it_persist(checked: Check) -> None:
    source = 'agent a:\n  model: opus\n  prompt: "x"\n\nresume: a\n  prompt: "again"\n'
    found = only(checked(source))
    assert found.code == "E017" and found.fix is not None and not found.fix.safe
    assert fixed(source, unsafe=True).startswith(
        'agent a:\n  model: opus\n  prompt: "x"\n  persist: true\n'
    )


def test_misspelt_backoff_and_model_case(checked: Check) -> None:
    source = 'agent a:\n  model: Opus\nsession "x"\n  retry: 2\n  backoff: exponental\n'
    model, backoff = checked(source)
    assert model.fix is not None and model.fix.safe  # only the case differs
    assert backoff.fix is not None and not backoff.fix.safe
    assert "backoff: exponential" in fixed(source, unsafe=True)


def test_the_same_use_twice_is_removed(checked: Check, tmp_path: object) -> None:
    source = 'use "@a/b" as b\nuse "@a/b" as b\n'
    found = [d for d in checked(source) if d.code == "E010"]
    assert found and found[0].fix is not None
    assert fixed(source) == 'use "@a/b" as b\n'


def test_a_reassigned_const_can_become_a_let(checked: Check) -> None:
    source = 'const g = session "Guide"\ng = session "New guide"\n'
    found = only(checked(source))
    assert found.code == "E144" and found.fix is not None and not found.fix.safe
    assert fixed(source, unsafe=True).startswith("let g =")


def test_a_second_let_that_reads_itself_is_a_reassignment(checked: Check) -> None:
    source = 'let d = session "Draft"\nlet d = session "Redraft"\n  context: d\n'
    found = only(checked(source))
    assert found.code == "E019" and found.fix is not None and not found.fix.safe
    assert fixed(source, unsafe=True).splitlines()[1] == 'd = session "Redraft"'


def test_a_second_let_that_does_not_read_itself_gets_the_rename(checked: Check) -> None:
    # a second name, not a revision: renamed (unsafe, issue 36), never an assignment
    found = only(checked('let d = session "Draft"\nlet d = session "Other"\n'))
    assert found.fix is not None and not found.fix.safe
    assert [e.text for e in found.fix.edits] == ["d_2"]


def test_null_in_context_is_removed(checked: Check) -> None:
    source = 'let a = session "A"\nsession "B"\n  context: [a, null]\n'
    found = only(checked(source))
    assert "no boolean or null values" in found.message
    assert fixed(source, unsafe=True).endswith("  context: [a]\n")


def test_an_undefined_name_close_to_a_visible_one_gets_the_rename(checked: Check) -> None:
    source = 'let research = session "R"\nsession "S"\n  context: reserch\n'
    found = only(checked(source))
    assert found.fix is not None and not found.fix.safe
    assert fixed(source, unsafe=True).endswith("context: research\n")


# --- local imports are checked with the importing program ------------------------------------


def test_an_imported_program_with_an_error_is_one_error_at_the_use(
    checked: Check, tmp_path: Path
) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "c.prose").write_text('input x: "x"\noutput y = sesion "{x}"\n')
    found = only(checked('use "lib/c.prose" as c\nlet r = c(x: "1")\n', str(tmp_path / "m.prose")))
    assert (found.code, found.line, found.column) == ("E171", 1, 5)
    assert "lib/c.prose:2:12: E004 unknown keyword `sesion`" in found.message


def test_an_import_cycle_is_named_where_it_starts(checked: Check, tmp_path: Path) -> None:
    (tmp_path / "a.prose").write_text('use "b.prose" as b\ninput x: "x"\noutput y = b(x: x)\n')
    (tmp_path / "b.prose").write_text('use "a.prose" as a\ninput x: "x"\noutput y = a(x: x)\n')
    source = (tmp_path / "a.prose").read_text()
    found = only(checked(source, str(tmp_path / "a.prose")))
    assert found.message == "Import cycle: a.prose -> b.prose -> a.prose"


def test_a_clean_import_adds_nothing(checked: Check, tmp_path: Path) -> None:
    (tmp_path / "ok.prose").write_text('input x: "x"\noutput y = session "{x}"\n')
    assert checked('use "ok.prose" as ok\nlet r = ok(x: "1")\n', str(tmp_path / "m.prose")) == []


@pytest.mark.parametrize(
    ("source", "said"),
    [
        ('session "S"\n  context: later\nlet later = session "L"\n', "declared at line 3, after"),
        (
            'for f in ["a"]:\n  session "{f}"\nsession "{f}"\n',
            "the loop variable of a `for`, line 1",
        ),
        (
            'try:\n  session "R"\ncatch as err:\n  session "H"\nsession "{err}"\n',
            "the error variable of a `catch`, line 3",
        ),
        ('block b(t):\n  session "{t}"\nsession "{t}"\n', "a parameter of block 'b', line 1"),
    ],
)
def test_a_name_out_of_reach_says_where_it_lives(source: str, said: str, checked: Check) -> None:
    assert said in only(checked(source)).message


def test_a_sibling_branch_let_is_not_bound_yet(checked: Check) -> None:
    source = 'parallel:\n  let a = session "A"\n  b = session "B"\n    context: a\n'
    found = only(checked(source))
    assert found.message.startswith("Variable 'a' is not bound yet here")
    assert not checked(source + 'session "C"\n  context: [a, b]\n')[1:]  # fine after it


def test_a_program_import_named_as_a_skill_says_it_is_a_program(
    checked: Check, tmp_path: Path
) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "s.prose").write_text('input t: "t"\noutput o = session "{t}"\n')
    source = 'use "lib/s.prose" as s\nagent a:\n  skills: ["s"]\n'
    found = only(checked(source, str(tmp_path / "m.prose")))
    assert found.code == "W007" and "names the program lib/s.prose, not a skill" in found.message


@pytest.mark.parametrize(
    ("line", "rewritten"),
    [
        ("    write: docs/", '    write: ["docs/"]'),
        ("    read: *.md, src/**/*.py", '    read: ["*.md", "src/**/*.py"]'),
        ("    read: **/*.md", '    read: ["**/*.md"]'),
    ],
)
def test_bare_permission_patterns_are_quoted(line: str, rewritten: str, checked: Check) -> None:
    source = f"agent a:\n  permissions:\n{line}\n    bash: deny\n"
    found = only(checked(source))
    assert found.code == "E016" and found.fix is not None and found.fix.safe
    assert fixed(source).splitlines()[2] == rewritten


def test_bare_skill_names_and_a_context_tuple(checked: Check) -> None:
    source = 'use "@a/web" as web\nagent a:\n  skills: [web]\nlet x = session "x"\nsession "y"\n  context: (x)\n'
    text = fixed(source)
    assert '  skills: ["web"]\n' in text and "  context: [x]\n" in text


def test_other_frameworks_agent_properties_say_what_openprose_writes(checked: Check) -> None:
    source = 'agent a:\n  tools: ["bash"]\n  temperature: 0.2\n  instructions: "Help"\n'
    tools, temperature, instructions = checked(source)
    assert "`permissions:` and `skills:`" in tools.help
    assert "provider's defaults apply" in temperature.help
    assert instructions.fix is not None and not instructions.fix.safe  # → `prompt:`
    assert fixed(source, unsafe=True).endswith('  prompt: "Help"\n')

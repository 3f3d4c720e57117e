"""The code table, the generated docs, the reference's message format, ordering and depth."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from pathlib import Path

import pytest

import openprose.checker as checker_package
from openprose.checker import check
from openprose.checker.docs import render
from openprose.checker.rows import ROWS
from openprose.codes import CODES
from openprose.diagnostics import Diagnostic
from openprose.parser import parse_text
from openprose.source import SourceFile

Check = Callable[..., list[Diagnostic]]
ROOT = Path(__file__).resolve().parents[3]
CHECKER_SOURCES = sorted(Path(checker_package.__file__).parent.glob("*.py"))


def _ours(code: str) -> bool:
    return code[0] == "I" or (code[0] in "EW" and 140 <= int(code[1:]) <= 199)


def test_docs_match_the_code_table() -> None:
    text = (ROOT / "docs" / "diagnostics.md").read_text(encoding="utf-8")
    assert text == render(), "regenerate: python -m openprose.checker.docs > docs/diagnostics.md"


def test_every_code_the_checker_emits_is_in_the_table() -> None:
    used = set()
    for source in CHECKER_SOURCES:
        used.update(re.findall(r'"([EWI]\d{3})"', source.read_text(encoding="utf-8")))
    assert used and used <= set(CODES)


# Checker codes that no validation-table row names: a failing program each, code + position.
EXTRA: dict[str, tuple[str, int, int]] = {
    "E167": ("agent a:\n  persist: forever\n", 2, 12),
    "E168": ('loop (max: 3, min: 1):\n  session "A"\n', 1, 15),
    "E169": ('use "@a/b" as b\nlet r = b(x: 1, x: 2)\n', 2, 17),
    "E170": ('use "./missing.prose" as m\n', 1, 5),
    "E171": ('use "main.prose" as m\n', 1, 5),  # a program importing itself: a cycle
    "E180": ('session "A"\n  returns: list of strng\n', 2, 20),
    "E181": ('let r = session "A"\n  returns: {a: string}\nsession "{r.b}"\n', 3, 10),
    "I001": ("agent a:\n  persist: project\nresume: a\n", 3, 9),
    "W170": ('session "A"\n  backoff: "linear"\n', 2, 12),
    "W171": ('let name = session "A"\nsession "Hi {{name}}"\n', 2, 13),
    "I002": ('use "@a/b" as b\nlet r = b(x: 1)\n', 1, 5),
    # 1001 empty prompts: the last warning is left out, at the 1000th one reporting stops
    "W155": ('session ""\n' * 1001, 1000, 9),
    "W156": ('if **the sky is green**:\n  let x = session "A"\nsession "B {x}"\n', 3, 12),
    # `ask "question"` (docs/guide.md, Asking a person)
    "E190": ('let a = ask "Go?"\n  options: "yes"\n', 2, 12),
    "E191": ('let a = ask "Go?"\n  options: ["yes", "no"]\n  default: "maybe"\n', 3, 12),
    "E192": ('let a = ask "Go?"\n  timeout: "soon"\n', 2, 12),
    "W190": ('let a = ask "Go?"\n  choices: ["yes", "no"]\n', 2, 3),
    "W191": ('let a = ask ""\n', 1, 13),
    "W192": ('let a = ask "Go?"\n  options: ["yes", "yes"]\n', 2, 20),
}


# Checker codes whose failing case needs a project's import cache: tested where one is made.
CACHED: dict[str, str] = {
    "W180": "tests/security/test_import_ceiling.py",
    "W181": "tests/openprose/checker/test_mcp_grants.py",  # needs the project's prose.toml
}


def test_every_checker_code_has_a_failing_case() -> None:
    ours = {code for code in CODES if _ours(code)}
    assert ours == {row.code for row in ROWS if _ours(row.code)} | set(EXTRA) | set(CACHED)


@pytest.mark.parametrize("code", list(EXTRA))
def test_extra_code(code: str, checked: Check, tmp_path: Path) -> None:
    source, line, column = EXTRA[code]
    (tmp_path / "main.prose").write_text(source, encoding="utf-8")  # for `use` of itself
    found = [
        (d.code, d.line, d.column, d.severity)
        for d in checked(source, str(tmp_path / "main.prose"))
    ]
    assert (code, line, column, CODES[code].severity) in found


def test_render_uses_the_reference_format(checked: Check) -> None:
    source = 'let draft = session "Write"\nsession "Review"\n  context: drfat\n'
    (diagnostic,) = checked(source)
    assert diagnostic.render(SourceFile.from_text(source)) == (
        "Error at line 3, column 12: Undefined variable 'drfat' in context"
        " (did you mean `draft`?)\n"
        "    context: drfat\n"
        "             ^^^^^"
    )
    assert diagnostic.to_dict() == {
        "path": "<string>",
        "line": 3,
        "column": 12,
        "end_line": 3,
        "end_column": 17,
        "code": "E142",
        "severity": "error",
        "message": "Undefined variable 'drfat' in context (did you mean `draft`?)",
        "rule": "Variables & Context, Validation Rules: Undefined context variable",
        "help": "write `draft`",
        "fix": {
            "title": "replace `drfat` with `draft`",
            "safe": False,  # a guess: applied only with --unsafe-fixes
            "edits": [
                {
                    "start": 56,
                    "end": 61,
                    "line": 3,
                    "column": 12,
                    "end_line": 3,
                    "end_column": 17,
                    "text": "draft",
                }
            ],
        },
    }


def test_parse_and_check_diagnostics_come_sorted(checked: Check) -> None:
    source = 'session "x"\n  context: nope\nsession "bad \\q"\nsession ""\n'
    assert [(d.code, d.line) for d in checked(source)] == [("E142", 2), ("E002", 3), ("W001", 4)]


def test_deep_nesting_does_not_overflow(checked: Check) -> None:
    depth = 450
    lines = [" " * (2 * level) + "do:" for level in range(depth)]
    lines.append(" " * (2 * depth) + 'session "Deep"\n' + " " * (2 * depth) + "  context: nope")
    found = [(d.code, d.line) for d in checked("\n".join(lines) + "\n")]
    assert found == [("E142", depth + 2)]


def test_invalid_nodes_are_skipped(checked: Check) -> None:
    result = parse_text('session "a" "b"\nsession ""\n')
    assert [d.code for d in result.diagnostics] == ["E004"]
    assert [d.code for d in checked('session "a" "b"\nsession ""\n')] == ["E004", "W001"]


def test_mangled_programs_never_raise() -> None:
    """Parse errors leave partial trees (Invalid nodes, missing parts); the checker copes."""
    examples = ROOT / "tests" / "openprose" / "conformance" / "reference_examples"
    texts = [path.read_text(encoding="utf-8") for path in sorted(examples.glob("*.prose"))]
    if not texts:
        pytest.skip("reference examples not extracted")
    rng = random.Random(7)
    for _ in range(400):
        text = rng.choice(texts)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(text) + 1)
            text = text[:at] + rng.choice(['"', ":", "**", "{", "\n  ", "(", ",", "|"]) + text[at:]
        for diagnostic in check(parse_text(text)):
            assert diagnostic.code in CODES


def test_every_code_the_front_end_emits_is_in_the_table() -> None:
    package = Path(checker_package.__file__).parent.parent
    front_end = [package / f"{name}.py" for name in ("scanner", "source", "imports")]
    front_end += sorted((package / "parser").glob("*.py"))
    used = set()
    for source in front_end + CHECKER_SOURCES:
        used.update(re.findall(r'"([EWI]\d{3})"', source.read_text(encoding="utf-8")))
    assert {"E001", "E101", "E118", "E122"} <= used <= set(CODES)


def test_excerpt_shows_control_characters_harmlessly() -> None:
    # A lone CR, an escape sequence or a NUL in the quoted line must not reach the terminal,
    # and a tab is one column wide like the caret arithmetic assumes.
    source = SourceFile.from_text('session "a"\rsession\t"\x1b[2J" \x00\n')
    diagnostic = Diagnostic("E004", CODES["E004"].severity, "m", source.span(12, 19))
    assert diagnostic.excerpt(source) == ('  session "a"?session "?[2J" ?\n              ^^^^^^^')


def test_excerpt_of_a_long_line_is_a_window_around_the_span() -> None:
    line = "x" * 1000 + "HERE" + "y" * 1000
    source = SourceFile.from_text(line)
    at = Diagnostic("E004", CODES["E004"].severity, "m", source.span(1000, 1004))
    text, carets = at.excerpt(source).split("\n")
    assert len(text) < 140 and text.startswith("  ...x") and text.endswith("y...")
    assert text[carets.index("^") : carets.index("^") + 4] == "HERE" and carets.endswith("^^^^")
    start = Diagnostic("E004", CODES["E004"].severity, "m", source.span(0, 1))
    text, carets = start.excerpt(source).split("\n")
    assert text.startswith("  xxx") and text.endswith("...") and carets == "  ^"
    end = Diagnostic("E004", CODES["E004"].severity, "m", source.span(2003, 2004))
    text, carets = end.excerpt(source).split("\n")
    assert text.startswith("  ...") and text.endswith("y") and len(carets) == len(text)


def test_a_flood_of_checker_errors_is_capped_with_E117(checked: Check) -> None:
    # 5000 undefined names: the first 1000 by position are kept, then E117 (an error was left
    # out); the checker stops building diagnostics there, so no input exhausts memory.
    source = "let x = [" + ", ".join(f"v{i}" for i in range(5000)) + "]\n"
    found = checked(source)
    assert len(found) == 1001
    assert {d.code for d in found[:-1]} == {"E140"} and found[999].message.endswith("'v999'")
    assert (found[-1].code, found[-1].line, found[-1].column) == ("E117", 1, found[999].column)


def test_a_flood_of_warnings_stops_with_a_warning_not_an_error(checked: Check) -> None:
    found = checked('session ""\n' * 3000)
    assert len(found) == 1001 and not any(d.is_error for d in found)
    assert found[-1].code == "W155" and found[-1].line == 1000


def test_parser_and_checker_floods_together_keep_one_stop_note(checked: Check) -> None:
    # 1500 syntax errors (the parser stops at 1000) after 1500 undefined names: 1000 kept in
    # source order, one E117 at the end.
    source = "let x = [" + ", ".join(f"v{i}" for i in range(1500)) + "]\n" + "x y\n" * 1500
    found = checked(source)
    assert len(found) == 1001 and [d.code for d in found].count("E117") == 1
    assert found[-1].code == "E117" and {d.code for d in found[:-1]} == {"E140"}

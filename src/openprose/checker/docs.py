"""Render docs/diagnostics.md from the code table and the validation-table rows.

python -m openprose.checker.docs > docs/diagnostics.md
"""

from __future__ import annotations

from openprose.checker.rows import ROWS
from openprose.codes import CODES, GUIDANCE

_HEADER = """\
# Diagnostics

Generated from `openprose.codes` and `openprose.checker.rows` by
`python -m openprose.checker.docs > docs/diagnostics.md`; a test keeps it in step.

Every diagnostic has a code, a severity, a message and a span (path, line, column, end line,
end column). `prose check` prints it as `path:line:col: CODE message`, the source line and
carets (see [language.md](language.md)); `Diagnostic.render(source)` gives the reference's
format:

```text
Error at line 1, column 9: Unterminated string literal
  session "Hello
          ^
```

Code ranges: `E001`-`E028` and `W001`-`W011` are the reference's own codes. Rows of the
reference's validation tables that carry no code use ours: `E100`-`E139`/`W100`-`W139` from the
scanner and parser, `E140`-`E199`/`W140`-`W199` from the checker. `I001`-`I099` are notes
(severity *info*): a check that needs the outside world (agent memory on disk, an imported
program's contract) and could not run yet, so it is deferred to run time.
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render() -> str:
    lines = [
        _HEADER,
        "## Codes",
        "",
        "Each code's rule (where the reference states it) and its default `help:` line; a",
        "diagnostic may carry a sharper help line and a fix (`prose check --fix`).",
        "",
        "| Code | Severity | Meaning | Rule | Help |",
        "| --- | --- | --- | --- | --- |",
    ]
    for code in CODES.values():
        guide = GUIDANCE.get(code.code)
        rule, help_ = (guide.rule, guide.help) if guide else ("", "")
        lines.append(
            f"| {code.code} | {code.severity} | {_cell(code.meaning)} | {_cell(rule)} "
            f"| {_cell(help_)} |"
        )
    lines += [
        "",
        "## Validation-table rows",
        "",
        "Each row of each section's validation table in the reference, and the code reporting it.",
        "",
        "| Section | Check | Code |",
        "| --- | --- | --- |",
    ]
    for row in ROWS:
        lines.append(f"| {row.section} | {_cell(row.check)} | {row.code} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render(), end="")

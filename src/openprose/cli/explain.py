"""``prose explain CODE``: what a diagnostic code means, the rule behind it, how to fix it, a
wrong and a right program, which rules of the reference report it, and where the language
guide covers it (as ``ruff rule`` does). The text comes from ``openprose.codes``,
``openprose.checker.rows`` (the same tables docs/diagnostics.md is generated from) and
``openprose.code_examples`` (examples tested to report the code, and not to).

``prose explain --all`` lists every code. Exit status 2 for a code that does not exist.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

# Where docs/guide.md covers each section of the reference's validation tables.
GUIDE_SECTIONS = {
    "String Literals": "Strings and interpolation",
    "Use Statements": "use (imports)",
    "Input Declarations": "input",
    "Output Bindings": "output",
    "Program Invocation": "Invoking an imported program",
    "Agent Definitions": "agent",
    "Session Statement": "session",
    "Resume Statement": "resume (persistent agents)",
    "Variables & Context": "let, const and context",
    "Block Parameters": "block and do",
    "Composition Blocks": "block and do",
    "Parallel Blocks": "parallel",
    "Fixed Loops": "repeat and for",
    "Unbounded Loops": "loop",
    "Pipeline Operations": "Pipelines",
    "Error Handling": "try, throw and retry",
    "Choice Blocks": "choice",
    "Conditional Statements": "if, elif, else",
    "Validation Rules": "Properties",
}
# Codes no validation-table row reports (scanner, parser and our own checks), by section.
CODE_SECTIONS = {
    **dict.fromkeys(
        ("E100", "E101", "E102", "E103", "E104", "E105", "E109", "E115", "E116", "E118", "E122"),
        "Files and comments",
    ),
    **dict.fromkeys(("E106",), "Strings and interpolation"),
    **dict.fromkeys(("E107", "E108"), "loop"),
    **dict.fromkeys(("E110", "E111", "E112"), "if, elif, else"),
    **dict.fromkeys(("E113", "E119"), "try, throw and retry"),
    **dict.fromkeys(("E114",), "choice"),
    **dict.fromkeys(("E167",), "agent"),
    **dict.fromkeys(("E168",), "parallel"),
    **dict.fromkeys(("E169",), "Invoking an imported program"),
    **dict.fromkeys(("E170", "I002", "W180"), "use (imports)"),
    **dict.fromkeys(("I001",), "resume (persistent agents)"),
    **dict.fromkeys(("E190", "E191", "E192", "W190", "W191", "W192"), "ask (a person's answer)"),
}
GUIDE = "docs/guide.md"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("codes", nargs="*", metavar="CODE", help="e.g. E024 (any case)")
    parser.add_argument("--all", action="store_true", help="list every code")
    parser.add_argument("--json", action="store_true", help="print a JSON array of pages")


def page(code: str) -> dict[str, Any]:
    from openprose.checker.rows import ROWS
    from openprose.code_examples import EXAMPLES
    from openprose.codes import CODES, GUIDANCE

    entry = CODES[code]
    guidance = GUIDANCE[code]
    example = EXAMPLES[code]
    rules = [{"section": r.section, "check": r.check} for r in ROWS if r.code == code]
    sections = {GUIDE_SECTIONS[r["section"]] for r in rules if r["section"] in GUIDE_SECTIONS}
    if code in CODE_SECTIONS:
        sections.add(CODE_SECTIONS[code])
    return {
        "code": code,
        "severity": str(entry.severity),
        "meaning": entry.meaning,
        "origin": _origin(code),
        "rule": guidance.rule,
        "fix": guidance.help,
        "wrong": example.wrong_text,
        "right": example.right,
        "files": example.files,
        "rules": rules,
        "guide": [f"{GUIDE}, section “{title}”" for title in sorted(sections)]
        or [f"{GUIDE}, section “Diagnostics”"],
    }


def _origin(code: str) -> str:
    number = int(code[1:])
    if code.startswith("I"):
        return "A note from the checker: a check that needs the outside world, deferred to run time"
    if number < 100:
        return "A code of the OpenProse reference"
    if number < 140:
        return "Our code for a scanner or parser rule the reference states without a code"
    return "Our code for a checker rule the reference states without a code"


def render(shown: dict[str, Any]) -> str:
    lines = [
        f"{shown['code']} ({shown['severity']}): {shown['meaning']}",
        "",
        shown["origin"] + ".",
        "",
        f"Rule: {shown['rule']}",
        f"Fix: {shown['fix']}",
        "",
        "Wrong:",
        *_indented(shown["wrong"]),
        "Right:",
        *_indented(shown["right"]),
    ]
    for name, text in shown["files"].items():
        lines += [f"(beside them, {name}:)", *_indented(text)]
    if shown["rules"]:
        lines += ["", "Reported for these rules of the reference's validation tables:"]
        lines += [f"  - {rule['section']}: {rule['check']}" for rule in shown["rules"]]
    lines += ["", "Read more: " + "; ".join(shown["guide"])]
    return "\n".join(lines)


def _indented(program: str) -> list[str]:
    return ["    " + line if line else "" for line in program.rstrip("\n").split("\n")]


def run(args: argparse.Namespace) -> int:
    from openprose.codes import CODES

    if args.all:
        for code, entry in CODES.items():
            print(f"{code}  {entry.severity!s:<7}  {entry.meaning}")
        return 0
    if not args.codes:
        print("prose explain: give a code (e.g. E024), or --all to list them", file=sys.stderr)
        return 2
    pages, status = [], 0
    for asked in args.codes:
        code = asked.strip().upper()
        if code not in CODES:
            from cliconventions import did_you_mean

            guess = did_you_mean(code, CODES)
            hint = f" (did you mean {guess}?)" if guess else ""
            print(
                f"prose: no diagnostic code {asked!r}{hint}; `prose explain --all` lists them",
                file=sys.stderr,
            )
            status = 2
            continue
        pages.append(page(code))
    if args.json:
        print(json.dumps(pages, indent=2, ensure_ascii=False))
    elif pages:  # no stray blank line on stdout when every code was unknown
        print("\n\n".join(render(p) for p in pages))
    return status

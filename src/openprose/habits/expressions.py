"""Habits in expressions: `range(N)` loops, code conditions, call arguments without commas or
parentheses, data written as an object literal, and operators."""

from __future__ import annotations

import re

from openprose import nodes as n
from openprose.codes import diagnostic
from openprose.diagnostics import Diagnostic, Edit, Fix
from openprose.habits.view import LAYOUT, TokenView, plain_quote, quote
from openprose.scanner import (
    IDENT_PATTERN,
    NAME,
    NUMBER,
    STRING,
    Token,
    token_span,
)
from openprose.source import SourceFile, Span

# --- loops, conditions and calls as other languages write them ---------------------------------


def range_loop(
    view: TokenView, start: int, at: int, item: n.Name, index: n.Name | None, parallel: bool
) -> tuple[Diagnostic, int | None] | None:
    """`for i in range(5):` (Python; the `for` at token ``start``, `range` at ``at``):
    OpenProse counts with `repeat 5 as i:` (from 0, as range does). The E004 with that
    rewrite as the safe fix (a plain `for` with one bound), and the count (None when the
    bound is no whole number); None when no `range(N)` stands at ``at``."""
    kinds, tokens = view.kinds, view.tokens
    if not (
        kinds[at] == NAME
        and tokens[at][1] == "range"
        and kinds[at + 1] == "("
        and kinds[at + 2] == NUMBER
        and kinds[at + 3] == ")"
    ):
        return None
    bound = tokens[at + 2][1]
    count = int(bound) if bound.isdigit() else None
    span = view.source.span(tokens[start][2], tokens[at + 3][3])
    fix = None
    if count is not None and 0 < count <= 1000 and index is None and not parallel:
        rewrite = f"repeat {count} as {item.id}"
        fix = Fix(f"write `{rewrite}`", (Edit(span, rewrite),))
    found = diagnostic(
        "E004",
        f"`range({bound})` is not OpenProse: count with `repeat {bound} as {item.id}:`",
        token_span(tokens[at]),
        view.source.path,
        help=f"write `repeat {bound} as {item.id}:` (the index starts at 0)",
        fix=fix,
        rule='Fixed Loops: repeatBlock → "repeat" NUMBER ( "as" IDENTIFIER )? ":"',
    )
    return found, count


def plain_condition(
    view: TokenView, first: int, ends: tuple[str, ...]
) -> tuple[Diagnostic, n.Discretion, int] | None:
    """`if depth <= 0:`, `if **small** or depth <= 0:` (the condition from token
    ``first`` to the first of ``ends``, else the line's last `:`): the grammar's conditions
    are discretions only (no operators, no comparisons). One error for the whole condition,
    not one per operator character, with the rewrite the model can judge —
    `if **depth <= 0**:` — as an unsafe fix (a model then decides what code decided); the
    discretion it parses as, and the position after it. None when it is no one-line
    condition."""
    kinds, tokens = view.kinds, view.tokens
    end = last_colon = None
    i = first
    while kinds[i] not in LAYOUT:
        if tokens[i][4] != tokens[i][6]:
            return None  # a token spanning lines: not a one-line condition
        if kinds[i] == ":" and i > first:
            last_colon = i
        elif kinds[i] in ends and i > first and end is None:
            end = i
        i += 1
    end = end if end is not None else last_colon
    if end is None or kinds[first] in ends:
        return None
    start_offset, end_offset = tokens[first][2], tokens[end - 1][3]
    text = re.sub(r"\*{2,}", "", view.source.text[start_offset:end_offset])
    text = " ".join(text.split())
    if not text:
        return None
    span = Span(
        start_offset, end_offset, tokens[first][4], tokens[first][5],
        tokens[end - 1][6], tokens[end - 1][7],
    )  # fmt: skip
    keyword = tokens[first - 1][1]
    operators = any(c in "<>=!+-*/&|" for c in text) or " or " in text or " and " in text
    found = diagnostic(
        "E004",
        f"`{keyword}` takes a **condition** in double asterisks, for the model to judge: "
        f"`{text}` is not one"
        + (" (the grammar has no operators or comparisons)" if operators else ""),
        span,
        view.source.path,
        help=f"write it as a discretion: `{keyword} **{text}**`",
        fix=Fix(f"write `**{text}**`", (Edit(span, f"**{text}**"),), safe=False),
    )
    return found, n.Discretion(span=span, text=text, triple=False), end


def missing_comma(source: SourceFile, previous: Token, token: Token) -> Diagnostic:
    """`do review("app.py" "security")`: two arguments (``previous`` ends one, ``token``
    starts the next) without the comma between them; the safe fix inserts it."""
    at = source.span(previous[3], previous[3])
    return diagnostic(
        "E004",
        "Arguments are separated by commas",
        token_span(token),
        source.path,
        help="insert `,` between the arguments",
        fix=Fix("insert `,`", (Edit(at, ","),)),
        rule='Composition Blocks: args → "(" expression ( "," expression )* ")"',
    )


def unparenthesised_argument(source: SourceFile, name: n.Name, token: Token) -> Diagnostic:
    """`do review "app.py"` (``token`` the argument): a block's arguments go in
    parentheses; the safe fix adds them when the argument is on one line."""
    text = source.text[token[2] : token[3]]
    return diagnostic(
        "E004",
        f"A block's arguments go in parentheses: `do {name.id}({text})`",
        token_span(token),
        source.path,
        help=f"write `do {name.id}({text})`",
        fix=Fix(
            "put the argument in parentheses",
            (Edit(source.span(name.span.end, token[3]), f"({text})"),),
        )
        if token[4] == token[6]
        else None,
        rule='Composition Blocks: doBlock → "do" IDENTIFIER args?, args → "(" expression '
        '( "," expression )* ")"',
    )


# --- data written as an object literal --------------------------------------------------------

_DATA_RULE = (
    'Context Passing: objectContext → "{" IDENTIFIER ("," IDENTIFIER)* "}" lists names; '
    "a value is a string, a number, an array, a name or what a session returns"
)
_DATA_LITERALS = frozenset(("true", "false", "null", "none", "nil", "True", "False", "None"))
_DATA_PUNCTUATION = frozenset(("{", "}", "[", "]", ":", ",", ".", STRING, NUMBER, NAME))


def data_object(view: TokenView, start: int) -> Diagnostic:
    """`output result = { status: "done", report: report }` with the `{` at token ``start``:
    keyed data, which the grammar has no value for. After `=` the unsafe fix lets a session
    assemble it (docs/decisions.md, "fixes36"): the prompt quotes the object as written, the
    names its values read go in as context, so the binding keeps its name and its shape."""
    token = view.tokens[start]
    fix = _data_session_fix(view, start) if view.kinds[start - 1] == "=" else None
    return diagnostic(
        "E004",
        "A `{ … }` lists names (a context object); `key: value` data is not in the grammar",
        token_span(token),
        view.source.path,
        help='let a session build the data: `= session "Return this as JSON: …"` with the '
        "names it reads as `context: [a, b]` (`prose check --fix --unsafe-fixes` writes it)",
        fix=fix,
        rule=_DATA_RULE,
    )


def _data_session_fix(view: TokenView, start: int) -> Fix | None:
    """The object from token ``start`` to its closing brace as `session "…"` plus a
    `context:` line for the names among its values; None when it holds anything but data
    (a session, an operator, a comment) or does not end its line."""
    kinds, tokens, text = view.kinds, view.tokens, view.source.text
    depth, at = 0, start
    pieces: list[str] = []
    names: list[str] = []
    while True:
        kind = kinds[at]
        if kind not in _DATA_PUNCTUATION:
            return None
        token = tokens[at]
        if at > start and "#" in text[tokens[at - 1][3] : token[2]]:
            return None  # a comment inside the object would be lost
        depth += {"{": 1, "[": 1, "}": -1, "]": -1}.get(kind, 0)
        is_value = kind == NAME and kinds[at + 1] != ":" and kinds[at - 1] != "."
        if is_value and token[1] not in _DATA_LITERALS and token[1] not in names:
            names.append(token[1])
        pieces.append(token[1] + (" " if kind in (",", ":") else ""))
        if depth == 0:
            break
        at += 1
    end = tokens[at][3]
    line_end = text.find("\n", end)
    line_end = len(text) if line_end == -1 else line_end
    line_end -= text[line_end - 1 : line_end] == "\r"
    rest = text[end:line_end].strip()
    if rest and not rest.startswith("#"):
        return None
    line_start = text.rfind("\n", 0, token_span(tokens[start]).start) + 1
    indent = text[line_start : len(text) - len(text[line_start:].lstrip(" "))]
    prompt = "Return only this data as JSON" + (
        ", each name's value taken from the context: " if names else ": "
    )
    session = "session " + quote(prompt + "".join(pieces))
    context = f"\n{indent}  context: [{', '.join(names)}]" if names else ""
    replaced = view.source.span(tokens[start][2], line_end)
    edit = Edit(replaced, session + text[end:line_end] + context)
    return Fix("let a session assemble the data", (edit,), safe=False)


# --- operators ---------------------------------------------------------------------------------

_COMPUTED = re.compile(
    rf"\s*(?:(?P<keyword>let|const|output)\s+)?(?P<name>{IDENT_PATTERN})\s*=\s*(?P<value>.+?)\s*"
)
_JUDGED = re.compile(r"\s*(?P<keyword>if|elif|else if|while|until|loop while|loop until)\s+"
                     r"(?P<value>.+?)\s*:\s*")  # fmt: skip
_NAMES = re.compile(IDENT_PATTERN)


def operator_rewrite(found: Diagnostic, source: SourceFile) -> Diagnostic:
    """The scanner's E102 at an operator (`depth - 1`, `a + [b]`, `x != "y"`) with help that
    shows the nearest way to write its line: a value computed by a session that reads the
    names as context, a test judged by the model as a `**condition**`. There is no mechanical
    fix: what the operator did is now the model's to do."""
    if found.code != "E102" or "no operators" not in found.message:
        return found
    line = source.line_text(found.line).split("#", 1)[0]
    judged = _JUDGED.fullmatch(line)
    if judged is not None:
        shown = f"{judged['keyword']} **{judged['value'].replace('**', '')}**:"
        return _with_help(found, f"let the model judge it: `{shown}`")
    computed = _COMPUTED.fullmatch(line)
    if computed is None:
        return found
    value = computed["value"]
    names = [
        word
        for word in dict.fromkeys(_NAMES.findall(re.sub(r'"[^"]*"', "", value)))
        if word not in _DATA_LITERALS
    ]
    keyword = (computed["keyword"] or "") + " " if computed["keyword"] else ""
    rewrite = f"`{keyword}{computed['name']} = session {plain_quote('Compute: ' + value)}`"
    if names:
        rewrite += f" with `context: [{', '.join(names)}]` below it"
    return _with_help(found, f"let a session compute it: {rewrite}")


def _with_help(found: Diagnostic, help_: str) -> Diagnostic:
    from dataclasses import replace

    return replace(found, help=help_)

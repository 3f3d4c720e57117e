"""Habits in sessions: YAML in properties (`prompt: |`, `- item`), property values written
loosely (bare prompts and patterns, lists without brackets, `times`), and session lines
(prompt and agent together, a colon after the prompt)."""

from __future__ import annotations

import re

from openprose import nodes as n
from openprose.codes import diagnostic
from openprose.diagnostics import Diagnostic, Edit, Fix
from openprose.habits.view import LAYOUT, TokenView, plain_quote
from openprose.scanner import (
    DEDENT,
    EOF,
    ERROR,
    INDENT,
    NAME,
    NEWLINE,
    SOFT_KEYWORDS,
    STRING,
    Token,
    string_literal,
    token_span,
)
from openprose.source import SourceFile, Span

# --- YAML in properties: `prompt: |` blocks, `- item` lists -----------------------------------

# Properties whose value is one thing: `- item` lines under them are no list to rewrite.
_SCALAR_PROPERTIES = frozenset(("prompt", "model", "persist", "retry", "backoff"))
_NAME_KINDS = frozenset((NAME, *SOFT_KEYWORDS))


def yaml_block_text(
    view: TokenView, prop: str, at: int
) -> tuple[Diagnostic, n.StringLit, int] | None:
    """`prompt: |` (or `>`) with the text on the indented lines under it, as YAML writes
    long text: the grammar's long text is a `\"\"\"` string. One E004 for the block with
    the fix that writes it so — the lines without their common indentation, which is
    what YAML's `|` means (safe); for `>`, which folds lines into one, the line breaks
    stay (unsafe: the model then sees them). The diagnostic, the string the text parses
    as (its span the block's) and the position after the block; None when ``at`` (the
    token after `prop:`) starts no such block."""
    kinds, tokens, source = view.kinds, view.tokens, view.source
    text = source.text
    end = at
    while kinds[end] not in LAYOUT:
        end += 1
    indicator = text[tokens[at][2] : tokens[end - 1][3]]
    if (
        re.fullmatch(r"[|>][-+]?", indicator) is None
        or kinds[end] != NEWLINE
        or kinds[end + 1] != INDENT
    ):
        return None
    name_token = tokens[at - 2]
    line_start = text.rfind("\n", 0, name_token[2]) + 1
    own_indent = name_token[2] - line_start
    # the block: the lines after the header indented deeper than the property (or blank)
    first_line = text.find("\n", tokens[at][2]) + 1
    lines: list[str] = []
    cursor = block_end = first_line
    while cursor < len(text):
        stop = text.find("\n", cursor)
        stop = len(text) if stop == -1 else stop
        line = text[cursor:stop].rstrip("\r")
        if line.strip():
            if len(line) - len(line.lstrip(" ")) <= own_indent or "\t" in line:
                break
            block_end = cursor + len(line)
        lines.append(line)
        cursor = stop + 1
    while lines and not lines[-1].strip():
        lines.pop()
    # its tokens: from the INDENT through the DEDENT that closes it, none reaching past it
    depth, i = 0, end + 1
    while True:
        kind = kinds[i]
        if kind == EOF:
            return None
        if kind not in LAYOUT and tokens[i][3] > block_end:
            return None  # a `\"\"\"` in the text ran past the block: leave it
        depth += (kind == INDENT) - (kind == DEDENT)
        i += 1
        if depth == 0:
            break
    margin = min(len(line) - len(line.lstrip(" ")) for line in lines if line.strip())
    body = [line[margin:] for line in lines]
    if indicator[0] == ">":
        value = " ".join(" ".join(body).split()) if "" not in body else "\n".join(body)
    else:
        value = "\n".join(body) + ("" if indicator.endswith("-") else "\n")
    escaped = [line.replace("\\", "\\\\").replace('"""', '\\"""') for line in body]
    closing = "" if indicator.endswith("-") else "\n"
    written = '"""\n' + "\n".join(escaped) + closing + '"""'
    span = source.span(tokens[at][2], block_end)
    found = diagnostic(
        "E004",
        f'`{prop}: {indicator}` is YAML\'s long text: OpenProse writes it as a """ string',
        source.span(tokens[at][2], tokens[end - 1][3]),
        source.path,
        help=f'write `{prop}: """` on this line, the text under it, and `"""` after it',
        fix=Fix(
            'write the text as a """ string',
            (Edit(span, written),),
            safe=indicator[0] == "|",
        ),
    )
    return found, n.StringLit(span=span, value=value, parts=(value,), triple=True), i


def yaml_dash_list(
    view: TokenView, prop: str, first: int
) -> tuple[Diagnostic, n.ArrayLit, int] | None:
    """A property's list written as YAML does (`skills:` then `- web-search` lines, as
    programs copied from agent front matter do): the grammar's list is `[a, b]` on the
    property's line. One diagnostic for the whole list, with the safe fix that writes
    it so (comments of the item lines move above the property); the list parses as
    that array — names for `context:`, strings otherwise — so nothing cascades. The
    diagnostic, that array (its span the items') and the position after the last item's
    line; None when ``first`` (the token after `prop:`'s line) starts no such list."""
    kinds, tokens, source = view.kinds, view.tokens, view.source
    text = source.text
    if kinds[first] != ERROR or tokens[first][1] != "-" or prop in _SCALAR_PROPERTIES:
        return None
    items: list[tuple[int, int]] = []  # token index range of each item
    i = first
    while kinds[i] != DEDENT and kinds[i] != EOF:
        if kinds[i] != ERROR or tokens[i][1] != "-" or kinds[i + 1] in LAYOUT:
            return None  # not one `- item` per line: read it as a property block
        end = i + 1
        while kinds[end] not in LAYOUT:
            end += 1
        if kinds[end] != NEWLINE or ":" in kinds[i + 1 : end]:
            return None  # `- name: x` is a YAML mapping, not a list item
        items.append((i + 1, end))
        i = end + 1
    last = items[-1][1] - 1
    elements: list[n.Expr] = []
    written: list[str] = []
    for start, end in items:
        lo, hi = tokens[start][2], tokens[end - 1][3]
        span = source.span(lo, hi)
        item = text[lo:hi]
        if end - start == 1 and kinds[start] == STRING and tokens[start][4] == tokens[start][6]:
            literal = string_literal(tokens[start])
            elements.append(literal)
            written.append(item if prop != "context" else literal.value)
            continue
        if prop == "context" and end - start == 1 and kinds[start] in _NAME_KINDS:
            elements.append(n.Name(span=span, id=item))
            written.append(item)
            continue
        elements.append(n.StringLit(span=span, value=item, parts=(item,)))
        quoted = item.replace("\\", "\\\\").replace('"', '\\"').replace("{", "\\{")
        written.append(f'"{quoted}"')
    lo, hi = tokens[first][2], tokens[last][3]
    array = "[" + ", ".join(written) + "]"
    colon = tokens[first - 3]
    # comments at the ends of all but the last item line would be replaced: keep them
    # on their own lines above the property
    moved = []
    ends = [first - 2] + [end for _, end in items[:-1]]  # the lines' NEWLINE tokens
    for end in ends:
        rest = text[tokens[end - 1][3] : tokens[end][2]].strip()
        if rest.startswith("#"):
            moved.append(rest)
    name_token = tokens[first - 4]
    line_start = text.rfind("\n", 0, name_token[2]) + 1
    indent = text[line_start : name_token[2]]
    edits = [Edit(source.span(colon[3], hi), " " + array)]
    if moved:
        above = "".join(f"{indent}{comment}\n" for comment in moved)
        edits.insert(0, Edit(source.span(line_start, line_start), above))
    fix = None if moved and indent.strip() else Fix(f"write `{prop}: [...]`", tuple(edits))
    code = {"skills": "E013", "context": "E143"}.get(prop, "E004")
    found = diagnostic(
        code,
        f"`{prop}:` takes a list in brackets on its own line, not `- item` lines",
        source.span(lo, hi),
        source.path,
        help=f"write `{prop}: {array if len(array) <= 60 else '[...]'}`",
        fix=fix,
    )
    return found, n.ArrayLit(span=source.span(lo, hi), elements=tuple(elements)), items[-1][1] + 1


# --- property values written loosely: bare prompts and patterns, lists without brackets ---------

RETRY_RULE = 'Error Handling: retry_property ::= "retry" ":" number_literal'


def unquoted_prompt(source: SourceFile, span: Span, raw: str) -> Diagnostic:
    """`prompt: You are a helpful assistant.` (``raw`` the line's text at ``span``): a
    prompt is a string. The E004 with the safe fix that quotes it when it is one line (the
    parser then drops the scanner's complaints inside it: the quotes take them in)."""
    fix = None
    if span.line == span.end_line:
        # `{name}` in the words was meant as interpolation: the braces are kept
        quoted = plain_quote(raw)
        fix = Fix(f"write {quoted}", (Edit(span, quoted),))
    return diagnostic(
        "E004",
        "A prompt is a quoted string",
        span,
        source.path,
        help=f"quote it: `prompt: {fix.edits[0].text}`"
        if fix
        else 'quote it: `prompt: "…"` (or `"""` for several lines)',
        fix=fix,
        rule='Session Statement: sessionProperty → "prompt:" string',
    )


def unquoted_patterns(source: SourceFile, span: Span, raw: str) -> tuple[Diagnostic, list[str]]:
    """`write: docs/` or `read: *.md, *.txt` under `permissions:` (``raw`` the line's text
    at ``span``): patterns are quoted strings in brackets. The E016 with the safe fix that
    quotes each comma-separated pattern, and those patterns."""
    patterns = [p.strip() for p in raw.split(",") if p.strip()]
    listed = "[" + ", ".join(plain_quote(p) for p in patterns) + "]"
    fix = None
    if span.line == span.end_line and patterns:
        fix = Fix(f"write {listed}", (Edit(span, listed),))
    found = diagnostic(
        "E016",
        "Permission patterns are quoted strings in brackets",
        span,
        source.path,
        help=f"write `{listed}`",
        fix=fix,
        rule="Agent Definitions, Permission Types: read/write/execute take glob patterns, "
        'permissions: read: ["*.md", "*.txt"]',
    )
    return found, patterns


def context_in_brackets(
    source: SourceFile, span: Span, names: list[n.Name] | tuple[n.Name, ...]
) -> Diagnostic:
    """`context: notes draft` (names separated by spaces) or `context: (a, b)` (a tuple),
    at ``span``: the grammar's list is `[a, b]`. The E143 with that safe fix when the list
    is on one line."""
    listed = "[" + ", ".join(name.id for name in names) + "]"
    return diagnostic(
        "E143",
        "Several context variables are listed in brackets: `context: [a, b]`",
        span,
        source.path,
        help=f"write `context: {listed}`",
        fix=Fix(f"write `{listed}`", (Edit(span, listed),)) if span.line == span.end_line else None,
    )


def unbracketed_list(source: SourceFile, prop: str, span: Span) -> Diagnostic:
    """`context: research, notes` (the values at ``span``): a list is written in brackets.
    E143 for `context`, E013 for `skills`, E004 otherwise, with the safe fix that adds
    them."""
    text = source.text[span.start : span.end]
    code = {"skills": "E013", "context": "E143"}.get(prop, "E004")
    return diagnostic(
        code,
        f"`{prop}:` lists several values: a list is written in brackets",
        span,
        source.path,
        help=f"write `{prop}: [{text if len(text) <= 40 else '...'}]`",
        fix=Fix("put the list in brackets", (Edit(span, f"[{text}]"),)),
    )


def extra_times(
    source: SourceFile, before: Token, times: Token, message: str, rule: str | None
) -> Diagnostic:
    """`times` after a count (`repeat 3 times:`, `retry: 3 times`; ``before`` the count):
    the E004 at the word whose safe fix removes it."""
    return diagnostic(
        "E004",
        message,
        token_span(times),
        source.path,
        help="remove `times`",
        fix=Fix("remove `times`", (Edit(source.span(before[3], times[3]), ""),)),
        rule=rule,
    )


# --- session lines: prompt and agent together, a colon after the prompt ---------------------------


def prompt_and_agent(view: TokenView, at: int) -> Diagnostic:
    """`session "Summarize": writer`: a session takes a prompt string or `: agent`, not
    both on its line (upstream's own guide calls this form invalid). The E004 with the
    safe fix `session: writer` and `prompt: "Summarize"` as its first property."""
    tokens, source = view.tokens, view.source
    string, name = tokens[at], tokens[at + 2]
    column, spaces = _property_column(view, tokens[at - 1], at + 2)
    literal = source.text[string[2] : string[3]]
    fixable = string[4] == string[6] and spaces
    return diagnostic(
        "E004",
        "a session takes a prompt string or `: agent`, not both on its line",
        source.span(string[2], name[3]),
        source.path,
        help=f"write `session: {name[1]}` with `prompt: {literal if len(literal) <= 30 else '...'}` under it",
        fix=Fix(
            "write the agent after `session:` and the prompt as a property",
            (
                Edit(
                    source.span(tokens[at - 1][3], name[3]),
                    f": {name[1]}\n{' ' * column}prompt: {literal}",
                ),
            ),
        )
        if fixable
        else None,
    )


def _property_column(view: TokenView, head: Token, last: int) -> tuple[int, bool]:
    """Where a property line written under the statement whose line holds ``head`` and
    ends at token ``last`` goes: the column of the property block under it when there is
    one, else two deeper than the line; and whether the line is indented with spaces
    only (a fix that writes a line is offered then)."""
    tokens, kinds = view.tokens, view.kinds
    text = view.source.text
    line_start = text.rfind("\n", 0, head[2]) + 1
    line = text[line_start : head[2]]
    if kinds[last + 1] == NEWLINE and kinds[last + 2] == INDENT:
        column = tokens[last + 3][5] - 1  # the property block's own indentation
    else:
        column = len(line) - len(line.lstrip(" ")) + 2
    return column, "\t" not in line


def agent_then_prompt(view: TokenView, at: int) -> Diagnostic:
    """`session: researcher "Find the sources"` (also `resume:`): the agent's session
    takes its task as the `prompt:` property. The E004 with the safe fix that moves the
    string there."""
    tokens, source = view.tokens, view.source
    string, agent = tokens[at], tokens[at - 1]
    column, spaces = _property_column(view, agent, at)
    literal = source.text[string[2] : string[3]]
    fixable = string[4] == string[6] and spaces
    shown = literal if len(literal) <= 30 else '"…"'
    return diagnostic(
        "E004",
        "The task of an agent's session is its `prompt:` property, on the line under it",
        token_span(string),
        source.path,
        help=f"write `prompt: {shown}` on the line under the session",
        fix=Fix(
            "move the prompt to a `prompt:` property",
            (
                Edit(
                    source.span(agent[3], string[3]),
                    f"\n{' ' * column}prompt: {literal}",
                ),
            ),
        )
        if fixable
        else None,
        rule='Session Statement: session → "session" ":" IDENTIFIER, sessionProperty → '
        '"prompt:" string',
    )


def header_colon(source: SourceFile, token: Token) -> Diagnostic:
    """`session "Synthesize":` with its properties under it (an early form of the
    language; ``token`` the colon): a session line ends without ':'. One error, the
    colon's removal as a safe fix (the indented lines are the session's properties either
    way)."""
    colon = token_span(token)
    return diagnostic(
        "E004",
        "Unexpected ':' after the session: its properties follow on indented lines, "
        "with no ':' after the prompt",
        colon,
        source.path,
        help='remove the colon: session "..." then the indented properties',
        fix=Fix("remove the colon", (Edit(colon, ""),)),
    )

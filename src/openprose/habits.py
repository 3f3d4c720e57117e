"""Habits: syntax people bring from other languages, recognised with the fix that rewrites it.

The parser owns the grammar and decides where a habit may stand; this module tells what the
habit is and how to write it in OpenProse. Each function reads the parser's tokens through
``TokenView`` and returns the diagnostic (a value, with its fix) and, where the habit spans
tokens, the position after it; raising, recovery and the tree stay with the parser.
Decisions: docs/decisions.md, "Conformance (programs, session 13)" and "Programs as people
write them (session 14)".
"""

from __future__ import annotations

import re
from typing import Protocol, cast

from openprose import nodes as n
from openprose.codes import diagnostic
from openprose.diagnostics import Diagnostic, Edit, Fix
from openprose.scanner import (
    DEDENT,
    EOF,
    ERROR,
    IDENT_PATTERN,
    INDENT,
    NAME,
    NEWLINE,
    NUMBER,
    SOFT_KEYWORDS,
    STRING,
    StringValue,
    Token,
    string_literal,
    token_span,
)
from openprose.source import SourceFile, Span

_LAYOUT = frozenset((NEWLINE, INDENT, DEDENT, EOF))
_IDENTIFIER = re.compile(IDENT_PATTERN)


class TokenView(Protocol):
    """What a habit reads: the source and its tokens (the parser is one)."""

    @property
    def source(self) -> SourceFile: ...
    @property
    def tokens(self) -> list[Token]: ...
    @property
    def kinds(self) -> list[str]: ...


# --- control words: break, continue, return, pass ---------------------------------------------

_CONTROL_RULE = (
    "Syntax Grammar (Implemented): statement → the grammar's keywords; a loop ends by its "
    "condition or (max: N), a block's value is its last statement's"
)
_NO_SUCH_STATEMENT = {
    "break": (
        "OpenProse has no `break`: a loop ends when its condition says so or at its (max: N)",
        (
            "put the reason to stop into the loop's condition (`loop until **… or the step "
            'failed**`), or `throw "…"` and catch it after the loop'
        ),
    ),
    "continue": (
        "OpenProse has no `continue`: every iteration runs the whole body",
        "put the rest of the body under `if **…**:` to skip it",
    ),
    "return": (
        "OpenProse has no `return`: a block's value is the value of its last statement",
        (
            "make the statement that gives the value the block's last one, and bind the "
            "call: `let x = do name(...)`"
        ),
    ),
    "pass": (
        "OpenProse has no `pass`: a body may be left empty",
        "remove the line",
    ),
    "assert": (
        "OpenProse has no `assert`: a test is a **condition** the model judges",
        'write `if **not (what must hold)**:` with `throw "…"` under it',
    ),
}
CONTROL_WORDS = frozenset(_NO_SUCH_STATEMENT)


def control_word(view: TokenView, at: int, previous: n.Stmt | None) -> Diagnostic:
    """`break`, `continue`, `return x`, `pass` at token ``at``: control words of other
    languages. A loop ends by its condition or its max, a block's value is its last
    statement's. `return x` as a block's last line right after ``previous``, the statement
    that bound `x` (or `return session …`), has a safe fix: drop the line (or the word) —
    the value is the same."""
    token = view.tokens[at]
    word = token[1]
    message, help_ = _NO_SUCH_STATEMENT[word]
    fix = _return_fix(view, at, previous) if word == "return" else None
    if word == "assert":
        tested = view.source.line_text(token[4])[token[5] + 6 :].split("#", 1)[0]
        tested = tested.replace("**", "").strip()
        if tested:
            help_ = f'write `if **{tested} does not hold**:` with `throw "…"` under it'
    return diagnostic(
        "E004",
        message,
        token_span(token),
        view.source.path,
        help=help_,
        fix=fix,
        rule=_CONTROL_RULE,
    )


def _return_fix(view: TokenView, at: int, previous: n.Stmt | None) -> Fix | None:
    kinds, token = view.kinds, view.tokens[at]
    at += 1
    if kinds[at] in _LAYOUT:
        return None
    line_end = at
    while kinds[line_end] not in _LAYOUT:
        line_end += 1
    closes = kinds[line_end] in (DEDENT, EOF) or (
        kinds[line_end] == NEWLINE and kinds[line_end + 1] in (DEDENT, EOF)
    )
    if not closes:
        return None  # statements follow: the value would not be the block's
    word = token_span(token)
    if kinds[at] == NAME and line_end == at + 1:
        name = view.tokens[at][1]
        bound = (
            isinstance(previous, n.Binding)
            and isinstance(previous.target, n.Name)
            and previous.target.id == name
            or isinstance(previous, n.Assign | n.Output)
            and (previous.target if isinstance(previous, n.Assign) else previous.name).id == name
        )
        if not bound:
            return None
        text = view.source.text
        start = text.rfind("\n", 0, word.start) + 1
        end = text.find("\n", word.end)
        end = len(text) if end == -1 else end + 1
        return Fix(
            f"remove `return {name}`: the statement above already gives the value",
            (Edit(view.source.span(start, end), ""),),
        )
    if kinds[at] in ("session", "do", "resume", "parallel"):
        after = view.tokens[at]
        return Fix("remove `return`", (Edit(view.source.span(word.start, after[2]), ""),))
    return None


# --- a session property that lost its indentation ---------------------------------------------

# A line that runs a session (`session "x"`, `let r = session: a`, `x = resume: a`), or a
# session property line (the run a property left unindented may go on).
_SESSION_LINE = re.compile(
    r"\s*(?:(?:(?:let|const|output)\s+)?[\w-]+\s*=\s*)?(?:session|resume)\b[^\n]*"
    r"|\s*(?:model|prompt|context|retry|backoff)\s*:"
)


def unindented_property(source: SourceFile, token: Token) -> Diagnostic | None:
    """`context: { a, b }` at the session's own indentation, right under it (documents
    that lost the indentation print it so): the property belongs to the session above,
    and properties are indented under it. The E104-like E004 with the safe fix that
    indents the line when the line above is such a session (or property), else None."""
    text = source.text
    line_start = text.rfind("\n", 0, token[2]) + 1
    indent = text[line_start : token[2]]
    if indent.strip():
        return None
    above = line_start - 1
    while above > 0:
        start = text.rfind("\n", 0, above) + 1
        line = text[start:above].rstrip("\r")
        if line.strip() and not line.lstrip().startswith("#"):
            break
        above = start - 1
    else:
        return None
    if not _SESSION_LINE.match(line) or not line.startswith(indent) or line[len(indent)] == " ":
        return None
    return diagnostic(
        "E004",
        f"`{token[1]}:` is a property of the session above: properties are indented under it",
        token_span(token),
        source.path,
        help=f"indent the line: `{indent}  {token[1]}: ...`",
        fix=Fix("indent the property", (Edit(source.span(line_start, line_start), "  "),)),
    )


# --- `import "x" from "y"` ----------------------------------------------------------------------


def legacy_import(view: TokenView, at: int) -> tuple[Diagnostic, int]:
    """``import "x" from "y"`` starting at token ``at``: E123 with its `use` rewrite, and
    the position after the statement."""
    kinds, tokens = view.kinds, view.tokens
    name_token = tokens[at + 1]
    source_token = None
    end = at + 2
    if kinds[end] == NAME and tokens[end][1] == "from" and kinds[end + 1] == STRING:
        source_token = tokens[end + 1]
        end += 2
    name = cast(StringValue, name_token[8]).value
    source = cast(StringValue, source_token[8]).value if source_token else name
    first, last = tokens[at], tokens[end - 1]
    span = Span(first[2], last[3], first[4], first[5], last[6], last[7])
    # The skill `x` of source `y` is `y/x` — unless `y` already ends in `x` (one skill per
    # source). The path's last segment then names the import `x`, as `skills:` expects.
    path = source if source.rstrip("/").rsplit("/", 1)[-1] == name else f"{source}/{name}"
    rewrite = f"use {quote(path)}"
    safe = kinds[end] in _LAYOUT and _IDENTIFIER.fullmatch(name) is not None
    found = diagnostic(
        "E123",
        f'`import "{name}"` is the legacy import statement; the reference imports with `use`',
        span,
        view.source.path,
        help=f"rewrite it as `{rewrite}`",
        fix=Fix(f"rewrite as `{rewrite}`", (Edit(span, rewrite),)) if safe else None,
    )
    return found, end


# --- `let x: string = …`, `let x: session "…"` ----------------------------------------------


def colon_for_equals(view: TokenView, at: int, keyword: str) -> tuple[Diagnostic, int]:
    """`let x: session "…"` / `output r: session "…"` (a type annotation's colon, or a
    property's) with the colon at token ``at``: the binding's `=` — the E004 with the safe
    fix, and the position where the value starts (the parser reads it as meant)."""
    kinds, colon = view.kinds, view.tokens[at]
    rule = f'Syntax Grammar: {keyword} → "{keyword}" IDENTIFIER "=" expression'
    if kinds[at + 1] == NAME and kinds[at + 2] == "=":
        # `let x: string = …` — a type annotation: OpenProse values are text
        typed = view.tokens[at + 1]
        annotation = view.source.span(colon[2], typed[3])
        found = diagnostic(
            "E004",
            f"OpenProse has no type annotations: `{keyword} name = value`",
            annotation,
            view.source.path,
            help=f"remove `: {typed[1]}`",
            fix=Fix(f"remove `: {typed[1]}`", (Edit(annotation, ""),)),
            rule=rule,
        )
        return found, at + 3
    span = token_span(colon)
    after = view.source.text[colon[3] : colon[3] + 1]
    found = diagnostic(
        "E004",
        f"`{keyword}` binds with `=`, not `:`",
        span,
        view.source.path,
        help=f"write `{keyword} name = value`",
        fix=Fix("write `=`", (Edit(span, " =" if after == " " else " = "),)),
        rule=rule,
    )
    return found, at + 1


# --- writing text as a string literal (what most fixes insert) ---------------------------------


def quote(text: str) -> str:
    """``text`` as a string literal."""
    for char, escape in _ESCAPED:
        text = text.replace(char, escape)
    return '"' + text + '"'


_ESCAPED = (("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\t", "\\t"), ("{", "\\{"))


def plain_quote(text: str) -> str:
    """``text`` as a string literal that keeps its `{name}` interpolations."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


# --- inputs declared as in other languages -----------------------------------------------------

_INPUT_RULE = (
    'Input Declarations: `input name: "description"` (inputDecl → "input" IDENTIFIER ":" '
    "string); the caller provides every input"
)
# Words that name a type in other languages: `input count: number`, `input tags: list[str]`.
_TYPE_WORDS = frozenset(
    (
        "string", "str", "text", "number", "int", "integer", "float", "double", "bool",
        "boolean", "list", "array", "dict", "object", "map", "any", "json", "date",
        "datetime", "url", "path", "file", "enum", "optional",
    )
)  # fmt: skip
_TYPE_NOTATION = re.compile(r"\w+(\s*[\[<(][\w\s,\[\]<>|.?]*[\]>)])*\??(\s*\|\s*\w+)*\??")


def input_without_description(view: TokenView, at: int, name: n.Name) -> Diagnostic:
    """`input topic` with the line's end at token ``at``: the grammar's form is
    `input name: "description"`. The fix adds `: ""` (the reference's row then asks for a
    description, W-level)."""
    token = view.tokens[at]
    end = Span(token[2], token[2], token[4], token[5], token[4], token[5])
    return diagnostic(
        "E005",
        f"Invalid syntax: `input {name.id}` needs a description: "
        f'`input {name.id}: "what the caller gives"`',
        end,
        view.source.path,
        help='add a description after a colon: `: "…"`',
        fix=Fix('add `: ""`', (Edit(end, ': ""'),)),
        rule=_INPUT_RULE,
    )


def input_default(view: TokenView, at: int, name: n.Name) -> Diagnostic:
    """`input depth = "shallow"` with the `=` at token ``at``: a default value, as in other
    languages, but the caller gives every input. The fix makes that text the description
    (unsafe: the value was meant as a default)."""
    equals = view.tokens[at]
    single = view.kinds[at + 1] == STRING and view.kinds[at + 2] in (NEWLINE, EOF)
    return diagnostic(
        "E004",
        f"Unexpected token '=': an input has no default value; it is declared "
        f'`input {name.id}: "description"` and the caller gives it',
        token_span(equals),
        view.source.path,
        help="write `:` and describe the input; pass the value when running "
        f"(`prose run FILE --input {name.id}=…`)",
        fix=Fix(
            "write `:` (the text becomes the description)",
            (Edit(view.source.span(name.span.end, equals[3]), ":"),),
            safe=False,
        )
        if single and equals[3] == equals[2] + 1
        else None,
        rule=_INPUT_RULE,
    )


def unquoted_description(view: TokenView, first: int, end: int, name: n.Name) -> Diagnostic:
    """`input topic: string` (a type, as in TypeScript or Python) or `input audience: the
    people who read it` (the description without quotes), tokens ``first`` to ``end``. The
    grammar's description is a string, and OpenProse values are text: one E004 for the rest
    of the line with the safe fix that quotes it — a type becomes `"topic (string)"`, so the
    description still says what was meant. A default (`number = 3`) gets no fix: the caller
    gives every input."""
    tokens = view.tokens
    head, last = tokens[first], tokens[end - 1]
    span = Span(head[2], last[3], head[4], head[5], last[6], last[7])
    raw = view.source.text[span.start : span.end]
    words = raw.split()
    leading = re.match(r"\w*", raw)
    typed = (
        _TYPE_NOTATION.fullmatch(raw) is not None
        and leading is not None
        and leading.group().lower() in _TYPE_WORDS
    )
    default = any(t[0] == "=" for t in tokens[first:end])
    fix = None
    if span.line == span.end_line and not default and "\n" not in raw:
        text = f"{name.id} ({raw})" if typed else raw
        fix = Fix(f"write the description as text: {quote(text)}", (Edit(span, quote(text)),))
    if typed or default:
        message = (
            f"Unexpected token {words[0]!r}: an input's description is a quoted string, "
            f"not a type (OpenProse values are text)"
        )
    else:
        message = f"Unexpected token {words[0]!r}: an input's description is a quoted string"
    if default:
        help_ = (
            f'write `input {name.id}: "…"` and pass the value when running (an input has '
            "no default)"
        )
    elif fix is not None:
        help_ = f"quote it: `input {name.id}: {fix.edits[0].text}`"
    else:
        help_ = f'quote it: `input {name.id}: "…"`'
    return diagnostic(
        "E004", message, span, view.source.path, help=help_, fix=fix, rule=_INPUT_RULE
    )


def input_as_value(
    source: SourceFile, keyword: Token, target: n.Name, description: n.StringLit | n.Discretion
) -> Diagnostic:
    """`let api_url = input "Enter API URL"` (``keyword`` the `let`): an input is a
    declaration of the program, `input NAME: "description"`. The E004 with the safe fix
    that writes it so (E022 then moves it to the top when it stands below executable
    statements)."""
    whole = source.span(keyword[2], description.span.end)
    literal = source.text[description.span.start : description.span.end]
    return diagnostic(
        "E004",
        "`input` declares a program input; it is not a value to bind",
        whole,
        source.path,
        help=f"write `input {target.id}: {literal if len(literal) <= 40 else '...'}`",
        fix=Fix(f"write `input {target.id}: ...`", (Edit(whole, f"input {target.id}: {literal}"),)),
    )


# --- clauses: `except:`, `catch err:`, `else if`, `option Label:` -----------------------------


def except_clause(view: TokenView, at: int) -> Diagnostic | None:
    """`except:` (Python's word) at token ``at``, where a `catch:` clause goes: the E004
    with the safe fix that writes `catch` (the parser reads it as that clause, so the `try`
    keeps its handler); None when the token is no such clause."""
    token = view.tokens[at]
    if token[0] != NAME or token[1] != "except" or view.kinds[at + 1] not in (":", "as", NAME):
        return None
    span = token_span(token)
    return diagnostic(
        "E004",
        "`except` is written `catch` in OpenProse",
        span,
        view.source.path,
        help="write `catch:` (or `catch as err:`)",
        fix=Fix("write `catch`", (Edit(span, "catch"),)),
        rule='Error Handling: catchBlock → "catch" ("as" IDENTIFIER)? ":"',
    )


def catch_without_as(source: SourceFile, error: n.Name) -> Diagnostic:
    """`catch err:` (Python writes `except E as err`, others `catch (err)`): the name
    follows `as`."""
    return diagnostic(
        "E004",
        f"`catch` names its error with `as`: `catch as {error.id}:`",
        error.span,
        source.path,
        help=f"write `catch as {error.id}:`",
        fix=Fix(
            "insert `as`",
            (Edit(source.span(error.span.start, error.span.start), "as "),),
        ),
    )


def else_if(source: SourceFile, keyword: Token, word: Token) -> Diagnostic:
    """`else if **c**:` (``keyword`` the `else`, ``word`` the `if`) is written
    `elif **c**:` — the E004 with that safe fix."""
    span = source.span(keyword[2], word[3])
    return diagnostic(
        "E004",
        "`else if` is written `elif`",
        span,
        source.path,
        help="write `elif **condition**:`",
        fix=Fix("write `elif`", (Edit(span, "elif"),)),
    )


def unquoted_label(view: TokenView, first: int, end: int) -> Diagnostic | None:
    """`option Scale up:`, the label's tokens from ``first`` up to the line's last `:`
    (``end - 1``): the E004 whose span is the label, with the safe fix that quotes it;
    None when the words do not make one label on one line."""
    kinds = view.kinds
    head, last = view.tokens[first], view.tokens[end - 2]
    span = Span(head[2], last[3], head[4], head[5], last[6], last[7])
    if span.line != span.end_line or any(k == ERROR for k in kinds[first : end - 1]):
        return None
    quoted = quote(view.source.text[span.start : span.end])
    return diagnostic(
        "E004",
        f"An option's label is a quoted string: `option {quoted}:`",
        span,
        view.source.path,
        help=f"quote the label: `option {quoted}:`",
        fix=Fix(f"write {quoted}", (Edit(span, quoted),)),
        rule='Choice Blocks: choiceOption → "option" string ":"',
    )


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
    while kinds[end] not in _LAYOUT:
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
        if kind not in _LAYOUT and tokens[i][3] > block_end:
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
        if kinds[i] != ERROR or tokens[i][1] != "-" or kinds[i + 1] in _LAYOUT:
            return None  # not one `- item` per line: read it as a property block
        end = i + 1
        while kinds[end] not in _LAYOUT:
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
    while kinds[i] not in _LAYOUT:
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

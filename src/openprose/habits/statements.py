"""Habits at the start of a statement: control words, an unindented session property, `import …
from`, `let x: T =`, inputs as other languages declare them, and clause words (`except:`,
`catch err:`, `else if`, unquoted option labels)."""

from __future__ import annotations

import re
from typing import cast

from openprose import nodes as n
from openprose.codes import diagnostic
from openprose.diagnostics import Diagnostic, Edit, Fix
from openprose.habits.view import IDENTIFIER, LAYOUT, TokenView, quote
from openprose.scanner import (
    DEDENT,
    EOF,
    ERROR,
    NAME,
    NEWLINE,
    STRING,
    StringValue,
    Token,
    token_span,
)
from openprose.source import SourceFile, Span

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
    if kinds[at] in LAYOUT:
        return None
    line_end = at
    while kinds[line_end] not in LAYOUT:
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
    safe = kinds[end] in LAYOUT and IDENTIFIER.fullmatch(name) is not None
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

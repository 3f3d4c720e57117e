"""The OpenProse scanner: source text to a flat token list with Python-style layout tokens.

One compiled master regex is driven by ``finditer`` over the whole text; every character is
claimed by some alternative (the last ones catch unterminated literals and stray characters),
so matches are contiguous and no per-character Python loop runs. Layout follows Python:
``NEWLINE`` ends each logical line, ``INDENT``/``DEDENT`` bracket indented blocks, and line
breaks inside ``( )``, ``[ ]`` and ``{ }`` are ignored (implicit line joining).

Strings are decoded here (escapes and ``{name}`` interpolations) so the parser gets ready
``StringLit`` parts. Problems become diagnostics; the scanner never raises on any input.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import replace
from typing import Final, cast

from openprose.codes import diagnostic
from openprose.diagnostics import Diagnostic, Edit, Fix
from openprose.nodes import Comment, Interpolation, StringLit, new_string_lit
from openprose.source import SourceFile, Span, new_span

# Token kinds. Keywords are their own kind (the keyword text); everything else is below.
NAME: Final = "NAME"
STRING: Final = "STRING"
NUMBER: Final = "NUMBER"
DISCRETION: Final = "DISCRETION"
ARROW: Final = "->"
NEWLINE: Final = "NEWLINE"
INDENT: Final = "INDENT"
DEDENT: Final = "DEDENT"
EOF: Final = "EOF"
ERROR: Final = "ERROR"  # a run of characters already reported; the parser skips it quietly

# fmt: off
KEYWORDS: Final = frozenset((
    "use", "as", "input", "output", "agent", "block", "session", "resume", "let", "const",
    "do", "parallel", "for", "in", "repeat", "loop", "until", "while", "try", "catch",
    "finally", "throw", "choice", "option", "if", "elif", "else",
))
# fmt: on
# Keywords that also name things where a name is expected (`block review(input):`,
# `context: input`); at the start of a statement they still begin their declaration.
SOFT_KEYWORDS: Final = frozenset(("input", "output"))

# How many diagnostics one run reports before it stops adding more (binary garbage would
# otherwise produce one per line).
MAX_DIAGNOSTICS: Final = 1000

# Longer number literals are E122 (Python's int/str conversions stop at 4300 digits).
MAX_NUMBER_LENGTH: Final = 1000

IDENT_PATTERN: Final = r"[A-Za-z_][A-Za-z0-9_]*(?:-[A-Za-z0-9_]+)*"

# A run of three or more quotes ends a `"""` string with its last three: the ones before are
# text (`"""say "done""""` holds `say "done"`), as Kotlin reads its raw strings.
# String bodies are written as "unrolled loops" (a run of plain characters, then any number of
# escape-or-quote pieces each followed by such a run): the engine then keeps no backtracking
# state per character, so a multi-megabyte string costs megabytes, not gigabytes.
_MASTER = re.compile(
    r"""
    [ \f\v]*(?:\r(?=\n|\Z))?  # spaces between tokens are skipped (indentation is
    # measured from positions), and a CR ending a line; any other CR is the "cr" error
    (?:
    # The commonest tokens first: no alternative before them can match where they do (a
    # name starts with a letter or `_`, punctuation is none of `"#*-0-9`), so each token
    # is not tried against every rarer form first. Order matters only among overlapping
    # alternatives (name before uname, triple before string, punct before bad).
    (?P<name>(?>"""
    + IDENT_PATTERN
    + r""")(?![^\W\x00-\x7f]))  # not the ASCII start of a longer, non-ASCII word
  | (?P<punct>[()\[\]{},:=|.])
  | (?P<nl>\n)
  | (?P<tab>\t+)
  | (?P<comment>\#[^\r\n]*)
  | (?P<cr>\r(?!\n|\Z))
  | (?P<triple>\"\"\"[^"\\]*(?:(?:\\[\s\S]|""?(?!"))[^"\\]*)*\"\"\"+)
  | (?P<triple_open>\"\"\"[\s\S]*)
  | (?P<string>"[^"\\\r\n]*(?:\\[^\r\n][^"\\\r\n]*)*")
  | (?P<string_open>"[^"\\\r\n]*(?:\\[^\r\n][^"\\\r\n]*)*\\?)
  | (?P<disc_empty>\*\*\*\*(?!\*))
  | (?P<disc3>\*\*\*[\s\S]*?\*\*\*)
  | (?P<disc3_open>\*\*\*[\s\S]*)
  | (?P<discu>\*\*_(?![^\r\n]*?\*\*)[^\r\n]*\r?\n[\s\S]*?_\*\*)  # prose.md's `**_ ... _**`
  | (?P<disc>\*\*[^\r\n]*?\*\*)
  | (?P<disc_open>\*\*[^\r\n]*)
  | (?P<arrow>->)
  | (?P<number>-?[0-9]+(?:\.[0-9]+)?)
  | (?P<uname>[^\W\d][\w]*(?:-\w+)*)  # `résumé`: one error for the word, read as a name
  | (?P<squote>(?<![\w'])'[^'"\\\r\n]*'(?![\w']))  # 'a string in single quotes': one error, read
  | (?P<scomment>//[^\r\n]*)  # `// a comment` as C writes it: one error, read as a comment
  | (?P<bad>[^ \t\r\n\f\v"\#*A-Za-z_0-9()\[\]{},:=|.\-]+|[^ \f\v\r])
    )""",  # spaces are never "bad": trailing ones at the end of the text match nothing
    re.VERBOSE,
)

_GROUP_NAMES: Final = {index: name for name, index in _MASTER.groupindex.items()}
_NAME, _PUNCT, _NL, _TAB, _STRING, _COMMENT = (
    _MASTER.groupindex[name] for name in ("name", "punct", "nl", "tab", "string", "comment")
)
# At a line's start these leave it blank (or are reported alone): no indentation to measure.
_NOT_INDENTATION: Final = frozenset(
    _MASTER.groupindex[name] for name in ("nl", "comment", "cr", "scomment")
)

# Characters that are operators elsewhere (`depth - 1`, `a + [b]`, `j > i`, `!done`).
_OPERATOR_CHARS: Final = "+-<>!&%/^~*?@$"


def _ascii_name(word: str) -> str:
    """`résumé` -> `resume`: the word with its accents dropped (a suggestion only)."""
    folded = unicodedata.normalize("NFKD", word).encode("ascii", "ignore").decode()
    folded = re.sub(r"[^A-Za-z0-9_-]+", "_", folded).strip("-") or "name"
    return folded if not folded[0].isdigit() else "_" + folded


_OPENERS: Final = frozenset("([{")
_CLOSER_OF: Final = {"(": ")", "[": "]", "{": "}"}
_CLOSERS: Final = frozenset(")]}")

# Pieces of a string's raw body: an escape, an interpolation, plain text, or a lone brace.
_STRING_PIECE = re.compile(
    r"\\(?P<esc>[\s\S])|\{(?P<interp>" + IDENT_PATTERN + r"(?:\." + IDENT_PATTERN + r")*)\}"
    r"|(?P<text>[^\\{]+)|(?P<brace>\{)"
)
_ESCAPES: Final = {"\\": "\\", '"': '"', "n": "\n", "t": "\t", "{": "{", "}": "}"}


# A token is a plain tuple (cheap to build, cheap to index):
#   (kind, text, start, end, line, column, end_line, end_column, value)
# ``kind`` is a module constant or a keyword's own text; ``value`` is the decoded
# ``StringValue`` of a string, the number of a NUMBER, the inner text of a DISCRETION.
Token = tuple[str, str, int, int, int, int, int, int, object]


def token_span(token: Token) -> Span:
    return new_span(token[2], token[3], token[4], token[5], token[6], token[7])


def string_literal(token: Token) -> StringLit:
    """A STRING token as the string node it is."""
    decoded = cast(StringValue, token[8])
    span = new_span(token[2], token[3], token[4], token[5], token[6], token[7])
    return new_string_lit(span, decoded.value, decoded.parts, decoded.triple)


class StringValue:
    """The decoded form of a string token: ``value`` text and ``parts`` (text/Interpolation)."""

    __slots__ = ("parts", "triple", "value")

    def __init__(self, value: str, parts: tuple[str | Interpolation, ...], triple: bool) -> None:
        self.value = value
        self.parts = parts
        self.triple = triple


class ScanResult:
    __slots__ = ("comments", "diagnostics", "tokens")

    def __init__(
        self, tokens: list[Token], comments: list[Comment], diagnostics: list[Diagnostic]
    ) -> None:
        self.tokens = tokens
        self.comments = comments
        self.diagnostics = diagnostics


class _Scanner:
    def __init__(self, source: SourceFile) -> None:
        self.source = source
        self.text = source.text
        self.tokens: list[Token] = []
        self.comments: list[Comment] = []
        self.diagnostics: list[Diagnostic] = []
        self.line = 1
        self.line_start = 0
        self.lone_cr = False  # reported already

    # --- diagnostics ---------------------------------------------------------------------

    def report(
        self,
        code: str,
        message: str,
        span: Span,
        fix: Fix | None = None,
        *,
        help: str | None = None,
    ) -> None:
        diagnostics = self.diagnostics
        if len(diagnostics) < MAX_DIAGNOSTICS:
            diagnostics.append(
                diagnostic(code, message, span, self.source.path, help=help, fix=fix)
            )

    def span_at(self, start: int, end: int) -> Span:
        """Span of text that lies on the current line."""
        line_start = self.line_start
        line = self.line
        return new_span(start, end, line, start - line_start + 1, line, end - line_start + 1)

    def token(self, kind: str, start: int, end: int, value: object = None) -> Token:
        """A token on the current line (the hot loop inlines this for common kinds)."""
        line, line_start = self.line, self.line_start
        return (
            kind, self.text[start:end], start, end,
            line, start - line_start + 1, line, end - line_start + 1, value,
        )  # fmt: skip

    def wide_token(self, kind: str, start: int, end: int, value: object = None) -> Token:
        """A token that may span lines; moves the line counters past it."""
        line, line_start = self.line, self.line_start
        self.advance_lines(start, end)
        return (
            kind, self.text[start:end], start, end,
            line, start - line_start + 1, self.line, end - self.line_start + 1, value,
        )  # fmt: skip

    def advance_lines(self, start: int, end: int) -> None:
        newlines = self.text.count("\n", start, end)
        if newlines:
            self.line += newlines
            self.line_start = self.text.rfind("\n", start, end) + 1

    # --- the main loop ---------------------------------------------------------------------

    def scan(self) -> ScanResult:
        text = self.text
        tokens = self.tokens
        append = tokens.append
        keywords = KEYWORDS
        indents = [0]
        # Each open bracket: (its token's index, the indentation of the line that opened it).
        brackets: list[tuple[int, int]] = []
        at_line_start = True
        tabs = 0  # tab characters in the current line's indentation
        # Tab runs in the current line's indentation, reported only once the line turns out
        # to hold a token: a blank or comment-only line has no indentation to get wrong.
        tab_runs: list[tuple[int, int]] = []
        space_indented = False  # some line is indented with spaces alone (see E101's fix)
        # A byte-order mark is ignored (it counts as a column, not as indentation).
        pos = bom = 1 if text.startswith("\ufeff") else 0
        width = 0  # the current line's indentation
        line = 1
        line_start = 0
        # Alternatives by number (an int compares and indexes faster than a group's name).
        name_, punct_, nl_, tab_, string_, comment_ = _NAME, _PUNCT, _NL, _TAB, _STRING, _COMMENT
        for match in _MASTER.finditer(text, pos):
            kind: int = match.lastindex  # type: ignore[assignment]  # one group always matches
            start, end = match.span(kind)  # the group, i.e. without the leading spaces
            if at_line_start and kind not in _NOT_INDENTATION:
                if kind == tab_:
                    tab_runs.append((start, end))
                    tabs += end - start
                    continue
                at_line_start = False
                if tab_runs:
                    self.line, self.line_start = line, line_start
                    self.report_tabs(tab_runs)
                    tab_runs = []
                elif start > line_start + bom:
                    space_indented = True
                # A tab counts as four columns so layout still works after reporting it.
                width = start - line_start + 3 * tabs - bom
                if width != indents[-1]:
                    self.line, self.line_start = line, line_start
                    self.layout(width, indents, start, text[start] == "|" and kind == punct_)
            if kind == name_:
                value = text[start:end]
                append((
                    value if value in keywords else NAME, value, start, end,
                    line, start - line_start + 1, line, end - line_start + 1, None,
                ))  # fmt: skip
            elif kind == punct_:
                char = text[start]
                if char in _OPENERS:
                    brackets.append((len(tokens), width))
                elif char in _CLOSERS and brackets:
                    brackets.pop()
                append((
                    char, char, start, end,
                    line, start - line_start + 1, line, end - line_start + 1, None,
                ))  # fmt: skip
            elif kind == nl_:
                if not at_line_start and not brackets:
                    # zero-width at the end of the line, so "before end of line" points there
                    column = start - line_start + 1
                    append((
                        NEWLINE, "\n", start, start, line, column, line, column, None,
                    ))  # fmt: skip
                line += 1
                line_start = end
                bom = 0
                if not brackets:
                    at_line_start = True
                    tabs = 0
                    tab_runs = []
                elif self.unclosed(end, brackets):
                    # Joining the rest of the file into this line would hide later errors.
                    self.line, self.line_start = line - 1, text.rfind("\n", 0, start) + 1
                    self.report_unclosed(brackets)
                    # the parser stops quietly at the ERROR: one diagnostic for one problem
                    append(self.token(ERROR, start, start))
                    append(self.token(NEWLINE, start, start))
                    at_line_start = True
                    tabs = 0
                    tab_runs = []
            elif kind == string_:
                body = text[start + 1 : end - 1]
                if "\\" in body or "{" in body:  # escapes or interpolations to decode
                    self.line, self.line_start = line, line_start
                    append(self.string(start, end, triple=False))
                else:  # `string`'s plain case, inlined: most strings are plain text
                    append((
                        STRING, text[start:end], start, end, line, start - line_start + 1,
                        line, end - line_start + 1, StringValue(body, (body,) if body else (), False),
                    ))  # fmt: skip
            elif kind == comment_:
                self.line, self.line_start = line, line_start
                self.comments.append(
                    Comment(span=self.span_at(start, end), text=text[start + 1 : end])
                )
            else:
                self.line, self.line_start = line, line_start
                self.rare(_GROUP_NAMES[kind], start, end)
                line, line_start = self.line, self.line_start
        self.line, self.line_start = line, line_start
        if space_indented:
            self.unsafe_tab_fixes()
        end_of_text = len(text)
        if brackets:
            self.report_unclosed(brackets)
            append(self.token(ERROR, end_of_text, end_of_text))
        if tokens and tokens[-1][0] != NEWLINE:
            append(self.token(NEWLINE, end_of_text, end_of_text))
        for _ in indents[1:]:
            append(self.token(DEDENT, end_of_text, end_of_text))
        # Two EOFs: the parser may look one token past any token but the last.
        append(self.token(EOF, end_of_text, end_of_text))
        append(self.token(EOF, end_of_text, end_of_text))
        return ScanResult(tokens, self.comments, self.diagnostics)

    def report_tabs(self, runs: list[tuple[int, int]]) -> None:
        """E101 for each tab run in a line's indentation. The fix writes four spaces a tab,
        the width the layout above already gave it, so the fixed file has the structure
        this check saw."""
        for start, end in runs:
            span = self.span_at(start, end)
            self.report(
                "E101",
                "Tab character in indentation; OpenProse indents with spaces",
                span,
                Fix("indent with spaces (4 a tab)", (Edit(span, "    " * (end - start)),)),
            )

    def unsafe_tab_fixes(self) -> None:
        """Tabs in a file that also indents with spaces: whether the author's tab was four
        columns is a guess, so the tab fixes are only offered (--unsafe-fixes)."""
        self.diagnostics[:] = [
            replace(d, fix=replace(d.fix, safe=False)) if d.code == "E101" and d.fix else d
            for d in self.diagnostics
        ]

    def report_unclosed(self, brackets: list[tuple[int, int]]) -> None:
        """E109 at the innermost bracket still open; the rest are forgotten with it."""
        opener = self.tokens[brackets[-1][0]]
        closer = _CLOSER_OF[opener[0]]
        self.report(
            "E109", f"'{opener[0]}' was never closed (expected '{closer}')", token_span(opener)
        )
        brackets.clear()

    def unclosed(self, line_start: int, brackets: list[tuple[int, int]]) -> bool:
        """Inside brackets, is the line starting at ``line_start`` evidence that the innermost
        bracket was never closed? Only a line indented no deeper than the opener's line can
        be; it is when it starts a statement (a statement keyword, or ``name =``), or when the
        line before ended a complete element (no trailing ``,``, opener or operator) and this
        one does not go on with a closer, ``,`` or an operator."""
        text = self.text
        line = _NEXT_LINE.match(text, line_start)
        assert line is not None
        first = line.group(2)
        if not first or len(line.group(1)) > brackets[-1][1]:
            return False  # blank or comment-only, or indented inside the bracket
        if _STATEMENT_START.match(text, line_start):
            return True
        return self.tokens[-1][0] not in _EXPECTS_MORE and first not in _CONTINUES

    def layout(self, width: int, indents: list[int], start: int, is_pipe: bool) -> None:
        """Emit INDENT/DEDENT tokens for a line whose first token starts at ``start``."""
        tokens = self.tokens
        top = indents[-1]
        if width > top:
            indents.append(width)
            tokens.append(self.token(INDENT, self.line_start, start))
            return
        while indents[-1] > width:
            indents.pop()
            tokens.append(self.token(DEDENT, start, start))
        if indents[-1] < width:
            if is_pipe:
                # A `| op:` continuation line may sit between two levels (its stage body is
                # indented deeper than the `|`); it opens a level of its own.
                indents.append(width)
                tokens.append(self.token(INDENT, self.line_start, start))
            else:
                self.report(
                    "E103",
                    "Unindent does not match any outer indentation level",
                    self.span_at(self.line_start, start),
                )
                # The line's level is unknown: the parser skips it quietly rather than
                # reporting its tokens again as unexpected where they landed.
                tokens.append(self.token(ERROR, start, start))

    def rare(self, kind: str, start: int, end: int) -> None:
        """Multi-line tokens and error alternatives (kept off the hot path)."""
        text = self.text
        append = self.tokens.append
        if kind == "squote":
            # the grammar's strings are double-quoted; the text holds no `"` or backslash,
            # so swapping the quotes keeps it exactly
            self.report(
                "E102",
                "Strings are written in double quotes",
                self.span_at(start, end),
                Fix(
                    "use double quotes",
                    (
                        Edit(self.span_at(start, start + 1), '"'),
                        Edit(self.span_at(end - 1, end), '"'),
                    ),
                ),
                help=f'write "{text[start + 1 : end - 1]}"'
                if end - start <= 40
                else "write the string in double quotes",
            )
            append(self.string(start, end, triple=False))
            return
        if kind == "scomment":
            self.report(
                "E102",
                "Comments start with `#`",
                self.span_at(start, start + 2),
                Fix("write `#`", (Edit(self.span_at(start, start + 2), "#"),)),
                help="write `#` instead of `//`",
            )
            self.comments.append(Comment(span=self.span_at(start, end), text=text[start + 2 : end]))
            return
        if kind == "number":
            raw = text[start:end]
            if end - start > MAX_NUMBER_LENGTH:
                # int() and str() refuse more than 4300 digits; no count needs a thousand
                self.report(
                    "E122",
                    f"Number literal too long (more than {MAX_NUMBER_LENGTH} characters)",
                    self.span_at(start, end),
                )
                append(self.token(ERROR, start, end))
                return
            append(self.token(NUMBER, start, end, float(raw) if "." in raw else int(raw)))
        elif kind == "arrow":
            append(self.token(ARROW, start, end))
        elif kind == "disc":
            append(self.token(DISCRETION, start, end, text[start + 2 : end - 2]))
        elif kind == "triple":
            append(self.string(start, end, triple=True))
        elif kind == "disc_empty":  # `****`: an empty condition, which the checker reports
            append(self.token(DISCRETION, start, end, ""))
        elif kind == "disc3" or kind == "discu":  # `***...***`, or `**_..._**` as prose.md
            # writes the multi-line form (Markdown's spelling of bold italic)
            body = text[start + 3 : end - 3].replace("\r\n", "\n")
            append(self.wide_token(DISCRETION, start, end, body))
        elif kind == "tab":
            pass  # between tokens a tab is plain whitespace; only indentation must be spaces
        elif kind == "triple_open":
            self.report(
                "E001",
                'Unterminated multi-line string: no closing """',
                self.span_at(start, start + 3),
            )
            append(self.wide_token(ERROR, start, end))
        elif kind == "string_open":
            # at the opening quote, as the reference's own Error Message Format example shows
            self.report("E001", "Unterminated string literal", self.span_at(start, start + 1))
            append(self.token(ERROR, start, end))
        elif kind == "disc3_open":
            self.report(
                "E108",
                "Unterminated multi-line discretion: no closing ***",
                self.span_at(start, start + 3),
            )
            append(self.wide_token(ERROR, start, end))
        elif kind == "disc_open":
            self.report(
                "E107",
                "Unterminated discretion: no closing ** on this line",
                self.span_at(start, start + 2),
            )
            append(self.token(ERROR, start, end))
        elif kind == "cr":  # a CR not followed by LF (it is not layout)
            if not self.lone_cr:
                self.lone_cr = True  # once: an old Mac file has one per line, all on line 1
                self.report(
                    "E102",
                    "Carriage return without a line feed: lines must end with LF or CRLF",
                    self.span_at(start, end),
                )
            append(self.token(ERROR, start, end))
        elif kind == "uname":
            word = text[start:end]
            self.report(
                "E102",
                f"Name `{word}` has characters outside ASCII: names are letters A-Z a-z, "
                "digits, `_` and `-`",
                self.span_at(start, end),
                help=f"rename it (e.g. `{_ascii_name(word)}`) here and where it is used",
            )
            append(self.token(NAME, start, end))
        else:  # "bad"
            model = _MODEL_LINE.match(text, self.line_start)
            if model is not None and model.start(1) <= start and end <= model.end(1):
                # `model: gpt-3.5-turbo`: a provider model id; the parser reads the value's
                # tokens as one name so the checker's E008 can say how to map an alias to it
                append(self.token(NAME, start, end))
                return
            fence = _FENCE_LINE.match(text, self.line_start)
            if fence is not None and fence.start(1) == start:
                # a program pasted with the Markdown fence around it: the fence is framing
                line_end = fence.end()
                self.report(
                    "E102",
                    "A Markdown code fence is not part of a program",
                    self.span_at(start, fence.end(1)),
                    Fix(
                        "remove the fence line",
                        (Edit(self.span_at(self.line_start, line_end), ""),),
                    ),
                    help="remove the fence lines: a .prose file holds the program itself",
                )
                append(self.token(ERROR, start, end))
                return
            shown = text[start:end]
            if len(shown) > 20:
                shown = shown[:20] + "..."
            if not shown.strip(_OPERATOR_CHARS):
                self.report(
                    "E102",
                    f"Unexpected character {shown!r}: the grammar has no operators "
                    "(arithmetic, comparison or logic)",
                    self.span_at(start, end),
                    help="let a session compute it, or a **condition** judge it",
                )
            else:
                self.report("E102", f"Unexpected character {shown!r}", self.span_at(start, end))
            append(self.token(ERROR, start, end))

    # --- strings ---------------------------------------------------------------------------

    def string(self, start: int, end: int, *, triple: bool) -> Token:
        text = self.text
        quote = 3 if triple else 1
        body_start = start + quote
        body_end = end - quote
        if triple:
            # Spaces or tabs left after the opening quotes are not text: the line still ends
            # there (a trailing-whitespace editor setting must not make a file invalid).
            blank = body_start
            while blank < body_end and text[blank] in " \t":
                blank += 1
            if text.startswith("\r\n", blank):
                body_start = blank + 2
            elif text.startswith("\n", blank):
                body_start = blank + 1
            else:
                # The opening line break is syntax, not text: inserting it keeps the value.
                after = self.span_at(start + 3, start + 3)
                self.report(
                    "E106",
                    'Opening """ must be followed by a newline',
                    self.span_at(start, start + 3),
                    Fix('start the text on the line after """', (Edit(after, "\n"),)),
                )
        raw = text[body_start:body_end]
        if "\\" not in raw and "{" not in raw:
            value = raw.replace("\r\n", "\n") if triple else raw
            decoded = StringValue(value, (value,) if value else (), triple)
        else:
            decoded = self.decode(raw, body_start, triple)
        if triple:
            return self.wide_token(STRING, start, end, decoded)
        return self.token(STRING, start, end, decoded)

    def _path_fix(self, raw: str, index: int, offset: int) -> Fix | None:
        """An unknown escape inside a Windows path (`C:\\Users\\team\\notes.md`): every
        backslash of the path is a separator, including those that happen to spell a known
        escape (`\\t`, `\\n` would become a tab and a line break), so the fix doubles them
        all — one fix, the same for each unknown escape of the path. Unsafe, as any change of
        the text the model reads."""
        found = _path_backslashes(raw, index)
        if not found or len(found) < 2:
            return None
        edits = tuple(Edit(self.source.span(offset + i, offset + i + 1), "\\\\") for i in found)
        return Fix("double every backslash of the path", edits, safe=False)

    def decode(self, raw: str, offset: int, triple: bool) -> StringValue:
        """Split a string body into text and interpolations, decoding escapes."""
        parts: list[str | Interpolation] = []
        chunk: list[str] = []
        for piece in _STRING_PIECE.finditer(raw):
            group = piece.lastgroup
            if group == "text":
                chunk.append(piece.group())
            elif group == "esc":
                char = piece.group("esc")
                decoded = _ESCAPES.get(char)
                if decoded is None:
                    at = offset + piece.start()
                    if char in "\r\n":
                        shown = "(a backslash ending a line)"
                    else:
                        shown = "\\" + char if char.isprintable() else repr("\\" + char)
                    span = self.source.span(at, at + 2)
                    self.report(
                        "E002",
                        f'Unknown escape sequence {shown} (use \\\\ \\" \\n \\t or \\{{)',
                        span,
                        self._path_fix(raw, piece.start(), offset) or _escape_fix(char, span),
                    )
                    decoded = char
                chunk.append(decoded)
            elif group == "interp":
                if chunk:
                    parts.append("".join(chunk))
                    chunk = []
                names = piece.group("interp").split(".")
                at = offset + piece.start()
                span = self.source.span(at, at + len(piece.group()))
                parts.append(Interpolation(span=span, name=names[0], path=tuple(names[1:])))
            else:  # a brace that opens no interpolation (`{}`, `{ x }`, JSON) is literal text
                chunk.append("{")
        if chunk:
            parts.append("".join(chunk))
        if triple:
            parts = [p.replace("\r\n", "\n") if isinstance(p, str) else p for p in parts]
        value = "".join(p if isinstance(p, str) else _placeholder(p) for p in parts)
        return StringValue(value, tuple(parts), triple)


_PATH_WORD = re.compile(r'[^\s"\'`()<>]+')
# A Windows path: a drive (`C:\`), or a backslash before a letter at least twice in one word.
_WINDOWS_PATH = re.compile(r"(?:[A-Za-z]:\\|(?:[^\\]*\\[A-Za-z0-9_.$%~-]){2})")


def _path_backslashes(raw: str, index: int) -> list[int] | None:
    """The single backslashes of the Windows path around ``raw[index]`` (`C:\\Users\\team`),
    or None when the word there is no path."""
    for word in _PATH_WORD.finditer(raw):
        if word.start() <= index < word.end():
            if not _WINDOWS_PATH.match(word.group()):
                return None
            found, at = [], word.start()
            while at < word.end():
                if raw[at] == "\\":
                    if raw.startswith("\\\\", at) or raw.startswith('\\"', at):
                        at += 2
                        continue
                    found.append(at)
                at += 1
            return found
    return None


def _escape_fix(char: str, span: Span) -> Fix | None:
    """``\\'`` means the apostrophe (safe: drop the backslash); any other unknown escape
    most likely means the backslash itself, as in a regex (``\\d`` → ``\\\\d``), which
    changes the text the model reads, so that fix is offered as unsafe."""
    if char == "'":
        return Fix("drop the backslash: ' needs no escape", (Edit(span, "'"),))
    if (char.isprintable() and not char.isspace()) or char in "\r\n":
        # a backslash ending a line is a shell or Markdown line continuation in the text
        return Fix("double the backslash to keep it", (Edit(span, "\\\\" + char),), safe=False)
    return None


def _placeholder(interpolation: Interpolation) -> str:
    return "{" + ".".join((interpolation.name, *interpolation.path)) + "}"


# A line holding only a Markdown code fence (```` ``` ````, ```` ```prose ````, `~~~`), with its
# line break.
_FENCE_LINE = re.compile(r"[ \t]*(```+|~~~+)[ \t]*[\w+.-]*[ \t]*(?:\r?\n|\Z)")
_MODEL_LINE = re.compile(r"[ \t]*model[ \t]*:[ \t]*([^\s#\"]+)[ \t]*(?:#[^\n]*)?(?:\r?\n|\Z)")
_NEXT_LINE = re.compile(r"([ \t]*)([^\r\n#]?)")
# Inside brackets: a line ending with one of these expects more; a line starting with one of
# these goes on with the previous one.
_EXPECTS_MORE: Final = frozenset(("(", "[", "{", ",", ":", "=", "|", "->", "."))
_CONTINUES: Final = frozenset(")]},|.-")
_STATEMENT_START = re.compile(
    r"([ \t]*)(?:(?:use|input|output|agent|block|session|resume|let|const|do|parallel|for"
    r"|repeat|loop|try|catch|finally|throw|choice|option|if|elif|else)(?![\w-])"
    r"|" + IDENT_PATTERN + r"[ ]*=)"
)


def scan(source: SourceFile) -> ScanResult:
    """Tokenize ``source``; never raises."""
    return _Scanner(source).scan()

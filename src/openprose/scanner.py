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
from typing import Final

from openprose.diagnostics import Diagnostic, Severity
from openprose.nodes import Comment, Interpolation
from openprose.source import SourceFile, Span

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

KEYWORDS: Final = frozenset(
    "use as input output agent block session resume let const do parallel for in repeat "
    "loop until while try catch finally throw choice option if elif else".split()
)

# How many diagnostics one run reports before it stops adding more (binary garbage would
# otherwise produce one per line).
MAX_DIAGNOSTICS: Final = 1000

IDENT_PATTERN: Final = r"[A-Za-z_][A-Za-z0-9_]*(?:-[A-Za-z0-9_]+)*"

_MASTER = re.compile(
    r"""
    (?P<nl>\r?\n)
  | (?P<ws>[ \f\v\r]+)
  | (?P<tab>\t+)
  | (?P<comment>\#[^\r\n]*)
  | (?P<triple>\"\"\"(?:[^"\\]|\\[\s\S]|"(?!""))*\"\"\")
  | (?P<triple_open>\"\"\"[\s\S]*)
  | (?P<string>"(?:[^"\\\r\n]|\\[^\r\n])*")
  | (?P<string_open>"(?:[^"\\\r\n]|\\[^\r\n])*\\?)
  | (?P<disc3>\*\*\*[\s\S]*?\*\*\*)
  | (?P<disc3_open>\*\*\*[\s\S]*)
  | (?P<disc>\*\*[^\r\n]*?\*\*)
  | (?P<disc_open>\*\*[^\r\n]*)
  | (?P<arrow>->)
  | (?P<number>-?[0-9]+(?:\.[0-9]+)?)
  | (?P<name>"""
    + IDENT_PATTERN
    + r""")
  | (?P<punct>[()\[\]{},:=|.])
  | (?P<bad>[^ \t\r\n\f\v"\#*A-Za-z_0-9()\[\]{},:=|.\-]+|[\s\S])
    """,
    re.VERBOSE,
)

_OPENERS: Final = frozenset("([{")
_CLOSERS: Final = frozenset(")]}")

# Pieces of a string's raw body: an escape, an interpolation, plain text, or a lone brace.
_STRING_PIECE = re.compile(
    r"\\(?P<esc>[\s\S])|\{(?P<interp>" + IDENT_PATTERN + r"(?:\." + IDENT_PATTERN + r")*)\}"
    r"|(?P<text>[^\\{]+)|(?P<brace>\{)"
)
_ESCAPES: Final = {"\\": "\\", '"': '"', "n": "\n", "t": "\t", "{": "{", "}": "}"}


class Token:
    """One token: ``kind`` (see the module constants or a keyword), the exact source ``text``,
    its ``span``, and a decoded ``value`` for strings, numbers and discretion text."""

    __slots__ = ("kind", "text", "span", "value")

    def __init__(self, kind: str, text: str, span: Span, value: object = None) -> None:
        self.kind = kind
        self.text = text
        self.span = span
        self.value = value

    def __repr__(self) -> str:
        return f"Token({self.kind!r}, {self.text!r}, {self.span.line}:{self.span.column})"


class StringValue:
    """The decoded form of a string token: ``value`` text and ``parts`` (text/Interpolation)."""

    __slots__ = ("value", "parts", "triple")

    def __init__(self, value: str, parts: tuple[str | Interpolation, ...], triple: bool) -> None:
        self.value = value
        self.parts = parts
        self.triple = triple


class ScanResult:
    __slots__ = ("tokens", "comments", "diagnostics")

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

    # --- diagnostics ---------------------------------------------------------------------

    def report(self, code: str, message: str, span: Span) -> None:
        diagnostics = self.diagnostics
        if len(diagnostics) < MAX_DIAGNOSTICS:
            diagnostics.append(
                Diagnostic(code, Severity.ERROR, message, span, self.source.path)
            )

    def span_at(self, start: int, end: int) -> Span:
        """Span of a token that lies on the current line."""
        line_start = self.line_start
        line = self.line
        return Span(start, end, line, start - line_start + 1, line, end - line_start + 1)

    # --- the main loop ---------------------------------------------------------------------

    def scan(self) -> ScanResult:
        text = self.text
        tokens = self.tokens
        append = tokens.append
        indents = [0]
        # Each open bracket: (closing char, indentation of the line that opened it).
        brackets: list[tuple[str, int]] = []
        at_line_start = True
        line_indent = 0
        pos = 0
        if text.startswith("\ufeff"):
            pos = 1  # a byte-order mark is tolerated and ignored
        span_at = self.span_at
        for match in _MASTER.finditer(text, pos):
            kind = match.lastgroup
            start, end = match.span()
            if kind == "ws":
                if at_line_start:
                    line_indent += end - start
                continue
            if kind == "nl":
                if not at_line_start and not brackets:
                    append(Token(NEWLINE, "\n", span_at(start, end)))
                self.line += 1
                self.line_start = end
                if not brackets:
                    at_line_start = True
                    line_indent = 0
                else:
                    at_line_start = False
                    # Peek at the next line: a closing bracket may come at any indentation,
                    # anything else at or left of the opener's indentation means it was
                    # never closed, and joining the rest of the file would hide later errors.
                    rest = _NEXT_LINE.match(text, end)
                    assert rest is not None
                    nxt = rest.group(2)
                    if nxt and nxt[0] not in _CLOSERS and len(rest.group(1)) <= brackets[-1][1]:
                        closer, _ = brackets[-1]
                        self.report(
                            "E109",
                            f"Unclosed bracket: expected '{closer}' before the end of the line",
                            span_at(start, start),
                        )
                        brackets.clear()
                        append(Token(NEWLINE, "\n", self._span_prev_line(start, end)))
                        at_line_start = True
                        line_indent = 0
                continue
            if kind == "comment":
                self.comments.append(Comment(span=span_at(start, end), text=text[start + 1 : end]))
                continue
            if kind == "tab":
                if at_line_start:
                    self.report(
                        "E101",
                        "Tab character in indentation; OpenProse indents with spaces",
                        span_at(start, end),
                    )
                    # Count a tab as advancing to the next multiple of 4 so layout still works.
                    line_indent = (line_indent // 4 + end - start) * 4
                else:
                    self.report(
                        "E101", "Tab character; OpenProse uses spaces", span_at(start, end)
                    )
                continue
            # A significant token: settle the layout first.
            if at_line_start:
                at_line_start = False
                is_pipe = kind == "punct" and text[start] == "|"
                self._layout(line_indent, indents, start, is_pipe)
            if kind == "name":
                value = text[start:end]
                append(Token(value if value in KEYWORDS else NAME, value, span_at(start, end)))
            elif kind == "punct":
                char = text[start]
                if char in _OPENERS:
                    brackets.append(({"(": ")", "[": "]", "{": "}"}[char], line_indent))
                elif char in _CLOSERS and brackets:
                    brackets.pop()
                append(Token(char, char, span_at(start, end)))
            elif kind == "string":
                append(self._string(start, end, triple=False))
            elif kind == "number":
                raw = text[start:end]
                number: int | float = float(raw) if "." in raw else int(raw)
                append(Token(NUMBER, raw, span_at(start, end), number))
            elif kind == "arrow":
                append(Token(ARROW, "->", span_at(start, end)))
            elif kind == "disc":
                append(Token(DISCRETION, text[start:end], span_at(start, end), text[start + 2 : end - 2]))
            else:
                self._rare(kind, start, end)
        if not at_line_start and not brackets:
            append(Token(NEWLINE, "", self.span_at(len(text), len(text))))
        if brackets:
            closer, _ = brackets[-1]
            self.report(
                "E109",
                f"Unclosed bracket: expected '{closer}' before the end of the file",
                self.span_at(len(text), len(text)),
            )
            append(Token(NEWLINE, "", self.span_at(len(text), len(text))))
        eof = self.span_at(len(text), len(text))
        for _ in indents[1:]:
            append(Token(DEDENT, "", eof))
        append(Token(EOF, "", eof))
        return ScanResult(tokens, self.comments, self.diagnostics)

    def _span_prev_line(self, start: int, end: int) -> Span:
        """Span of a line break just consumed (the line counters already moved past it)."""
        return self.source.span(start, end)

    def _layout(self, width: int, indents: list[int], start: int, is_pipe: bool) -> None:
        """Emit INDENT/DEDENT tokens for a line whose first token starts at ``start``."""
        tokens = self.tokens
        top = indents[-1]
        if width == top:
            return
        if width > top:
            indents.append(width)
            tokens.append(Token(INDENT, "", self.span_at(start - width + top, start)))
            return
        here = self.span_at(start, start)
        while indents[-1] > width:
            indents.pop()
            tokens.append(Token(DEDENT, "", here))
        if indents[-1] < width:
            if is_pipe:
                # A `| op:` continuation line may sit between two levels (its stage body is
                # indented deeper than the `|`); it opens a level of its own.
                indents.append(width)
                tokens.append(Token(INDENT, "", here))
            else:
                self.report(
                    "E103",
                    "Unindent does not match any outer indentation level",
                    self.span_at(start - width, start),
                )

    def _rare(self, kind: str | None, start: int, end: int) -> None:
        """Multi-line tokens and error alternatives (kept off the hot path)."""
        text = self.text
        append = self.tokens.append
        if kind == "triple":
            token = self._string(start, end, triple=True)
            append(token)
            self._advance_lines(start, end)
        elif kind == "disc3":
            span = self.source.span(start, end)
            body = text[start + 3 : end - 3].replace("\r\n", "\n")
            append(Token(DISCRETION, text[start:end], span, body))
            self._advance_lines(start, end)
        elif kind == "triple_open":
            self.report(
                "E001",
                'Unterminated multi-line string: no closing """',
                self.span_at(start, start + 3),
            )
            append(Token(ERROR, text[start:end], self.source.span(start, end)))
            self._advance_lines(start, end)
        elif kind == "string_open":
            self.report("E001", "Unterminated string literal", self.span_at(start, end))
            append(Token(ERROR, text[start:end], self.span_at(start, end)))
        elif kind == "disc3_open":
            self.report(
                "E108",
                "Unterminated multi-line discretion: no closing ***",
                self.span_at(start, start + 3),
            )
            append(Token(ERROR, text[start:end], self.source.span(start, end)))
            self._advance_lines(start, end)
        elif kind == "disc_open":
            self.report(
                "E107",
                "Unterminated discretion: no closing ** on this line",
                self.span_at(start, start + 2),
            )
            append(Token(ERROR, text[start:end], self.span_at(start, end)))
        else:  # "bad"
            shown = text[start:end]
            if len(shown) > 20:
                shown = shown[:20] + "..."
            self.report("E102", f"Unexpected character {shown!r}", self.span_at(start, end))
            append(Token(ERROR, text[start:end], self.span_at(start, end)))

    def _advance_lines(self, start: int, end: int) -> None:
        newlines = self.text.count("\n", start, end)
        if newlines:
            self.line += newlines
            self.line_start = self.text.rfind("\n", start, end) + 1

    # --- strings ---------------------------------------------------------------------------

    def _string(self, start: int, end: int, *, triple: bool) -> Token:
        text = self.text
        quote = 3 if triple else 1
        body_start = start + quote
        body_end = end - quote
        if triple:
            span = self.source.span(start, end)
            if text.startswith("\r\n", body_start):
                body_start += 2
            elif text.startswith("\n", body_start):
                body_start += 1
            else:
                self.report(
                    "E106",
                    'Opening """ must be followed by a newline',
                    self.span_at(start, start + 3),
                )
        else:
            span = self.span_at(start, end)
        raw = text[body_start:body_end]
        if "\\" not in raw and "{" not in raw:
            value = raw.replace("\r\n", "\n") if triple else raw
            return Token(STRING, text[start:end], span, StringValue(value, (value,) if value else (), triple))
        return Token(STRING, text[start:end], span, self._decode(raw, body_start, triple))

    def _decode(self, raw: str, offset: int, triple: bool) -> StringValue:
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
                    shown = "\\" + char if char.isprintable() else repr("\\" + char)
                    self.report(
                        "E002",
                        f"Unknown escape sequence {shown} (use \\\\ \\\" \\n \\t or \\{{)",
                        self.source.span(at, at + 2),
                    )
                    decoded = char
                chunk.append(decoded)
            elif group == "interp":
                if chunk:
                    parts.append("".join(chunk))
                    chunk = []
                names = piece.group("interp").split(".")
                at = offset + piece.start()
                parts.append(
                    Interpolation(
                        span=self.source.span(at, at + len(piece.group())),
                        name=names[0],
                        path=tuple(names[1:]),
                    )
                )
            else:  # a brace that opens no interpolation (`{}`, `{ x }`, JSON) is literal text
                chunk.append("{")
        if chunk:
            parts.append("".join(chunk))
        if triple:
            parts = [p.replace("\r\n", "\n") if isinstance(p, str) else p for p in parts]
        value = "".join(p if isinstance(p, str) else "{" + ".".join((p.name, *p.path)) + "}" for p in parts)
        return StringValue(value, tuple(parts), triple)


_NEXT_LINE = re.compile(r"([ \t]*)([^\r\n]?)")


def scan(source: SourceFile) -> ScanResult:
    """Tokenize ``source``; never raises."""
    return _Scanner(source).scan()

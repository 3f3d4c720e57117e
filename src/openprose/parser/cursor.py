"""The parser's cursor: the token list and the position in it, reporting, and recovery
from a broken statement. The parts of the grammar (statements, expressions, sessions and
their properties, constructs with a body) build on it; `openprose.parser` joins them."""

from __future__ import annotations

from typing import NoReturn, cast

from openprose import habits
from openprose import nodes as n
from openprose.codes import diagnostic
from openprose.depth import MAX_NESTING
from openprose.diagnostics import Diagnostic, Edit, Fix
from openprose.scanner import (
    ARROW,
    DEDENT,
    DISCRETION,
    EOF,
    ERROR,
    INDENT,
    KEYWORDS,
    MAX_DIAGNOSTICS,
    NAME,
    NEWLINE,
    NUMBER,
    SOFT_KEYWORDS,
    STRING,
    Token,
    scan,
    string_literal,
    token_span,
)
from openprose.source import SourceFile, Span, new_span
from openprose.suggest import closest, did_you_mean
from openprose.vocabulary import AGENT_PROPERTIES

# `ask "question"`: a keyword only before a string, where a name never stands (so a
# program that names a variable `ask` reads as before).
ASK = "ask"

# Statements whose indented block, if any, holds `name: value` properties.
_PROPERTY_HEADS = frozenset(("agent", "session", "resume"))

# Blocks and brackets may nest MAX_NESTING deep; deeper input gets E115 instead of a
# RecursionError. Python frames per nesting level are ~10: the parser runs inside
# openprose.depth.deep_recursion (the one limit every stage is built for).

_LAYOUT = frozenset((NEWLINE, INDENT, DEDENT, EOF))
_LINE_END = frozenset((NEWLINE, EOF))
_NAME_KINDS = frozenset((NAME, *SOFT_KEYWORDS))
# What a misspelled statement keyword is compared with ("did you mean").
_STATEMENT_WORDS = tuple(sorted(KEYWORDS - {"as", "in", "until", "while"}))
# After a name at the start of a statement, these make it an expression (assignment, call,
# property access, pipeline, sequence) rather than a misspelled keyword.
_NAME_GOES_ON = frozenset(("=", "(", ".", "|", ARROW))
# What may follow a keyword that starts an expression but never a name there; and those
# keywords (a name followed by one of these is a misspelled keyword).
# (`:` only on the right of `=`: `for x in loops:` ends its header with one.)
_AFTER_KEYWORD = frozenset((STRING, DISCRETION))
_EXPRESSION_WORDS = ("do", "loop", "parallel", "repeat", "resume", "session", "choice", "if", "try")
# Statements (not expressions) whose result a parallel branch may name: `name = try:`.
_BRANCH_STATEMENTS = frozenset(("try", "if", "choice"))
_PIPE_OPS = frozenset(("map", "filter", "pmap", "reduce"))
# Tokens that end a value wherever one appears (``|`` and NEWLINE are absent: they may
# continue it as a pipeline).
_VALUE_END = frozenset((",", "]", ")", "}"))
# Expressions that do something and so may stand alone as a statement.
_STATEMENT_EXPRS = (
    n.Session,
    n.Ask,
    n.ProgramCall,
    n.DoBlock,
    n.DoCall,
    n.Arrow,
    n.Parallel,
    n.Repeat,
    n.ForEach,
    n.Loop,
    n.Pipeline,
    n.Invalid,
)


class _ParseError(Exception):
    """Unwinds to the nearest statement boundary; the diagnostic is already recorded.
    ``properties``: the block hanging off the broken line holds properties."""

    def __init__(self, *, properties: bool = False) -> None:
        super().__init__()
        self.properties = properties


def _is_word(token: Token) -> bool:
    """A name or a keyword: property, argument and modifier names may be either."""
    return token[0] == NAME or token[0] in KEYWORDS


def _is_word_kind(kind: str) -> bool:
    return kind == NAME or kind in KEYWORDS


# Tokens that start an argument: one right after another means a missing comma.
_ARGUMENT_STARTS = frozenset((STRING, NUMBER, NAME, "[", "{"))

_PATTERN_RULES = frozenset(("read", "write", "execute"))

_ORPHANS = {
    "elif": ("E110", "Elif must follow if"),
    "else": ("E111", "Else must follow if or elif"),
    "catch": ("E113", "'catch' must follow a try block"),
    "finally": ("E113", "'finally' must follow a try block"),
    "option": ("E114", "'option' must be inside a choice block"),
}


class Cursor:
    """The state of one parse; each part of the grammar is a subclass, `_Parser` all of them."""

    def __init__(self, source: SourceFile) -> None:
        scanned = scan(source)
        self.source = source
        self.tokens = scanned.tokens
        self.kinds = [t[0] for t in scanned.tokens]
        self.comments = scanned.comments
        self.diagnostics = [habits.operator_rewrite(d, source) for d in scanned.diagnostics]
        self.pos = 0
        self.depth = 0
        # The statement before the one being parsed in the same body (for `return x`'s fix).
        self.previous: n.Stmt | None = None
        # Nesting depths of the statements directly inside `parallel:` bodies being parsed.
        self.parallel_levels: list[int] = []

    # --- token helpers --------------------------------------------------------------------

    def advance(self) -> Token:
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def peek_kind(self, ahead: int = 1) -> str:
        index = self.pos + ahead
        kinds = self.kinds
        return kinds[index] if index < len(kinds) else EOF

    def expect(self, kind: str, what: str) -> Token:
        if self.kinds[self.pos] == kind:
            token = self.tokens[self.pos]
            self.pos += 1
            return token
        self.fail(f"expected {what}")

    def expect_name(self, what: str) -> n.Name:
        token = self.tokens[self.pos]
        if token[0] not in _NAME_KINDS:
            self.fail(f"expected {what}")
        self.pos += 1
        return n.new_name(token_span(token), token[1])

    def expect_word(self, what: str) -> n.Name:
        token = self.tokens[self.pos]
        if not _is_word(token):
            self.fail(f"expected {what}")
        self.pos += 1
        return n.new_name(token_span(token), token[1])

    def declared_name(self, what: str, *followers: str) -> n.Name:
        """The name after ``input``/``output``/``block``. When it is missing but the line
        goes on as it should (``input : "x"``) the name is empty (zero width, where it should
        be) and the checker reports the reference's error (E020, E023, E151)."""
        token = self.tokens[self.pos]
        if token[0] in followers:
            span = new_span(token[2], token[2], token[4], token[5], token[4], token[5])
            return n.new_name(span, "")
        return self.expect_name(what)

    def take(self) -> int:
        """Consume the current token and return its index (a node's start)."""
        self.pos += 1
        return self.pos - 1

    def last_significant(self) -> Token:
        kinds = self.kinds
        index = self.pos - 1
        while index > 0 and kinds[index] in _LAYOUT:
            index -= 1
        return self.tokens[index]

    def span_from(self, start: int) -> Span:
        """From the token at index ``start`` through the last significant token consumed."""
        kinds = self.kinds
        index = self.pos - 1
        while kinds[index] in _LAYOUT and index > 0:
            index -= 1
        tokens = self.tokens
        first = tokens[start]
        last = tokens[index]
        return new_span(first[2], last[3], first[4], first[5], last[6], last[7])

    def span_after(self, start: Span) -> Span:
        """From the start of ``start`` through the last significant token consumed."""
        last = self.last_significant()
        return new_span(start.start, last[3], start.line, start.column, last[6], last[7])

    def starts_property(self, ahead: int) -> bool:
        """Does ``name:`` start ``ahead`` tokens from here?"""
        return self.peek_kind(ahead + 1) == ":" and _is_word_kind(self.peek_kind(ahead))

    def at_ask(self) -> bool:
        """Does `ask "question"` start here?"""
        return self.tokens[self.pos][1] == ASK and self.peek_kind() == STRING

    def ended_with_block(self) -> bool:
        return self.kinds[self.pos - 1] == DEDENT

    # --- diagnostics ----------------------------------------------------------------------

    def report(
        self,
        code: str,
        message: str,
        span: Span,
        *,
        help: str | None = None,
        fix: Fix | None = None,
        rule: str | None = None,
    ) -> None:
        if len(self.diagnostics) < MAX_DIAGNOSTICS:
            self.diagnostics.append(
                diagnostic(code, message, span, self.source.path, help=help, fix=fix, rule=rule)
            )

    def note(self, found: Diagnostic) -> None:
        """Keep a diagnostic built elsewhere (a habit's), within the same limit."""
        if len(self.diagnostics) < MAX_DIAGNOSTICS:
            self.diagnostics.append(found)

    def fail(self, expected: str) -> NoReturn:
        """Report the current token as unexpected and unwind to the statement boundary."""
        token = self.tokens[self.pos]
        kind = token[0]
        if kind == ERROR:
            raise _ParseError  # the scanner already reported this text
        if kind == NEWLINE or kind == EOF:
            where = "end of line" if kind == NEWLINE else "end of file"
            self.report(
                "E005",
                f"Invalid syntax: {expected} before {where}",
                token_span(token),
                fix=self._colon_fix(expected),
            )
        elif kind == INDENT:
            self.report("E104", f"Unexpected indent: {expected}", token_span(token))
        elif kind == DEDENT:
            self.report(
                "E005", f"Invalid syntax: {expected} before the block ends", token_span(token)
            )
        else:
            shown = token[1] if len(token[1]) <= 30 else token[1][:30] + "..."
            hint = did_you_mean(token[1], KEYWORDS, cutoff=0.8) if kind == NAME else ""
            self.report("E004", f"Unexpected token {shown!r}: {expected}{hint}", token_span(token))
        raise _ParseError

    def _colon_fix(self, expected: str) -> Fix | None:
        """A block header missing its colon (`agent critic`, `parallel`): insert it at the end
        of the line — safe when an indented body follows (that body is what the colon opens)."""
        if not expected.startswith("expected ':'") or self.pos == 0:
            return None
        last = token_span(self.tokens[self.pos - 1])
        at = Span(
            last.end, last.end, last.end_line, last.end_column, last.end_line, last.end_column
        )
        body_follows = (
            self.kinds[self.pos + 1] == INDENT if self.pos + 1 < len(self.kinds) else False
        )
        return Fix("insert the missing ':'", (Edit(at, ":"),), safe=body_follows)

    # --- recovery -------------------------------------------------------------------------

    def skip_line(self, properties: bool = False) -> None:
        """Skip to the end of the current logical line, then past any block hanging off it
        (parsed for its own errors — as property lines when ``properties``, else as
        statements — then dropped). Stops before a DEDENT that closes the enclosing block."""
        kinds = self.kinds
        while True:
            kind = kinds[self.pos]
            if kind == EOF or kind == DEDENT:
                return
            if kind == INDENT:
                break
            self.pos += 1
            if kind == NEWLINE:
                if kinds[self.pos] != INDENT:
                    return
                break
        self.pos += 1  # the INDENT
        if properties:
            self.property_lines()
        elif kinds[self.pos + 1] == ":" and self.tokens[self.pos][1] in AGENT_PROPERTIES:
            # `prompt:`, `context:` … under a line that failed (an unknown statement such as
            # a fork's `gate name:`): read as properties and dropped quietly — the failed
            # line is the one problem, its lines are not unknown statements
            reported = len(self.diagnostics)
            self.property_lines()
            del self.diagnostics[reported:]
        else:
            self.indented_block()

    def invalid_from(self, start: int) -> n.Invalid:
        """An Invalid node over the tokens from index ``start`` to the last one consumed."""
        kinds = self.kinds
        end = self.pos - 1
        while end > start and kinds[end] in _LAYOUT:
            end -= 1
        first, last = self.tokens[start], self.tokens[max(end, start)]
        span = new_span(first[2], last[3], first[4], first[5], last[6], last[7])
        return n.Invalid(span=span, text=self.source.text[span.start : span.end])

    def too_deep(self) -> None:
        """Report and skip a block nested beyond MAX_NESTING (entered just after its INDENT)."""
        token = self.tokens[self.pos]
        self.report("E115", f"Blocks nested more than {MAX_NESTING} levels deep", token_span(token))
        kinds = self.kinds
        level = 1
        while level and kinds[self.pos] != EOF:
            kind = kinds[self.pos]
            if kind == INDENT:
                level += 1
            elif kind == DEDENT:
                level -= 1
            self.pos += 1

    def end_statement(self) -> None:
        kind = self.kinds[self.pos]
        if kind == NEWLINE:
            self.pos += 1
        elif kind != EOF and kind != DEDENT and not self.ended_with_block():
            self.fail("expected the end of the statement")

    def recover(self, start: int, properties: bool = False) -> None:
        """After an error in the statement that began at token ``start``: skip the rest of
        it, including the remainder of any indentation level it opened but did not close (a
        pipeline's continuation lines), so the enclosing block keeps its shape. A block
        hanging off a broken agent, session or resume header (or property line, when
        ``properties``) holds properties and is checked as such."""
        kinds = self.kinds
        properties = properties or kinds[start] in _PROPERTY_HEADS
        opened = 0
        for kind in kinds[start : self.pos]:
            if kind == INDENT:
                opened += 1
            elif kind == DEDENT:
                opened -= 1
        self.skip_line(properties)
        while opened > 0 and kinds[self.pos] != EOF:
            if kinds[self.pos] == DEDENT:
                opened -= 1
                self.pos += 1
            else:
                self.skip_line()

    def misspelled_keyword(self, token: Token) -> None:
        """A name where an expression starts, followed by what follows a keyword there
        (`let x = sesion "a"`, `b = paralel:`): a misspelled keyword, reported at the name.
        Returns when the name is close to no keyword (the next token is then the error)."""
        word = token[1]
        guess = closest(word, _EXPRESSION_WORDS, cutoff=0.75)
        if guess is None:
            return
        span = token_span(token)
        self.report(
            "E004",
            f"unknown keyword `{word}` (did you mean `{guess}`?)",
            span,
            help=f"replace `{word}` with `{guess}`",
            fix=Fix.nearest_word(span, word, guess),
        )
        raise _ParseError(properties=guess in _PROPERTY_HEADS)

    # --- pieces every part reads ----------------------------------------------------------

    def number(self) -> n.NumberLit:
        token = self.advance()
        return n.NumberLit(span=token_span(token), value=cast(int | float, token[8]), raw=token[1])

    def discretion_expr(self) -> n.Discretion:
        return self.discretion("a discretion")

    def discretion(self, what: str, ends: tuple[str, ...] = (":",)) -> n.Discretion:
        """A `**condition**`; ``ends`` are the tokens that may follow it on its line."""
        kinds = self.kinds
        after = kinds[self.pos + 1]
        if kinds[self.pos] != DISCRETION or (after not in ends and after not in _LINE_END):
            plain = self.plain_condition(ends)
            if plain is not None:
                return plain
        token = self.expect(DISCRETION, what)
        return n.Discretion(
            span=token_span(token),
            text=cast(str, token[8]),
            triple=(token[1].startswith("***") and token[1] != "****")
            or (token[1].startswith("**_") and "\n" in token[1]),
        )

    def plain_condition(self, ends: tuple[str, ...]) -> n.Discretion | None:
        """`if depth <= 0:`: one error for the whole condition (the scanner's complaints
        about its characters are dropped); it parses as the discretion it means, so the
        statement's body is still checked."""
        reading = habits.plain_condition(self, self.pos, ends)
        if reading is None:
            return None
        found, condition, self.pos = reading
        lo, hi = condition.span.start, condition.span.end
        self.diagnostics[:] = [
            d for d in self.diagnostics if not (d.code == "E102" and lo <= d.span.start < hi)
        ]
        self.note(found)
        return condition

    def string(self, what: str) -> n.StringLit:
        return string_literal(self.expect(STRING, what))

    def enter(self) -> None:
        """Count a nesting level of brackets or header values (blocks count theirs in
        ``body``), so no input can recurse deeper than MAX_NESTING levels."""
        if self.depth >= MAX_NESTING:
            self.report(
                "E115",
                f"Expressions nested more than {MAX_NESTING} levels deep",
                token_span(self.tokens[self.pos]),
            )
            raise _ParseError
        self.depth += 1

    def name_list(self, closer: str) -> tuple[n.Name, ...]:
        """``a, b, c`` up to and including ``closer`` (the opener is already consumed)."""
        names: list[n.Name] = []
        kinds = self.kinds
        while kinds[self.pos] != closer:
            names.append(self.expect_name("a name"))
            if kinds[self.pos] != ",":
                break
            self.pos += 1
        self.expect(closer, f"'{closer}' or ','")
        return tuple(names)

    def taken_in(self, span: Span) -> None:
        """Drop the scanner's reports inside ``span``: the fix's quotes take that text in."""
        self.diagnostics[:] = [
            d
            for d in self.diagnostics
            if not (span.start <= d.span.start and d.span.end <= span.end)
        ]

    def drop_times(self, message: str, rule: str | None = None) -> None:
        """`times` after a count (`repeat 3 times:`, `retry: 3 times`): reported at the
        word, and parsing goes on after it."""
        times, before = self.tokens[self.pos], self.tokens[self.pos - 1]
        self.note(habits.extra_times(self.source, before, times, message, rule))
        self.pos += 1

    # --- defined by the parts of the grammar, which call one another through these --------

    def property_lines(self) -> tuple[n.Property, ...]:
        raise NotImplementedError  # parser/sessions.py

    def indented_block(self) -> list[n.Stmt]:
        raise NotImplementedError  # parser/statements.py

    def expression(self) -> n.Expr:
        raise NotImplementedError  # parser/expressions.py

    def property_block(self) -> tuple[n.Property, ...]:
        raise NotImplementedError  # parser/sessions.py

    def modifiers(self) -> tuple[n.Modifier, ...]:
        raise NotImplementedError  # parser/constructs.py

    def body(self, *, required: bool, construct: str | None = None) -> tuple[n.Stmt, ...]:
        raise NotImplementedError  # parser/statements.py

    def session(self) -> n.Session:
        raise NotImplementedError  # parser/sessions.py

    def ask(self) -> n.Ask:
        raise NotImplementedError  # parser/sessions.py

    def nested_postfix(self) -> n.Expr:
        raise NotImplementedError  # parser/expressions.py

    def shape(self) -> n.Shape:
        raise NotImplementedError  # parser/shapes.py

    def shape_value(self) -> n.Shape:
        raise NotImplementedError  # parser/shapes.py

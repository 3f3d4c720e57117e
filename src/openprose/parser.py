"""The OpenProse parser: hand-written recursive descent over the scanner's token list.

``parse(source)`` always returns a ``ParseResult``; every problem is a diagnostic, never an
exception. Errors are contained per statement (and per property line and choice option): the
broken statement becomes an ``Invalid`` node, the parser skips to the end of its logical line
(and through any indented block hanging off it, still parsing that block to report independent
errors inside), then carries on. Decisions: docs/decisions.md, OpenProse: scanner and parser.
"""

from __future__ import annotations

import gc
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NoReturn, cast

from openprose import habits
from openprose import nodes as n
from openprose.codes import diagnostic
from openprose.depth import MAX_NESTING, deep_recursion
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
from openprose.source import SourceFile, Span
from openprose.suggest import closest, did_you_mean
from openprose.vocabulary import AGENT_PROPERTIES, SESSION_PROPERTIES

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


@dataclass(frozen=True, slots=True)
class ParseResult:
    program: n.Program
    diagnostics: tuple[Diagnostic, ...]
    source: SourceFile

    @property
    def ok(self) -> bool:
        return not any(d.is_error for d in self.diagnostics)


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


class _Parser:
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

    # --- token helpers ---------------------------------------------------------------------

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
        return n.Name(span=token_span(token), id=token[1])

    def expect_word(self, what: str) -> n.Name:
        token = self.tokens[self.pos]
        if not _is_word(token):
            self.fail(f"expected {what}")
        self.pos += 1
        return n.Name(span=token_span(token), id=token[1])

    def declared_name(self, what: str, *followers: str) -> n.Name:
        """The name after ``input``/``output``/``block``. When it is missing but the line
        goes on as it should (``input : "x"``) the name is empty (zero width, where it should
        be) and the checker reports the reference's error (E020, E023, E151)."""
        token = self.tokens[self.pos]
        if token[0] in followers:
            span = Span(token[2], token[2], token[4], token[5], token[4], token[5])
            return n.Name(span=span, id="")
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
        return Span(first[2], last[3], first[4], first[5], last[6], last[7])

    def span_after(self, start: Span) -> Span:
        """From the start of ``start`` through the last significant token consumed."""
        last = self.last_significant()
        return Span(start.start, last[3], start.line, start.column, last[6], last[7])

    def starts_property(self, ahead: int) -> bool:
        """Does ``name:`` start ``ahead`` tokens from here?"""
        return self.peek_kind(ahead + 1) == ":" and _is_word_kind(self.peek_kind(ahead))

    def ended_with_block(self) -> bool:
        return self.kinds[self.pos - 1] == DEDENT

    # --- diagnostics -----------------------------------------------------------------------

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

    # --- recovery --------------------------------------------------------------------------

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
        span = Span(first[2], last[3], first[4], first[5], last[6], last[7])
        return n.Invalid(span=span, text=self.source.text[span.start : span.end])

    # --- program and blocks ----------------------------------------------------------------

    def program(self) -> n.Program:
        body: list[n.Stmt] = []
        kinds = self.kinds
        while True:
            kind = kinds[self.pos]
            if kind == EOF:
                break
            if kind == NEWLINE or kind == DEDENT:
                self.pos += 1
            else:
                self.previous = body[-1] if body else None
                body.append(self.statement())
        return n.Program(
            span=self.source.span(0, len(self.source.text)),
            body=tuple(body),
            comments=tuple(self.comments),
            path=self.source.path,
        )

    def block_statements(self) -> list[n.Stmt]:
        """Statements up to (not including) the DEDENT that closes the current block."""
        body: list[n.Stmt] = []
        kinds = self.kinds
        while True:
            kind = kinds[self.pos]
            if kind == DEDENT or kind == EOF:
                return body
            if kind == NEWLINE:
                self.pos += 1
            else:
                self.previous = body[-1] if body else None
                body.append(self.statement())

    def body(self, *, required: bool, construct: str | None = None) -> tuple[n.Stmt, ...]:
        """An indented block after a header's ``:``. A missing block is an empty body; when
        ``required`` (try/catch/finally: ``statement+``) that is E105, reported without
        abandoning the statement, so its later clauses still attach to it. Where the grammar
        admits an empty body (``statement*``), ``construct`` names the header for the W100
        warning, which points at the line that was probably meant to be indented."""
        kinds = self.kinds
        if kinds[self.pos] != NEWLINE or self.peek_kind() != INDENT:
            if kinds[self.pos] != NEWLINE:
                inline = self.inline_body()
                if inline is not None:
                    return inline
                self.expected_block()
            if required:
                self.report("E105", "Expected an indented block", token_span(self.tokens[self.pos]))
            elif construct is not None:
                self.empty_body(construct)
            return ()  # the NEWLINE ends the statement (or the clause)
        self.pos += 2
        return tuple(self.indented_block())

    def inline_body(self) -> tuple[n.Stmt, ...] | None:
        """`items | map: session "Process {item}"`, `repeat 3: session "x"` (early forms):
        a header's body goes on indented lines. When the rest of the line is one complete
        statement and no indented block follows, that is one error with the safe fix that
        moves the statement to its own indented line, and the statement is the body."""
        start, errors = self.pos, len(self.diagnostics)
        colon = self.tokens[start - 1]
        if self.depth >= MAX_NESTING:
            return None  # `repeat 1: repeat 1: …` on one line nests like indented blocks
        self.depth += 1
        try:
            stmt = self.statement_inner()
        except _ParseError:
            stmt = None
        finally:
            self.depth -= 1
        kinds = self.kinds
        ok = (
            stmt is not None
            and kinds[self.pos] == NEWLINE
            and kinds[self.pos + 1] != INDENT
            and colon[0] == ":"
            and all(t[4] == t[6] for t in self.tokens[start : self.pos])
        )
        if not ok:
            del self.diagnostics[errors:]
            self.pos = start
            return None
        first = self.tokens[start]
        line = self.source.line_text(colon[4])
        indent = " " * (len(line) - len(line.lstrip(" ")) + 2)
        gap = self.source.span(colon[3], first[2])
        self.report(
            "E004",
            "A block's statements go on the lines under its header, not after its ':'",
            token_span(first),
            help="move the statement to its own line, indented under the header",
            fix=None
            if "\t" in line
            else Fix("move the statement to an indented line", (Edit(gap, "\n" + indent),)),
        )
        assert stmt is not None
        return (stmt,)

    def empty_body(self, construct: str) -> None:
        """W100 at the first token after the header (the unindented line), or at the end of
        the header when the file ends there."""
        kinds = self.kinds
        index = self.pos + 1
        while kinds[index] in (NEWLINE, DEDENT):
            index += 1
        token = self.tokens[index] if kinds[index] not in (EOF, ERROR) else self.tokens[self.pos]
        header = self.tokens[self.pos - 1]
        where = (
            f"line {token[4]} is not indented under it"
            if kinds[index] != EOF
            else ("the file ends after its header")
        )
        self.report(
            "W100",
            f"`{construct}` on line {header[4]} has an empty body: {where}",
            token_span(token),
            help=f"indent the statements of the `{construct}` body under its header",
        )

    def indented_block(self) -> list[n.Stmt]:
        """The statements of a block whose INDENT was just consumed, through its DEDENT;
        every block, even one parsed only for its errors, counts towards MAX_NESTING."""
        if self.depth >= MAX_NESTING:
            self.too_deep()
            return []
        self.depth += 1
        try:
            statements = self.block_statements()
        finally:
            self.depth -= 1
        if self.kinds[self.pos] == DEDENT:
            self.pos += 1
        return statements

    def expected_block(self) -> NoReturn:
        token = self.tokens[self.pos]
        if token[0] == NEWLINE or token[0] == EOF:
            self.report("E105", "Expected an indented block", token_span(token))
            raise _ParseError
        self.fail("expected the end of the line and an indented block")

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

    # --- statements ------------------------------------------------------------------------

    def statement(self) -> n.Stmt:
        start = self.pos
        try:
            stmt = self.statement_inner()
            if self.kinds[self.pos] == NEWLINE:
                self.pos += 1
            else:
                self.end_statement()
            return stmt
        except _ParseError as error:
            self.recover(start, error.properties)
            return self.invalid_from(start)

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

    def statement_inner(self) -> n.Stmt:
        kind = self.kinds[self.pos]
        handler = _STATEMENTS.get(kind)
        if handler is not None:
            return handler(self)
        if kind == NAME and self.peek_kind() == "=":
            return self.assignment()
        if kind == NAME and self.peek_kind() not in _NAME_GOES_ON:
            self.unknown_statement()
        if kind == "|" and self.tokens[self.pos + 1][1] in _PIPE_OPS:
            self.report(
                "E004",
                "A pipeline stage cannot start a statement: this `|` is inside the body above",
                token_span(self.tokens[self.pos]),
                help="indent the `| op:` line less than the body of the stage before it (as "
                "a continuation of the pipeline's first line), its body deeper than it",
                rule='Pipeline Operations: pipeExpr → ( IDENTIFIER | array ) ( "|" pipeOp )+',
            )
            raise _ParseError
        if kind == INDENT:
            self.report("E104", "Unexpected indent", token_span(self.tokens[self.pos]))
            start = self.pos
            self.pos += 1
            self.indented_block()  # parsed for its own errors, then dropped
            return self.invalid_from(start)
        start = self.pos
        expr = self.expression()
        if not isinstance(expr, _STATEMENT_EXPRS):
            if self.kinds[self.pos] not in _LAYOUT:
                self.fail("expected the end of the statement")  # `x y`: the `y` is the error
            span = self.span_from(start)
            self.report(
                "E116",
                "A bare value is not a statement (bind it with let/const or pass it as context)",
                span,
            )
            return n.Invalid(span=span, text=self.source.text[span.start : span.end])
        return expr

    def unknown_statement(self) -> None:
        """A name that starts a statement and does not go on as an expression: a misspelled
        keyword (`sesion "Hello"`, `paralel:`) or the legacy `import "x" from "y"`. Returns
        when the line may still be a valid expression statement (a bare name is E116)."""
        token = self.tokens[self.pos]
        word = token[1]
        if word in habits.CONTROL_WORDS:
            self.note(habits.control_word(self, self.pos, self.previous))
            raise _ParseError
        following = self.peek_kind()
        if word == "import" and following == STRING:
            found, self.pos = habits.legacy_import(self, self.pos)
            self.note(found)
            raise _ParseError
        if following == NEWLINE and self.peek_kind(2) == INDENT:
            return  # a name whose pipeline goes on below (`xs` then `  | map:`)
        if following == ":" and word in SESSION_PROPERTIES:
            misplaced = habits.unindented_property(self.source, token)
            if misplaced is not None:
                self.note(misplaced)
                raise _ParseError(properties=True)
        guess = closest(word, _STATEMENT_WORDS, cutoff=0.75)
        if guess is None and following in _LAYOUT:
            return  # a bare name: E116 explains it
        span = token_span(token)
        if guess is not None:
            self.report(
                "E004",
                f"unknown statement `{word}` (did you mean `{guess}`?)",
                span,
                help=f"replace `{word}` with `{guess}`",
                fix=Fix.nearest_word(span, word, guess),
            )
        else:
            self.report(
                "E004",
                f"unknown statement `{word}`",
                span,
                help="a statement starts with a keyword (session, let, parallel, if, ...) "
                "or `name =`",
            )
        raise _ParseError(properties=guess in _PROPERTY_HEADS)

    def check_keyword_after_equals(self) -> None:
        """`x = sesion: critic`, `x = paralel:`: on the right of `=` a name followed by `:`
        is a misspelled keyword (a name never goes on with a colon there)."""
        if self.kinds[self.pos] == NAME and self.peek_kind() == ":":
            self.misspelled_keyword(self.tokens[self.pos])

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

    def use(self) -> n.Use:
        start = self.take()
        path = self.string('a program path string ("@handle/slug")')
        alias = None
        if self.kinds[self.pos] == "as":
            self.pos += 1
            alias = self.expect_name("an alias name after 'as'")
        return n.Use(span=self.span_from(start), path=path, alias=alias)

    def input_decl(self) -> n.Input:
        start = self.take()
        name = self.declared_name("an input name", ":")
        kind = self.kinds[self.pos]
        if kind in _LINE_END or kind == "=":
            return self.input_without_colon(start, name)
        self.expect(":", "':' after the input name")
        description: n.StringLit | n.Discretion
        kind = self.kinds[self.pos]
        if kind == DISCRETION:  # a prompt for the model to present
            description = self.discretion("a description", ())
        elif kind != STRING and kind not in _LAYOUT:
            return self.unquoted_description(start, name)
        else:
            description = self.string("a description string")
        return n.Input(span=self.span_from(start), name=name, description=description)

    def input_without_colon(self, start: int, name: n.Name) -> n.Input:
        """`input topic` (no description) or `input depth = "shallow"` (a default value):
        reported as habits; either parses as an input, so uses of the name do not cascade."""
        at = self.tokens[self.pos]
        # the name stands in for the missing description (no second, empty-description row)
        empty = n.StringLit(span=token_span(at), value=name.id, parts=(name.id,), triple=False)
        if at[0] != "=":
            self.note(habits.input_without_description(self, self.pos, name))
        else:
            self.note(habits.input_default(self, self.pos, name))
            self.pos += 1
            while self.kinds[self.pos] not in _LAYOUT:
                self.pos += 1
        return n.Input(span=self.span_from(start), name=name, description=empty)

    def unquoted_description(self, start: int, name: n.Name) -> n.Input:
        """`input topic: string` or `input audience: the people who read it`: one habit
        for the rest of the line. When it has a fix, the scanner's complaints inside the
        line (such as an apostrophe) are dropped: the quotes take them in."""
        end = self.pos
        while self.kinds[end] not in _LAYOUT:
            end += 1
        found = habits.unquoted_description(self, self.pos, end, name)
        self.pos = end
        span = found.span
        if found.fix is not None:
            self.taken_in(span)
        self.note(found)
        raw = self.source.text[span.start : span.end]
        description = n.StringLit(span=span, value=raw, parts=(raw,), triple=False)
        return n.Input(span=self.span_from(start), name=name, description=description)

    def output(self) -> n.Output | n.Invalid:
        start = self.take()
        kinds = self.kinds
        here = kinds[self.pos]
        colon = here == NAME and kinds[self.pos + 1] == ":" and kinds[self.pos + 2] not in _LAYOUT
        if here not in _LAYOUT and here != "=" and kinds[self.pos + 1] != "=" and not colon:
            return self.unnamed_output(start)
        name = self.declared_name("an output name", "=")
        if colon:
            self.binding_colon("output")
        else:
            self.expect("=", "'=' after the output name")
        self.check_keyword_after_equals()
        value = self.expression()
        return n.Output(span=self.span_from(start), name=name, value=value)

    def unnamed_output(self, start: int) -> n.Invalid:
        """`output session: x` / `output result` / `output do f(x)`: a value with no name
        (published programs use it as a block's "return"). The reference's row is "Empty
        output name: Output name cannot be empty". The value is parsed (its properties with
        it), so the one error is the only one, then dropped."""
        value_at = self.tokens[self.pos]
        self.report(
            "E023",
            "Output name cannot be empty: `output` binds a name, `output NAME = value`",
            token_span(value_at),
            help="name it (`output result = …`); a block's value is its last statement's, "
            "so inside a block write the value as the last statement",
        )
        try:
            self.expression()
        except _ParseError:
            self.skip_line()
        return self.invalid_from(start)

    def agent(self) -> n.AgentDef:
        start = self.take()
        name = self.expect_name("an agent name")
        self.expect(":", "':' after the agent name")
        properties: tuple[n.Property, ...] = ()
        if self.kinds[self.pos] == NEWLINE and self.peek_kind() == INDENT:
            properties = self.property_block()
        elif self.kinds[self.pos] != NEWLINE:
            self.fail("expected the end of the line and an indented property block")
        return n.AgentDef(span=self.span_from(start), name=name, properties=properties)

    def block_def(self) -> n.BlockDef:
        start = self.take()
        name = self.declared_name("a block name", ":", "(")
        params: list[n.Name] = []
        # `block f (max_depth: 5):` is modifiers, not parameters
        has_parens = self.kinds[self.pos] == "(" and not self.starts_property(1)
        if has_parens:
            self.pos += 1
            while self.kinds[self.pos] != ")":
                params.append(self.expect_name("a parameter name"))
                if self.kinds[self.pos] != ",":
                    break
                self.pos += 1
            self.expect(")", "')' or ',' in the parameter list")
        modifiers: tuple[n.Modifier, ...] = ()
        if self.kinds[self.pos] == "(":
            modifiers = self.modifiers()
        self.expect(":", "':' after the block header")
        body = self.body(required=False, construct="block")
        return n.BlockDef(
            span=self.span_from(start),
            name=name,
            params=tuple(params),
            body=body,
            has_parens=has_parens,
            modifiers=modifiers,
        )

    def binding(self) -> n.Binding | n.Input:
        keyword_at = self.pos
        keyword = self.advance()
        target: n.Name | n.Destructure
        if self.kinds[self.pos] == "{":
            brace = self.take()
            names = self.name_list("}")
            target = n.Destructure(span=self.span_from(brace), names=names)
        else:
            target = self.expect_name(f"a variable name after '{keyword[1]}'")
        if self.kinds[self.pos] == ":" and self.kinds[self.pos + 1] not in _LAYOUT:
            self.binding_colon(keyword[1])
        else:
            self.expect("=", "'=' after the variable name")
        if (
            isinstance(target, n.Name)
            and self.kinds[self.pos] == "input"
            and self.kinds[self.pos + 1] in (STRING, DISCRETION)
            and self.kinds[self.pos + 2] in _LAYOUT
        ):
            return self.input_as_value(keyword_at, target)
        self.check_keyword_after_equals()
        value = self.expression()
        kind: Literal["let", "const"] = "let" if keyword[0] == "let" else "const"
        return n.Binding(span=self.span_from(keyword_at), kind=kind, target=target, value=value)

    def binding_colon(self, keyword: str) -> None:
        """`let x: …` / `output r: …`: reported as the binding's `=`, parsed as meant."""
        found, self.pos = habits.colon_for_equals(self, self.pos, keyword)
        self.note(found)

    def input_as_value(self, keyword_at: int, target: n.Name) -> n.Input:
        """`let api_url = input "Enter API URL"`: an input is a declaration of the program,
        `input NAME: "description"`. One E004 with the safe fix that writes it so (E022 then
        moves it to the top when it stands below executable statements); it parses as that
        input, so its name is declared."""
        self.pos += 1  # 'input'
        description: n.StringLit | n.Discretion
        if self.kinds[self.pos] == DISCRETION:
            description = self.discretion("a description", ())
        else:
            description = self.string("a description string")
        self.note(habits.input_as_value(self.source, self.tokens[keyword_at], target, description))
        return n.Input(span=self.span_from(keyword_at), name=target, description=description)

    def assignment(self) -> n.Assign:
        start = self.pos
        token = self.advance()
        self.pos += 1  # '='
        self.check_keyword_after_equals()
        value: n.Expr
        if self.kinds[self.pos] in _BRANCH_STATEMENTS and self.depth in self.parallel_levels:
            # parallelBranch → ( IDENTIFIER "=" )? statement: `name = try:` names the result
            # of a statement that is no expression
            value = cast(n.Expr, _STATEMENTS[self.kinds[self.pos]](self))
        else:
            value = self.expression()
        target = n.Name(span=token_span(token), id=token[1])
        return n.Assign(span=self.span_from(start), target=target, value=value)

    def try_stmt(self) -> n.Try:
        start = self.take()
        self.expect(":", "':' after 'try'")
        body = self.body(required=True)
        catch: n.CatchClause | None = None
        finally_body: tuple[n.Stmt, ...] | None = None
        finally_span: Span | None = None
        kinds = self.kinds
        while self.clause_follows("catch", "finally") or self.except_follows():
            keyword_at = self.pos
            keyword = self.advance()
            if keyword[0] != "finally":
                error = None
                if kinds[self.pos] == "as":
                    self.pos += 1
                    error = self.expect_name("an error variable name after 'as'")
                elif kinds[self.pos] == NAME and kinds[self.pos + 1] == ":":
                    # `catch err:` (Python writes `except E as err`, others `catch (err)`)
                    error = self.expect_name("an error variable name")
                    self.note(habits.catch_without_as(self.source, error))
                self.expect(":", "':' after 'catch'")
                clause_body = self.body(required=True)
                clause = n.CatchClause(
                    span=self.span_from(keyword_at), error=error, body=clause_body
                )
                if catch is not None or finally_body is not None:
                    problem = "a second 'catch'" if catch is not None else "'catch' after 'finally'"
                    self.report("E119", f"Misplaced clause: {problem}", token_span(keyword))
                else:
                    catch = clause
            else:
                self.expect(":", "':' after 'finally'")
                clause_body = self.body(required=True)
                if finally_body is not None:
                    self.report("E119", "Misplaced clause: a second 'finally'", token_span(keyword))
                else:
                    finally_body = clause_body
                    finally_span = self.span_from(keyword_at)
        return n.Try(
            span=self.span_from(start),
            body=body,
            catch=catch,
            finally_body=finally_body,
            finally_span=finally_span,
        )

    def except_follows(self) -> bool:
        """`except:` (Python's word) where a `catch:` clause goes: reported with the safe fix
        that writes `catch`, and parsed as that clause, so the `try` keeps its handler."""
        at = self.pos + (self.kinds[self.pos] == NEWLINE)
        found = habits.except_clause(self, at)
        if found is None:
            return False
        self.note(found)
        self.pos = at
        return True

    def throw(self) -> n.Throw:
        start = self.take()
        message = None
        if self.kinds[self.pos] == STRING:
            message = self.string("a message string")
        return n.Throw(span=self.span_from(start), message=message)

    def choice(self) -> n.Choice:
        start = self.take()
        criteria = self.discretion("a **criteria** after 'choice'")
        self.expect(":", "':' after the choice criteria")
        kinds = self.kinds
        options: list[n.ChoiceOption] = []
        if kinds[self.pos] != NEWLINE or self.peek_kind() != INDENT:
            if kinds[self.pos] != NEWLINE:
                self.expected_block()
            # No option lines: the checker's E166 "Choice block must have at least one option".
            return n.Choice(span=self.span_from(start), criteria=criteria, options=())
        self.pos += 2
        if self.depth >= MAX_NESTING:
            self.too_deep()
        else:
            self.depth += 1
            try:
                stray = False  # a line that is not an option was reported already
                while kinds[self.pos] not in (DEDENT, EOF):
                    if kinds[self.pos] == NEWLINE:
                        self.pos += 1
                        continue
                    if kinds[self.pos] != "option" and stray:
                        self.statement()  # checked for its own errors, then dropped
                        continue
                    stray = stray or kinds[self.pos] != "option"
                    option = self.option()
                    if option is not None:
                        options.append(option)
            finally:
                self.depth -= 1
            if kinds[self.pos] == DEDENT:
                self.pos += 1
        return n.Choice(span=self.span_from(start), criteria=criteria, options=tuple(options))

    def option(self) -> n.ChoiceOption | None:
        start = self.pos
        try:
            if self.kinds[self.pos] != "option":
                token = self.tokens[self.pos]
                self.report(
                    "E004",
                    'Every line of a choice is an `option "label":` block',
                    token_span(token),
                    help='put each alternative under a label: option "label": then its '
                    "statements indented under it",
                )
                self.statement()  # checked for its own errors, then dropped
                return None
            keyword_at = self.take()
            if self.kinds[self.pos] in (NAME, NUMBER):
                label = self.unquoted_label()
            else:
                label = self.string("an option label string")
            self.expect(":", "':' after the option label")
            body = self.body(required=False)
            return n.ChoiceOption(span=self.span_from(keyword_at), label=label, body=body)
        except _ParseError:
            self.recover(start)
            return None

    def unquoted_label(self) -> n.StringLit:
        """`option Scale up:`: the label without quotes. Up to the line's last `:`, the words
        are the label; the safe fix quotes them, and the option parses with that label."""
        first = end = self.pos
        kinds = self.kinds
        while kinds[end] not in _LAYOUT:
            end += 1
        if end - 1 <= first or kinds[end - 1] != ":":
            return self.string("an option label string")
        found = habits.unquoted_label(self, first, end)
        if found is None:
            return self.string("an option label string")
        self.note(found)
        self.pos = end - 1
        span = found.span
        text = self.source.text[span.start : span.end]
        return n.StringLit(span=span, value=text, parts=(text,), triple=False)

    def if_stmt(self) -> n.If:
        start = self.take()
        condition = self.discretion("a **condition** after 'if'")
        self.expect(":", "':' after the condition")
        body = self.body(required=False)
        branches = [n.CondBranch(span=self.span_from(start), condition=condition, body=body)]
        else_body: tuple[n.Stmt, ...] | None = None
        else_span: Span | None = None
        while self.clause_follows("elif", "else"):
            keyword_at = self.pos
            keyword = self.advance()
            if keyword[0] == "elif" or self.else_if(keyword):
                condition = self.discretion("a **condition** after 'elif'")
                self.expect(":", "':' after the condition")
                body = self.body(required=False)
                if else_body is not None:
                    self.report("E112", "'elif' after 'else'", token_span(keyword))
                else:
                    branch = n.CondBranch(
                        span=self.span_from(keyword_at), condition=condition, body=body
                    )
                    branches.append(branch)
            else:
                self.expect(":", "':' after 'else'")
                body = self.body(required=False)
                if else_body is not None:
                    self.report("E112", "Only one else clause allowed", token_span(keyword))
                else:
                    else_body = body
                    else_span = self.span_from(keyword_at)
        return n.If(
            span=self.span_from(start),
            branches=tuple(branches),
            else_body=else_body,
            else_span=else_span,
        )

    def else_if(self, keyword: Token) -> bool:
        """`else if **c**:` is written `elif **c**:` — one E004 with that safe fix; the `if`
        is consumed, so the clause parses as the `elif` it means."""
        if self.kinds[self.pos] != "if":
            return False
        self.note(habits.else_if(self.source, keyword, self.tokens[self.pos]))
        self.pos += 1
        return True

    def clause_follows(self, *keywords: str) -> bool:
        """Whether one of ``keywords`` starts the next clause. After a clause whose body was
        empty, the header line's NEWLINE still stands before it: skip that NEWLINE."""
        kinds = self.kinds
        if kinds[self.pos] in keywords:
            return True
        if kinds[self.pos] == NEWLINE and kinds[self.pos + 1] in keywords:
            self.pos += 1
            return True
        return False

    def orphan_clause(self) -> n.Stmt:
        """``elif``/``else``/``catch``/``finally``/``option`` with nothing to attach to."""
        token = self.advance()
        code, message = _ORPHANS[token[0]]
        self.report(code, message, token_span(token))
        raise _ParseError

    # --- expressions -----------------------------------------------------------------------

    def expression(self) -> n.Expr:
        kinds = self.kinds
        pos = self.pos
        # Fast path for the commonest values: a lone name or string ending the value (a
        # NEWLINE ends it unless an indented `| op:` continuation line may follow).
        following = kinds[pos + 1]
        if following in _VALUE_END or (following == NEWLINE and kinds[pos + 2] != INDENT):
            kind = kinds[pos]
            if kind in _NAME_KINDS:
                self.pos = pos + 1
                token = self.tokens[pos]
                return n.Name(span=token_span(token), id=token[1])
            if kind == STRING:
                self.pos = pos + 1
                return string_literal(self.tokens[pos])
        first = self.pipeline()
        if kinds[self.pos] != ARROW:
            return first
        steps = [first]
        while self.kinds[self.pos] == ARROW:
            self.pos += 1
            steps.append(self.pipeline())
        return n.Arrow(span=self.span_after(first.span), steps=tuple(steps))

    def pipeline(self) -> n.Expr:
        source = self.postfix()
        kinds = self.kinds
        kind = kinds[self.pos]
        if kind != "|" and not (
            kind == NEWLINE and self.peek_kind() == INDENT and self.peek_kind(2) == "|"
        ):
            return source
        ops: list[n.PipeOp] = []
        levels = 0  # continuation lines that opened an indentation level of their own
        while True:
            kind = kinds[self.pos]
            if kind == "|":
                ops.append(self.pipe_op())
            elif kind == NEWLINE and self.peek_kind() == INDENT and self.peek_kind(2) == "|":
                self.pos += 2
                levels += 1
            elif kind == INDENT and self.peek_kind() == "|" and self.ended_with_block():
                self.pos += 1
                levels += 1
            elif kind == NEWLINE and self.peek_kind() == "|":
                self.pos += 1  # a continuation line at the same level as the previous one
            else:
                break
        self.close_continuation(levels)
        return n.Pipeline(span=self.span_after(source.span), source=source, ops=tuple(ops))

    def close_continuation(self, levels: int) -> None:
        """Leave the indentation levels that a pipeline's continuation lines opened. After a
        stage with an empty body the stage line's NEWLINE still stands before the DEDENT. A
        line left at a continuation level that is not a stage is E104: it is indented under
        the pipeline, and treating it as the next statement would end the enclosing block
        early."""
        kinds = self.kinds
        while levels:
            kind = kinds[self.pos]
            if kind == DEDENT:
                self.pos += 1
                levels -= 1
            elif kind == NEWLINE and self.peek_kind() in (DEDENT, EOF):
                self.pos += 1
            else:
                if kind == NEWLINE:
                    self.pos += 1
                token = self.tokens[self.pos]
                if token[0] != ERROR:
                    self.report(
                        "E104",
                        "Unexpected indent: only '| stage:' lines may continue a pipeline here",
                        token_span(token),
                    )
                raise _ParseError

    def pipe_op(self) -> n.PipeOp:
        bar = self.take()
        token = self.tokens[self.pos]
        if not _is_word(token):
            self.report(
                "E120", "Expected pipe operator (map, filter, reduce, pmap)", token_span(token)
            )
            raise _ParseError
        self.pos += 1
        op = token[1]
        if op not in _PIPE_OPS:
            self.report(
                "E120",
                f"Unknown pipe operator {op!r}: expected map, filter, reduce or pmap",
                token_span(token),
            )
            if self.kinds[self.pos] not in ("(", ":"):
                raise _ParseError  # not a stage at all; one diagnostic is enough
        accumulator = item = None
        if self.kinds[self.pos] == "(":
            paren = self.take()
            names = self.name_list(")")
            if op == "reduce" and len(names) == 2:
                accumulator, item = names
            elif op == "reduce":
                self.report(
                    "E121",
                    "Expected accumulator and item variables: reduce(acc, item)",
                    self.span_from(paren),
                )
            elif op in _PIPE_OPS:
                self.report(
                    "E004", f"'{op}' takes no variables; it binds 'item'", self.span_from(paren)
                )
        elif op == "reduce":
            self.report(
                "E121",
                "Expected accumulator and item variables: reduce(acc, item)",
                token_span(token),
                help="name both: `reduce(acc, item):` — `acc` holds the result so far (the "
                "first element to begin with), `item` the current one; pass both as context",
            )
        self.expect(":", f"':' after '{op}'")
        # an unknown operator is E120 already; its empty body is no news
        body = self.body(required=False, construct=op if op in _PIPE_OPS else None)
        return n.PipeOp(
            span=self.span_from(bar), op=op, body=body, accumulator=accumulator, item=item
        )

    def postfix(self) -> n.Expr:
        expr = self.primary()
        kinds = self.kinds
        # each `.` nests the tree one level (Attribute of Attribute ...), and the printer,
        # compiler and checker recurse over it: a chain counts against MAX_NESTING too
        room = MAX_NESTING - self.depth
        while kinds[self.pos] == ".":
            if not isinstance(expr, (n.Name, n.Attribute)):
                self.fail("property access works on names only")
            room -= 1
            if room < 0:
                self.report(
                    "E115",
                    f"Property access chained more than {MAX_NESTING} levels deep",
                    token_span(self.tokens[self.pos]),
                )
                raise _ParseError
            self.pos += 1
            attr = self.expect_word("a property name after '.'")
            expr = n.Attribute(span=self.span_after(expr.span), value=expr, attr=attr.id)
        return expr

    def primary(self) -> n.Expr:
        token = self.tokens[self.pos]
        kind = token[0]
        if kind == NAME:
            self.pos += 1
            following = self.kinds[self.pos]
            if following == "(":
                return self.call(token)
            if following in _AFTER_KEYWORD:
                self.misspelled_keyword(token)
            return n.Name(span=token_span(token), id=token[1])
        if kind == STRING:
            self.pos += 1
            return string_literal(token)
        if kind == "session" or kind == "resume":
            return self.session()
        if kind in SOFT_KEYWORDS:
            self.pos += 1
            return n.Name(span=token_span(token), id=token[1])
        handler = _PRIMARIES.get(kind)
        if handler is not None:
            return handler(self)
        self.fail("expected an expression")

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

    def call(self, callee: Token) -> n.ProgramCall:
        callee_at = self.pos - 1
        self.pos += 1  # '('
        args: list[n.KeywordArg] = []
        kinds = self.kinds
        self.enter()
        try:
            while kinds[self.pos] != ")":
                name = self.expect_word("an input name (calls take name: value arguments)")
                self.expect(":", "':' after the input name")
                value = self.expression()
                args.append(n.KeywordArg(span=self.span_after(name.span), name=name, value=value))
                if kinds[self.pos] == ",":
                    self.pos += 1
                elif not self.starts_property(0):
                    # the grammar's `( IDENTIFIER ":" expression )*` has no separator: a
                    # next `name:` goes on without a comma as well
                    break
            self.expect(")", "')' or ',' in the argument list")
        finally:
            self.depth -= 1
        return n.ProgramCall(
            span=self.span_from(callee_at),
            callee=n.Name(span=token_span(callee), id=callee[1]),
            args=tuple(args),
        )

    def nested_postfix(self) -> n.Expr:
        """A value inside a header (repeat count, collection, inline property), counted as a
        nesting level while it is parsed: such values may themselves be loops."""
        self.enter()
        try:
            return self.postfix()
        finally:
            self.depth -= 1

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

    def array(self) -> n.ArrayLit:
        start = self.take()
        elements: list[n.Expr] = []
        kinds = self.kinds
        self.enter()
        try:
            while kinds[self.pos] != "]":
                elements.append(self.expression())
                if kinds[self.pos] != ",":
                    break
                self.pos += 1
            self.expect("]", "']' or ',' in the array")
        finally:
            self.depth -= 1
        return n.ArrayLit(span=self.span_from(start), elements=tuple(elements))

    def object_context(self) -> n.ObjectContext:
        start = self.take()
        if self.kinds[self.pos + 1] == ":" and self.kinds[self.pos] == NAME:
            keyed = self.keyed_object(start, data=self.kinds[start - 1] == "=")
            if keyed is not None:
                return keyed
            # `{ count: 0, entries: [] }`: a data literal, which the grammar does not have
            self.note(habits.data_object(self, start))
            raise _ParseError
        names = self.name_list("}")
        return n.ObjectContext(span=self.span_from(start), names=names)

    def keyed_object(self, start: int, *, data: bool = False) -> n.ObjectContext | None:
        """`{ draft: text, notes: grade }`: the grammar's object context lists names only
        (`objectContext → "{" ( IDENTIFIER ( "," IDENTIFIER )* )? "}"`). One error, with
        the names-only rewrite as an unsafe fix (the model then sees `text`, not `draft`),
        and the object parses as those names. A value after `=` (``data``) is read so only
        when every key is its value's name (`{ grade: grade }`): else it is data."""
        kinds, tokens = self.kinds, self.tokens
        i = self.pos
        values: list[n.Name] = []
        while True:
            if not (kinds[i] == NAME and kinds[i + 1] == ":" and kinds[i + 2] == NAME):
                return None
            if data and tokens[i][1] != tokens[i + 2][1]:
                return None
            if kinds[i + 3] not in (",", "}"):
                return None
            value = tokens[i + 2]
            values.append(n.Name(span=token_span(value), id=value[1]))
            i += 4
            if kinds[i - 1] == "}":
                break
        opener, closer = tokens[start], tokens[i - 1]
        span = Span(opener[2], closer[3], opener[4], opener[5], closer[6], closer[7])
        plain = "{ " + ", ".join(v.id for v in values) + " }"
        self.report(
            "E004",
            "A context object lists names, not `key: value` pairs",
            span,
            help=f"pass the names themselves: `{plain}`",
            fix=Fix(f"write `{plain}`", (Edit(span, plain),), safe=False),
        )
        self.pos = i
        return n.ObjectContext(span=span, names=tuple(values))

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

    def session(self) -> n.Session:
        # The commonest node of all, so this and ``property`` read the token lists directly.
        kinds = self.kinds
        keyword_at = pos = self.pos
        kind: Literal["session", "resume"] = "resume" if kinds[pos] == "resume" else "session"
        pos += 1
        self.pos = pos
        prompt = agent = name = None
        following = kinds[pos]
        mixed: n.Property | None = None
        if following == STRING and kind == "session":
            prompt = string_literal(self.tokens[pos])
            self.pos = pos + 1
            if kinds[pos + 1] == ":" and kinds[pos + 2] == NAME and kinds[pos + 3] in _LAYOUT:
                agent = self.prompt_and_agent(pos)
                mixed = n.Property(
                    span=prompt.span,
                    name=n.Name(span=prompt.span, id="prompt"),
                    value=prompt,
                )
                prompt = None
        elif following == ":":
            self.pos = pos + 1
            if kinds[pos + 1] == STRING and kind == "session":
                # `session: "Do X"`: the colon introduces an agent; a prompt goes without it
                colon = token_span(self.tokens[pos])
                string = self.tokens[pos + 1]
                self.report(
                    "E004",
                    f"Unexpected token {string[1][:30]!r}: expected an agent name after ':' "
                    '(an inline prompt is written session "..." without the colon)',
                    token_span(string),
                    help='remove the colon: session "..."',
                    fix=Fix("remove the colon", (Edit(colon, ""),)),
                )
                raise _ParseError(properties=True)
            agent = self.expect_name("an agent name after ':'")
            if kinds[self.pos] == STRING and kinds[self.pos + 1] in _LAYOUT:
                mixed = self.agent_then_prompt(self.pos)
        elif kind == "resume":
            self.fail("expected ':' and an agent name after 'resume'")
        elif following == NAME and kinds[pos + 1] == ":":
            name = self.expect_name("a session name")
            self.pos += 1
            agent = self.expect_name("an agent name after ':'")
        elif following == NAME and kinds[pos + 1] in _LAYOUT:
            word = self.tokens[pos][1]
            self.report(
                "E004",
                f"Unexpected token {word!r}: a session takes a prompt string or `: agent`",
                token_span(self.tokens[pos]),
                help=f'write `session: {word}` to run agent {word}, or `session "{{{word}}}"` '
                f"to send variable {word} as the prompt",
            )
            raise _ParseError(properties=True)
        properties: list[n.Property] = []
        # Inline properties on the header line: `session "Research AI" context: "AI"`.
        while kinds[self.pos + 1] == ":" and _is_word_kind(kinds[self.pos]):
            properties.append(self.property(inline=True))
        if kinds[self.pos] == "(" and self.starts_property(1):
            properties.extend(self.parenthesised_properties(keyword_at))
        elif kinds[self.pos] == ":" and kinds[self.pos + 1] == NEWLINE:
            self.header_colon()
        pos = self.pos
        # An indented block under a session is its properties when its first line looks
        # like one (`name:`, or a plain name with the colon forgotten); anything else, a
        # keyword say, is left for the statement loop to report as an unexpected indent.
        if (
            kinds[pos] == NEWLINE
            and kinds[pos + 1] == INDENT
            and (kinds[pos + 2] == NAME or self.starts_property(2))
        ):
            properties.extend(self.property_block())
        if mixed is not None:
            properties.insert(0, mixed)
        return n.Session(
            span=self.span_from(keyword_at),
            kind=kind,
            prompt=prompt,
            agent=agent,
            name=name,
            properties=tuple(properties),
        )

    def prompt_and_agent(self, at: int) -> n.Name:
        """`session "Summarize": writer` (the string at ``at``): reported, and parsed as
        `session: writer` with the prompt as its first property."""
        name = self.tokens[at + 2]
        self.note(habits.prompt_and_agent(self, at))
        self.pos = at + 3
        return n.Name(span=token_span(name), id=name[1])

    def agent_then_prompt(self, at: int) -> n.Property:
        """`session: researcher "Find the sources"` (the string at ``at``): reported, and
        parsed as the `prompt:` property it means."""
        self.note(habits.agent_then_prompt(self, at))
        self.pos = at + 1
        prompt = string_literal(self.tokens[at])
        return n.Property(
            span=prompt.span, name=n.Name(span=prompt.span, id="prompt"), value=prompt
        )

    def header_colon(self) -> None:
        """`session "Synthesize":` with its properties under it (an early form of the
        language): reported, and the properties parse as the session's."""
        if self.kinds[self.pos + 2] != INDENT or not self.starts_property(3):
            return
        self.note(habits.header_colon(self.source, self.tokens[self.pos]))
        self.pos += 1

    def parenthesised_properties(self, keyword_at: int) -> list[n.Property]:
        """`session "Flaky call" (retry: 3, backoff: linear)` (an early form): properties
        go on indented lines. One error; the safe fix writes them there when no property
        block follows (otherwise the help says so); they count as the session's."""
        kinds, tokens = self.kinds, self.tokens
        opener = self.pos
        self.pos += 1
        properties = [self.property(inline=True)]
        while kinds[self.pos] == ",":
            self.pos += 1
            properties.append(self.property(inline=True))
        self.expect(")", "')' after the properties")
        closer = tokens[self.pos - 1]
        start, end = tokens[opener - 1][3], closer[3]
        first = tokens[opener]
        span = Span(first[2], closer[3], first[4], first[5], closer[6], closer[7])
        line = self.source.line_text(tokens[keyword_at][4])
        indent = " " * (len(line) - len(line.lstrip(" ")) + 2)
        text = self.source.text
        lines = "".join(f"\n{indent}{text[p.span.start : p.span.end]}" for p in properties)
        block_follows = kinds[self.pos] == NEWLINE and kinds[self.pos + 1] == INDENT
        self.report(
            "E004",
            "Properties in parentheses after a session: they go on indented lines under it",
            span,
            help="write each `name: value` on its own line, indented under the session",
            fix=None
            if block_follows or "\t" in line
            else Fix(
                "write the properties on indented lines",
                (Edit(self.source.span(start, end), lines),),
            ),
        )
        return properties

    def property_block(self) -> tuple[n.Property, ...]:
        """NEWLINE INDENT (``name: value`` NEWLINE)* DEDENT, each line recovered on its own."""
        self.pos += 2
        return self.property_lines()

    def property_lines(self) -> tuple[n.Property, ...]:
        """The lines of a property block, just after its INDENT, through its DEDENT. A line
        indented deeper than the block is E104, and its lines are parsed as properties for
        their own errors (not as statements, which would report ``name:`` again)."""
        properties: list[n.Property] = []
        kinds = self.kinds
        if self.depth >= MAX_NESTING:
            self.too_deep()
            return ()
        self.depth += 1
        try:
            while True:
                kind = kinds[self.pos]
                if kind == DEDENT or kind == EOF:
                    break
                if kind == NEWLINE:
                    self.pos += 1
                    continue
                if kind == INDENT:
                    self.report(
                        "E104",
                        "Unexpected indent",
                        token_span(self.tokens[self.pos]),
                        fix=self._dedent_fix(properties),
                    )
                    self.pos += 1
                    self.property_lines()  # checked, then dropped
                    continue
                start = self.pos
                try:
                    properties.append(self.property(inline=False))
                    if kinds[self.pos] == NEWLINE:
                        self.pos += 1
                    else:
                        self.end_statement()
                except _ParseError:
                    self.recover(start, properties=True)
        finally:
            self.depth -= 1
        if kinds[self.pos] == DEDENT:
            self.pos += 1
        return tuple(properties)

    def _dedent_fix(self, siblings: list[n.Property]) -> Fix | None:
        """Property lines indented deeper than the property before them (`prompt: "…"` then
        a further-indented `context: x`): a property block has one level, so the only
        reading is that they belong to it — move them out to its column. Not offered when a
        token of the run spans lines (a multi-line string's text would move too)."""
        if not siblings:
            return None
        kinds, tokens = self.kinds, self.tokens
        first = self.pos + 1  # the token after the INDENT
        depth, end = 1, first
        while depth:
            kind = kinds[end]
            if kind == EOF:
                return None
            depth += (kind == INDENT) - (kind == DEDENT)
            end += 1
        run = tokens[first : end - 1]
        if any(t[4] != t[6] for t in run if t[0] not in _LAYOUT):
            return None
        shift = tokens[first][5] - siblings[-1].span.column
        if shift <= 0:
            return None  # a tab makes the columns disagree with the layout (E101 first)
        source = self.source
        edits = []
        # from the line after the property before (comments there move with the run)
        for line in range(siblings[-1].span.end_line + 1, max(t[6] for t in run) + 1):
            text = source.line_text(line)
            if "\t" in text[: len(text) - len(text.lstrip())]:
                return None
            cut = min(shift, len(text) - len(text.lstrip(" ")))
            if cut:
                start = source.line_starts[line - 1]
                edits.append(Edit(Span(start, start + cut, line, 1, line, cut + 1), ""))
        if not edits:
            return None
        return Fix("move the lines out to the property block's column", tuple(edits))

    def property(self, *, inline: bool) -> n.Property:
        kinds = self.kinds
        pos = self.pos
        if kinds[pos + 1] != ":" or not _is_word_kind(kinds[pos]):
            if kinds[pos] == NAME:
                self.pos += 1
                self.fail("expected ':' after the property name")
            if kinds[pos] == ARROW and not inline:
                self.report(
                    "E004",
                    "`->` joins sessions on one line; a session's properties end its chain",
                    token_span(self.tokens[pos]),
                    help='write the chain on one line (`session "A" -> session "B"`) and '
                    "give the properties to its last session, or write the next session as "
                    "its own statement",
                    rule='Composition Blocks, Inline Sequence: arrowExpr → session ( "->" '
                    "session )+, on one line",
                )
                raise _ParseError(properties=True)
            self.fail("expected a property ('name: value')")
        token = self.tokens[pos]
        name_span = Span(token[2], token[3], token[4], token[5], token[6], token[7])
        name = n.Name(span=name_span, id=token[1])
        pos += 2
        self.pos = pos
        value: n.Expr | n.PermissionsBlock
        if inline:
            value = self.nested_postfix()
        elif token[1] == "model" and self.model_id_follows(pos):
            value = self.model_id(pos)
        elif (kinds[pos] == "|" or kinds[pos] == ERROR) and (
            block := self.block_scalar(token[1], pos)
        ) is not None:
            value = block
        elif kinds[pos] == NEWLINE and kinds[pos + 1] == INDENT:
            listed = self.dash_list(token[1], pos + 2)
            if listed is not None:
                value = listed
            else:
                rules = self.property_block()
                value = n.PermissionsBlock(span=self.span_from(pos + 2), rules=rules)
        elif (
            token[1] == "prompt"
            and kinds[pos] == NAME
            and kinds[pos + 1] not in _LAYOUT
            and kinds[pos + 1] not in _NAME_GOES_ON
            and kinds[pos + 1] != ","
        ):
            value = self.unquoted_prompt(pos)
        elif token[1] in _PATTERN_RULES and self.unquoted_pattern_follows(pos):
            value = self.unquoted_patterns(pos)
        elif token[1] == "context" and kinds[pos] == "(" and kinds[pos + 1] == NAME:
            value = self.parenthesised_context()
        else:
            value = self.expression()
            if token[1] == "context" and isinstance(value, n.Name) and kinds[self.pos] == NAME:
                value = self.spaced_context(value)
            elif token[1] == "retry" and self.tokens[self.pos][1] == "times":
                self.times_after_retry()
        if (
            self.kinds[self.pos] == ","
            and token[1] != "model"
            and not isinstance(value, n.PermissionsBlock)
            and not self.starts_property(1)
        ):
            value = self.unbracketed_list(token[1], value)
        return n.Property(span=self.span_after(name_span), name=name, value=value)

    def unquoted_prompt(self, first: int) -> n.StringLit:
        """`prompt: You are a helpful assistant.`: reported, and parsed as that string."""
        span, raw = self.rest_of_line(first)
        found = habits.unquoted_prompt(self.source, span, raw)
        if found.fix is not None:
            self.taken_in(span)
        self.note(found)
        return n.StringLit(span=span, value=raw, parts=(raw,), triple=False)

    def unquoted_pattern_follows(self, pos: int) -> bool:
        """A permission rule's value written as a bare path or glob (`docs/`, `*.md`): more
        than one token on the line (or a stray `**`), none of them a string or a bracket."""
        kinds = self.kinds
        end = pos
        while kinds[end] not in _LAYOUT:
            if kinds[end] in (STRING, "["):
                return False
            end += 1
        # `**/*.md` is one unclosed `**`, `**/docs/**` a discretion: neither is a value here
        return end - pos > 1 or kinds[pos] in (ERROR, DISCRETION)

    def rest_of_line(self, first: int) -> tuple[Span, str]:
        """The span and text of the tokens from ``first`` to the end of the line (parsing
        goes on after them)."""
        end = first
        kinds, tokens = self.kinds, self.tokens
        while kinds[end] not in _LAYOUT:
            end += 1
        head, last = tokens[first], tokens[end - 1]
        span = Span(head[2], last[3], head[4], head[5], last[6], last[7])
        self.pos = end
        return span, self.source.text[span.start : span.end]

    def taken_in(self, span: Span) -> None:
        """Drop the scanner's reports inside ``span``: the fix's quotes take that text in."""
        self.diagnostics[:] = [
            d
            for d in self.diagnostics
            if not (span.start <= d.span.start and d.span.end <= span.end)
        ]

    def unquoted_patterns(self, first: int) -> n.ArrayLit:
        """`write: docs/` or `read: *.md, *.txt` under `permissions:`: reported, and parsed
        as the array of patterns it means."""
        span, raw = self.rest_of_line(first)
        found, patterns = habits.unquoted_patterns(self.source, span, raw)
        if found.fix is not None:
            self.taken_in(span)
        self.note(found)
        elements = tuple(
            n.StringLit(span=span, value=p, parts=(p,), triple=False) for p in patterns
        )
        return n.ArrayLit(span=span, elements=elements)

    def spaced_context(self, first: n.Name) -> n.Expr:
        """`context: notes draft` (names separated by spaces): the grammar's list is
        `[notes, draft]`. One E143 with that safe fix; parsed as the list."""
        names = [first]
        while self.kinds[self.pos] == NAME:
            token = self.tokens[self.pos]
            names.append(n.Name(span=token_span(token), id=token[1]))
            self.pos += 1
        if self.kinds[self.pos] not in _LAYOUT:
            self.fail("expected the end of the statement")
        span = self.source.span(first.span.start, names[-1].span.end)
        self.note(habits.context_in_brackets(self.source, span, names))
        return n.ArrayLit(span=span, elements=tuple(names))

    def parenthesised_context(self) -> n.ArrayLit:
        """`context: (a, b)` (a tuple): the grammar's list is `[a, b]`. One E143 with that
        safe fix; parsed as the list."""
        opener = self.take()
        names = self.name_list(")")
        span = self.span_from(opener)
        self.note(habits.context_in_brackets(self.source, span, names))
        return n.ArrayLit(span=span, elements=names)

    def times_after_retry(self) -> None:
        """`retry: 3 times`: the count alone."""
        self.drop_times("`retry: 3 times` is written `retry: 3`", habits.RETRY_RULE)

    def drop_times(self, message: str, rule: str | None = None) -> None:
        """`times` after a count (`repeat 3 times:`, `retry: 3 times`): reported at the
        word, and parsing goes on after it."""
        times, before = self.tokens[self.pos], self.tokens[self.pos - 1]
        self.note(habits.extra_times(self.source, before, times, message, rule))
        self.pos += 1

    def unbracketed_list(self, prop: str, first: n.Expr) -> n.ArrayLit:
        """`context: research, notes`: a list is written in brackets. One diagnostic (E143
        for `context`, E013 for `skills`, E004 otherwise) with the safe fix that adds them;
        it parses as that array."""
        elements = [first]
        while self.kinds[self.pos] == "," and not self.starts_property(1):
            self.pos += 1
            elements.append(self.nested_postfix())
        start, end = first.span.start, elements[-1].span.end
        span = self.source.span(start, end)
        self.note(habits.unbracketed_list(self.source, prop, span))
        return n.ArrayLit(span=span, elements=tuple(elements))

    def block_scalar(self, prop: str, at: int) -> n.StringLit | None:
        """`prompt: |` (or `>`) with the text indented under it, as YAML writes long text:
        reported and parsed as the `\"\"\"` string it means (what the scanner said inside
        the block is moot: the text is taken as it stands)."""
        reading = habits.yaml_block_text(self, prop, at)
        if reading is None:
            return None
        found, text, end = reading
        lo, hi = text.span.start, text.span.end
        self.diagnostics[:] = [d for d in self.diagnostics if not (lo <= d.span.start < hi)]
        self.note(found)
        self.pos = end
        return text

    def dash_list(self, prop: str, first: int) -> n.ArrayLit | None:
        """A property's list written as YAML does (`skills:` then `- web-search` lines):
        reported and parsed as the array it means, so nothing cascades (the items are read
        as text: what the scanner said about their characters is moot)."""
        reading = habits.yaml_dash_list(self, prop, first)
        if reading is None:
            return None
        found, array, end = reading
        lo, hi = array.span.start, array.span.end
        self.diagnostics[:] = [
            d
            for d in self.diagnostics
            if not (d.code in ("E102", "E107") and lo <= d.span.start < hi)
        ]
        self.note(found)
        self.pos = end
        if self.kinds[self.pos] == DEDENT:
            self.pos += 1
        return array

    def model_id_follows(self, pos: int) -> bool:
        """Does a provider model id written without quotes (`gpt-4.1`, `openai:gpt-4o`)
        follow — several tokens with no space between them, alone on the line?"""
        kinds, tokens = self.kinds, self.tokens
        end = pos
        while kinds[end] not in _LAYOUT and kinds[end] != ERROR:
            if end > pos and tokens[end][2] != tokens[end - 1][3]:
                return False
            end += 1
        return end - pos > 1 and kinds[end] in _LAYOUT

    def model_id(self, pos: int) -> n.Name:
        """The model id as one name, so the checker's E008 can name it and say how to map an
        alias to it (its text is no identifier; only a valid alias passes the checker)."""
        end = pos
        while self.kinds[end] not in _LAYOUT:
            end += 1
        first, last = self.tokens[pos], self.tokens[end - 1]
        span = Span(first[2], last[3], first[4], first[5], last[6], last[7])
        self.pos = end
        return n.Name(span=span, id=self.source.text[span.start : span.end])

    def do(self) -> n.DoBlock | n.DoCall:
        start = self.take()
        if self.kinds[self.pos] == ":":
            self.pos += 1
            body = self.body(required=False, construct="do")
            return n.DoBlock(span=self.span_from(start), body=body)
        name = self.expect_name("':' or a block name after 'do'")
        args: list[n.Expr] = []
        labels: list[n.Name | None] = []
        has_parens = self.kinds[self.pos] == "("
        if has_parens:
            self.pos += 1
            kinds = self.kinds
            self.enter()
            try:
                while kinds[self.pos] != ")":
                    label = None
                    if _is_word(self.tokens[self.pos]) and kinds[self.pos + 1] == ":":
                        label = self.expect_word("an argument name")
                        self.pos += 1
                    labels.append(label)
                    args.append(self.expression())
                    if kinds[self.pos] in _ARGUMENT_STARTS and kinds[self.pos - 1] != ",":
                        self.missing_comma()
                        continue
                    if kinds[self.pos] != ",":
                        break
                    self.pos += 1
                self.expect(")", "')' or ',' in the argument list")
            finally:
                self.depth -= 1
        elif self.kinds[self.pos] in (STRING, NUMBER) and self.kinds[self.pos + 1] in _LAYOUT:
            args.append(self.unparenthesised_argument(name))
            labels.append(None)
            has_parens = True
        return n.DoCall(
            span=self.span_from(start),
            name=name,
            args=tuple(args),
            has_parens=has_parens,
            labels=tuple(labels) if any(labels) else (),
        )

    def missing_comma(self) -> None:
        """`do review("app.py" "security")`: two arguments without the comma between them.
        One E004 with the safe fix that inserts it; the list goes on."""
        previous, token = self.tokens[self.pos - 1], self.tokens[self.pos]
        self.note(habits.missing_comma(self.source, previous, token))

    def unparenthesised_argument(self, name: n.Name) -> n.Expr:
        """`do review "app.py"`: a block's arguments go in parentheses. One E004 with the
        safe fix that adds them; parsed as that call."""
        token = self.tokens[self.pos]
        self.note(habits.unparenthesised_argument(self.source, name, token))
        if token[0] == STRING:
            self.pos += 1
            return string_literal(token)
        return self.number()

    def modifiers(self) -> tuple[n.Modifier, ...]:
        """``( item, ... )`` where an item is ``name: value`` or a bare value."""
        self.enter()
        try:
            return self.modifier_items()
        finally:
            self.depth -= 1

    def modifier_items(self) -> tuple[n.Modifier, ...]:
        self.pos += 1  # '('
        items: list[n.Modifier] = []
        kinds = self.kinds
        while kinds[self.pos] != ")":
            token = self.tokens[self.pos]
            if _is_word(token) and self.peek_kind() == ":":
                name = self.expect_word("a modifier name")
                self.pos += 1
                value = self.expression()
                items.append(n.Modifier(span=self.span_after(name.span), name=name, value=value))
            else:
                value = self.expression()
                items.append(n.Modifier(span=value.span, name=None, value=value))
            if kinds[self.pos] != ",":
                break
            self.pos += 1
        self.expect(")", "')' or ',' in the modifier list")
        return tuple(items)

    def parallel(self) -> n.Parallel | n.ForEach:
        start = self.take()
        modifiers: tuple[n.Modifier, ...] = ()
        has_parens = self.kinds[self.pos] == "("
        if has_parens:
            modifiers = self.modifiers()
        if self.kinds[self.pos] == "for":
            return self.for_each(start, parallel=True, modifiers=modifiers)
        self.expect(":", "':' or 'for' after 'parallel'")
        branches: list[n.ParallelBranch] = []
        self.parallel_levels.append(self.depth + 1)
        try:
            statements = self.body(required=False, construct="parallel")
        finally:
            self.parallel_levels.pop()
        for stmt in statements:
            if isinstance(stmt, n.Assign):
                body = cast(n.Stmt, stmt.value)  # `name = value` binds the branch's result
                branches.append(n.ParallelBranch(span=stmt.span, name=stmt.target, body=body))
            else:
                branches.append(n.ParallelBranch(span=stmt.span, name=None, body=stmt))
        return n.Parallel(
            span=self.span_from(start),
            modifiers=modifiers,
            branches=tuple(branches),
            has_parens=has_parens,
        )

    def for_each(
        self, start: int, *, parallel: bool, modifiers: tuple[n.Modifier, ...]
    ) -> n.ForEach:
        self.pos += 1  # 'for'
        kinds, tokens = self.kinds, self.tokens
        if (
            tokens[self.pos][1] == "each"
            and kinds[self.pos] == NAME
            and kinds[self.pos + 1] == NAME
            and kinds[self.pos + 2] in ("in", ",")
        ):
            each = tokens[self.pos]
            self.report(
                "E004",
                "`for each x in` is written `for x in`",
                token_span(each),
                help="remove `each`",
                fix=Fix(
                    "remove `each`", (Edit(self.source.span(each[2], tokens[self.pos + 1][2]), ""),)
                ),
            )
            self.pos += 1
        item = self.expect_name("a loop variable after 'for'")
        index = None
        if self.kinds[self.pos] == ",":
            self.pos += 1
            index = self.expect_name("an index variable after ','")
        self.expect("in", "'in' after the loop variable")
        collection = self.range_call(start, item, index, parallel) or self.nested_postfix()
        self.expect(":", "':' after the collection")
        body = self.body(required=False, construct="parallel for" if parallel else "for")
        return n.ForEach(
            span=self.span_from(start),
            item=item,
            index=index,
            collection=collection,
            body=body,
            parallel=parallel,
            modifiers=modifiers,
        )

    def range_call(
        self, start: int, item: n.Name, index: n.Name | None, parallel: bool
    ) -> n.ArrayLit | None:
        """`for i in range(5):` (Python), reported; the loop parses over the numbers
        0..N-1, so its body is still checked."""
        reading = habits.range_loop(self, start, self.pos, item, index, parallel)
        if reading is None:
            return None
        found, count = reading
        self.note(found)
        at, self.pos = self.pos, self.pos + 4
        where = self.source.span(self.tokens[at][2], self.tokens[at + 3][3])
        numbers = tuple(
            n.NumberLit(span=where, value=i, raw=str(i)) for i in range(min(count or 0, 1000))
        )
        return n.ArrayLit(span=where, elements=numbers)

    def for_stmt(self) -> n.ForEach:
        return self.for_each(self.pos, parallel=False, modifiers=())

    def repeat(self) -> n.Repeat:
        start = self.take()
        count = self.nested_postfix()
        index = None
        if self.kinds[self.pos] == "as":
            self.pos += 1
            index = self.expect_name("an index variable after 'as'")
        times = self.tokens[self.pos]
        if times[0] == NAME and times[1] == "times" and self.kinds[self.pos + 1] == ":":
            self.drop_times("`repeat 3 times:` is written `repeat 3:`")
        self.expect(":", "':' after the repeat count")
        body = self.body(required=False, construct="repeat")
        return n.Repeat(span=self.span_from(start), count=count, index=index, body=body)

    def modifiers_after_index(self, as_at: Token, index: n.Name) -> tuple[n.Modifier, ...]:
        """`loop as i (max: 3):`: the reference's order is condition, modifiers, then `as`.
        One E004 with the safe fix that swaps the two; the loop parses with its modifiers."""
        open_at = self.tokens[self.pos]
        modifiers = self.modifiers()
        close_end = self.tokens[self.pos - 1][3]
        text = self.source.text
        written = text[open_at[2] : close_end]
        named = text[as_at[2] : index.span.end]
        span = self.source.span(as_at[2], close_end)
        self.report(
            "E004",
            f"The loop's modifiers come before `as`: `{written} {named}`",
            span,
            help=f"write `{written} {named}:`",
            fix=Fix("put the modifiers before `as`", (Edit(span, f"{written} {named}"),)),
            rule='Unbounded Loops, Complete Syntax: "condition comes before modifiers, '
            'modifiers before `as`"',
        )
        return modifiers

    def bare_loop(self) -> n.Loop:
        """`while **c**:` / `until **c**:` at the start of a statement: the grammar's loop
        is `loop while **c**:`. One E004 with that safe fix; it parses as that loop."""
        word = self.tokens[self.pos]
        if self.kinds[self.pos + 1] != DISCRETION:
            self.fail("expected a statement")
        self.report(
            "E004",
            f"`{word[1]} **condition**:` is written `loop {word[1]} **condition**:`",
            token_span(word),
            help=f"write `loop {word[1]}`",
            fix=Fix(
                f"write `loop {word[1]}`", (Edit(self.source.span(word[2], word[2]), "loop "),)
            ),
        )
        return self.loop(bare=True)

    def loop(self, *, bare: bool = False) -> n.Loop:
        start = self.pos if bare else self.take()
        kinds = self.kinds
        kind: str = "loop"
        condition = None
        if kinds[self.pos] in ("until", "while"):
            kind = self.advance()[0]
            condition = self.discretion(f"a **condition** after '{kind}'", (":", "(", "as"))
        modifiers: tuple[n.Modifier, ...] = ()
        has_parens = kinds[self.pos] == "("
        if has_parens:
            modifiers = self.modifiers()
        index = None
        if kinds[self.pos] == "as":
            as_at = self.tokens[self.pos]
            self.pos += 1
            index = self.expect_name("an index variable after 'as'")
            if kinds[self.pos] == "(" and not has_parens:
                modifiers, has_parens = self.modifiers_after_index(as_at, index), True
        self.expect(":", "':' after the loop header")
        body = self.body(required=False, construct="loop")
        return n.Loop(
            span=self.span_from(start),
            kind="until" if kind == "until" else "while" if kind == "while" else "loop",
            condition=condition,
            modifiers=modifiers,
            index=index,
            body=body,
            has_parens=has_parens,
        )


# Tokens that start an argument: one right after another means a missing comma.
_ARGUMENT_STARTS = frozenset((STRING, NUMBER, NAME, "[", "{"))

_PATTERN_RULES = frozenset(("read", "write", "execute"))


_STATEMENTS: dict[str, Callable[[_Parser], n.Stmt]] = {
    "use": _Parser.use,
    "input": _Parser.input_decl,
    "output": _Parser.output,
    "agent": _Parser.agent,
    "block": _Parser.block_def,
    "let": _Parser.binding,
    "const": _Parser.binding,
    "try": _Parser.try_stmt,
    "throw": _Parser.throw,
    "choice": _Parser.choice,
    "if": _Parser.if_stmt,
    "elif": _Parser.orphan_clause,
    "else": _Parser.orphan_clause,
    "catch": _Parser.orphan_clause,
    "finally": _Parser.orphan_clause,
    "option": _Parser.orphan_clause,
}

_PRIMARIES: dict[str, Callable[[_Parser], n.Expr]] = {
    NUMBER: _Parser.number,
    DISCRETION: _Parser.discretion_expr,
    "[": _Parser.array,
    "{": _Parser.object_context,
    "do": _Parser.do,
    "parallel": _Parser.parallel,
    "for": _Parser.for_stmt,
    "repeat": _Parser.repeat,
    "loop": _Parser.loop,
    "while": _Parser.bare_loop,
    "until": _Parser.bare_loop,
}

_ORPHANS = {
    "elif": ("E110", "Elif must follow if"),
    "else": ("E111", "Else must follow if or elif"),
    "catch": ("E113", "'catch' must follow a try block"),
    "finally": ("E113", "'finally' must follow a try block"),
    "option": ("E114", "'option' must be inside a choice block"),
}


def _promote_to_oldest_generation() -> None:
    """Move every tracked object (chiefly the tree just built) to the oldest GC generation
    without scanning it: the tree is long-lived, so walking it through the young generations
    first is wasted work (~25% of parse + check). Full collections still see it. Skipped when
    the application has frozen objects itself, since ``unfreeze`` would release those."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


def parse(source: SourceFile) -> ParseResult:
    """Parse ``source``; never raises. Diagnostics come back sorted by position."""
    # The parser allocates millions of small objects and frees none of them while it runs,
    # so cyclic-GC passes over the growing heap are pure overhead (parse + check ran ~1.6x
    # slower with the collector on).
    collecting = gc.isenabled()
    gc.disable()
    try:
        with deep_recursion():
            parser = _Parser(source)
            program = parser.program()
    finally:
        if collecting:
            _promote_to_oldest_generation()
            gc.enable()
    diagnostics = parser.diagnostics
    diagnostics.sort(key=lambda d: (d.span.start, d.span.end))
    if len(diagnostics) >= MAX_DIAGNOSTICS:
        message = f"Too many errors; stopped reporting after {MAX_DIAGNOSTICS}"
        last = diagnostics[-1].span
        diagnostics.append(diagnostic("E117", message, last, source.path))
    return ParseResult(program=program, diagnostics=tuple(diagnostics), source=source)


def parse_text(text: str, path: str = "<string>") -> ParseResult:
    return parse(SourceFile.from_text(text, path))


def read_source(path: str | Path) -> tuple[SourceFile | None, list[Diagnostic]]:
    """Read and decode a program file. UTF-8 is required (a leading BOM is tolerated); a file
    that cannot be read or decoded yields ``None`` and a positioned diagnostic."""
    name = str(path)
    try:
        if _endless(path):
            raise OSError(0, "not a regular file")
        with Path(path).open("rb") as handle:
            data = handle.read(PROGRAM_LIMIT + 1)  # a larger file is refused unread
    except OSError as error:
        reason = error.strerror or type(error).__name__
        reason = reason[:1].lower() + reason[1:]
        return None, [_unreadable(f"Cannot read file: {reason}", name)]
    return decode_source(data, name)


# The longest programs people write are tens of KiB; a file over this is not a program (a log
# or a data file named by mistake) and would take minutes and gigabytes to scan.
PROGRAM_LIMIT = 64 * 1024 * 1024


def _unreadable(message: str, name: str) -> Diagnostic:
    return diagnostic("E118", message, SourceFile.from_text("", name).span(0, 0), name)


def _endless(path: str | Path) -> bool:
    """A character or block device or a socket: reading it may never end (``/dev/zero``)
    or block forever. FIFOs are read (``prose check <(generate)``); directories fail in
    ``read_bytes`` with their own message."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False  # read_bytes reports why
    return stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISSOCK(mode)


def decode_source(
    data: bytes, path: str = "<string>"
) -> tuple[SourceFile | None, list[Diagnostic]]:
    """Decode program bytes as UTF-8 (BOM tolerated); non-UTF-8 input is an E100 diagnostic
    positioned at the first offending byte."""
    if len(data) > PROGRAM_LIMIT:
        limit = f"{PROGRAM_LIMIT // (1024 * 1024)} MiB"
        return None, [
            _unreadable(f"Cannot read file: larger than the {limit} limit for a program", path)
        ]
    bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    data = data[bom:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        # Position the diagnostic in a lossy decoding so the line and column are meaningful.
        prefix = data[: error.start].decode("utf-8", errors="replace")
        lossy = SourceFile.from_text(
            prefix + data[error.start :].decode("utf-8", errors="replace"), path
        )
        at = len(prefix)
        message = (
            f"File is not valid UTF-8 (byte 0x{data[error.start]:02x} at offset"
            f" {error.start + bom});"
            " OpenProse source must be UTF-8"
        )
        return None, [diagnostic("E100", message, lossy.span(at, at + 1), path)]
    return SourceFile.from_text(text, path), []

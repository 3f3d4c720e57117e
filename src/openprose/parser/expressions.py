"""Parsing expressions: arrows, pipelines, property access, calls, arrays and objects."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from openprose import habits
from openprose import nodes as n
from openprose.depth import MAX_NESTING
from openprose.diagnostics import Edit, Fix
from openprose.parser.constructs import Constructs
from openprose.parser.cursor import (
    _AFTER_KEYWORD,
    _NAME_KINDS,
    _PIPE_OPS,
    _VALUE_END,
    ASK,
    Cursor,
    _is_word,
    _ParseError,
)
from openprose.scanner import (
    ARROW,
    DEDENT,
    DISCRETION,
    EOF,
    ERROR,
    INDENT,
    NAME,
    NEWLINE,
    NUMBER,
    SOFT_KEYWORDS,
    STRING,
    Token,
    string_literal,
    token_span,
)
from openprose.source import new_span


class Expressions(Cursor):
    """Expressions, from arrows down to names and literals."""

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
                return n.new_name(token_span(token), token[1])
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
            if following == STRING and token[1] == ASK:
                self.pos -= 1
                return self.ask()
            if following == "(":
                return self.call(token)
            if following in _AFTER_KEYWORD:
                self.misspelled_keyword(token)
            return n.new_name(token_span(token), token[1])
        if kind == STRING:
            self.pos += 1
            return string_literal(token)
        if kind == "session" or kind == "resume":
            return self.session()
        if kind in SOFT_KEYWORDS:
            self.pos += 1
            return n.new_name(token_span(token), token[1])
        handler = _PRIMARIES.get(kind)
        if handler is not None:
            return handler(self)
        self.fail("expected an expression")

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
            callee=n.new_name(token_span(callee), callee[1]),
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
            values.append(n.new_name(token_span(value), value[1]))
            i += 4
            if kinds[i - 1] == "}":
                break
        opener, closer = tokens[start], tokens[i - 1]
        span = new_span(opener[2], closer[3], opener[4], opener[5], closer[6], closer[7])
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


_PRIMARIES: dict[str, Callable[[Any], n.Expr]] = {
    NUMBER: Cursor.number,
    DISCRETION: Cursor.discretion_expr,
    "[": Expressions.array,
    "{": Expressions.object_context,
    "do": Constructs.do,
    "parallel": Constructs.parallel,
    "for": Constructs.for_stmt,
    "repeat": Constructs.repeat,
    "loop": Constructs.loop,
    "while": Constructs.bare_loop,
    "until": Constructs.bare_loop,
}

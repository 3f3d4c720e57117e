"""Parsing shapes: the declared form of an answer, written after `returns:` (a session) or
between an output's name and its `=` (docs/language.md, Typed results).

    shape   := "list" "of" shape | "schema" STRING | STRING ("|" STRING)*
             | "{" field ("," field)* "}" | WORD
    field   := WORD ":" ["optional"] shape
    block   := NEWLINE INDENT (field NEWLINE)+ DEDENT      (an object, one field a line)

A field whose shape is an object, or a list of objects, may write its fields as a block
under it (`files: list of` then the fields indented)."""

from __future__ import annotations

from openprose import nodes as n
from openprose.depth import MAX_NESTING
from openprose.parser.cursor import Cursor, _is_word_kind, _ParseError
from openprose.scanner import DEDENT, EOF, INDENT, NAME, NEWLINE, STRING, string_literal, token_span

_BLOCK_FOLLOWS = (NEWLINE, INDENT)


class Shapes(Cursor):
    """Shapes of typed results."""

    def shape_value(self) -> n.Shape:
        """The value of `returns:`: fields in an indented block, or a shape on the line."""
        if self._block_follows():
            return self._field_block(self.pos)
        return self.shape()

    def shape(self) -> n.Shape:
        if self.depth >= MAX_NESTING:
            where = token_span(self.tokens[self.pos])
            self.report("E115", f"Shapes nested more than {MAX_NESTING} levels deep", where)
            raise _ParseError
        self.depth += 1
        try:
            return self._shape()
        finally:
            self.depth -= 1

    def _shape(self) -> n.Shape:
        kinds, tokens = self.kinds, self.tokens
        start = self.pos
        kind = kinds[start]
        word = tokens[start][1] if kind == NAME else None
        if word == "list" and kinds[start + 1] == NAME and tokens[start + 1][1] == "of":
            self.pos += 2
            if self._block_follows():  # `files: list of` with the item's fields under it
                item: n.Shape = self._field_block(self.pos)
            else:
                item = self.shape()
            return n.ListType(span=self.span_from(start), item=item)
        if word == "schema" and kinds[start + 1] == STRING:
            self.pos += 2
            source = string_literal(tokens[start + 1])
            return n.SchemaRef(span=self.span_from(start), source=source)
        if kind == STRING:
            options = [string_literal(tokens[start])]
            self.pos += 1
            while kinds[self.pos] == "|" and kinds[self.pos + 1] == STRING:
                options.append(string_literal(tokens[self.pos + 1]))
                self.pos += 2
            return n.EnumType(span=self.span_from(start), options=tuple(options))
        if kind == "{":
            self.pos += 1
            fields = [self.shape_field()]
            while kinds[self.pos] == ",":
                self.pos += 1
                if kinds[self.pos] == "}":  # a trailing comma
                    break
                fields.append(self.shape_field())
            self.expect("}", "'}' after the fields")
            return n.ObjectType(span=self.span_from(start), fields=tuple(fields))
        if kind == NAME:
            self.pos += 1
            return n.ScalarType(span=token_span(tokens[start]), name=tokens[start][1])
        self.fail(
            "expected a shape: string, number, integer, boolean, list of ..., "
            '"a" | "b", { field: shape, ... } or schema "file.json"'
        )
        raise AssertionError  # fail raises

    def shape_field(self) -> n.ShapeField:
        kinds, tokens = self.kinds, self.tokens
        start = self.pos
        if not _is_word_kind(kinds[start]) or kinds[start + 1] != ":":
            self.fail("expected a field ('name: shape')")
        name = n.new_name(token_span(tokens[start]), tokens[start][1])
        self.pos += 2
        following = kinds[self.pos + 1]
        optional = (
            kinds[self.pos] == NAME
            and tokens[self.pos][1] == "optional"
            and (following not in (NEWLINE, ",", "}", EOF) or self._block_follows(1))
        )
        if optional:
            self.pos += 1
        if self._block_follows():  # `author:` with its own fields under it
            shape: n.Shape = self._field_block(self.pos)
        else:
            shape = self.shape()
        return n.ShapeField(span=self.span_from(start), name=name, shape=shape, optional=optional)

    def _block_follows(self, ahead: int = 0) -> bool:
        kinds, at = self.kinds, self.pos + ahead
        return kinds[at] == NEWLINE and kinds[at + 1] == INDENT

    def _field_block(self, start: int) -> n.ObjectType:
        """NEWLINE INDENT (field NEWLINE)* DEDENT: an object's fields, one a line. A broken
        line is reported and skipped; the others still count."""
        kinds = self.kinds
        self.pos += 2
        first = self.pos
        fields: list[n.ShapeField] = []
        while kinds[self.pos] not in (DEDENT, EOF):
            if kinds[self.pos] == NEWLINE:
                self.pos += 1
                continue
            line = self.pos
            try:
                fields.append(self.shape_field())
                if kinds[self.pos] == NEWLINE:
                    self.pos += 1
                elif kinds[self.pos] not in (DEDENT, EOF):
                    self.end_statement()
            except _ParseError:
                self.recover(line)
        span = self.span_from(first) if fields else self.span_from(start)
        if kinds[self.pos] == DEDENT:
            self.pos += 1
        return n.ObjectType(span=span, fields=tuple(fields))

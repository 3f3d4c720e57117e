"""Parsing the constructs that open a body: `do`, `parallel`, `for`, `repeat`, `loop`, and
their `( ... )` modifiers."""

from __future__ import annotations

from typing import cast

from openprose import habits
from openprose import nodes as n
from openprose.diagnostics import Edit, Fix
from openprose.parser.cursor import (
    _ARGUMENT_STARTS,
    _LAYOUT,
    Cursor,
    _is_word,
)
from openprose.scanner import (
    DISCRETION,
    NAME,
    NUMBER,
    STRING,
    Token,
    string_literal,
    token_span,
)


class Constructs(Cursor):
    """`do`, `parallel`, `for`, `repeat`, `loop` and their modifiers."""

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

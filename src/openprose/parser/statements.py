"""Parsing the program, bodies and statements: declarations (`use`, `input`, `output`,
`agent`, `block`), bindings and assignments, `try`/`throw`, `choice`, `if`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, NoReturn, cast

from openprose import habits
from openprose import nodes as n
from openprose.depth import MAX_NESTING
from openprose.diagnostics import Edit, Fix
from openprose.parser.cursor import (
    _BRANCH_STATEMENTS,
    _LAYOUT,
    _LINE_END,
    _NAME_GOES_ON,
    _ORPHANS,
    _PIPE_OPS,
    _PROPERTY_HEADS,
    _STATEMENT_EXPRS,
    _STATEMENT_WORDS,
    Cursor,
    _ParseError,
)
from openprose.scanner import (
    DEDENT,
    DISCRETION,
    EOF,
    ERROR,
    INDENT,
    NAME,
    NEWLINE,
    NUMBER,
    STRING,
    Token,
    token_span,
)
from openprose.source import Span
from openprose.suggest import closest
from openprose.vocabulary import SESSION_PROPERTIES


class Statements(Cursor):
    """The program, bodies and statements."""

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

    def statement_inner(self) -> n.Stmt:
        kind = self.kinds[self.pos]
        handler = _STATEMENTS.get(kind)
        if handler is not None:
            return handler(self)
        if kind == NAME and self.peek_kind() == "=":
            return self.assignment()
        if kind == NAME and self.peek_kind() not in _NAME_GOES_ON and not self.at_ask():
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
        empty = n.new_string_lit(token_span(at), name.id, (name.id,), False)
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
        description = n.new_string_lit(span, raw, (raw,), False)
        return n.Input(span=self.span_from(start), name=name, description=description)

    def output(self) -> n.Output | n.Invalid:
        start = self.take()
        kinds = self.kinds
        here = kinds[self.pos]
        colon = here == NAME and kinds[self.pos + 1] == ":" and kinds[self.pos + 2] not in _LAYOUT
        if here not in _LAYOUT and here != "=" and kinds[self.pos + 1] != "=" and not colon:
            return self.unnamed_output(start)
        name = self.declared_name("an output name", "=")
        shape: n.Shape | None = None
        if colon and self.equals_ahead():  # `output review: { ... } = value`
            self.pos += 1
            shape = self.shape()
            self.expect("=", "'=' after the output's shape")
        elif colon:
            self.binding_colon("output")
        else:
            self.expect("=", "'=' after the output name")
        self.check_keyword_after_equals()
        value = self.expression()
        return n.Output(span=self.span_from(start), name=name, value=value, shape=shape)

    def equals_ahead(self) -> bool:
        """Is there an `=` later on this line (so `output x: ...` declares a shape)?"""
        kinds, at = self.kinds, self.pos
        while kinds[at] not in _LAYOUT:
            if kinds[at] == "=":
                return True
            at += 1
        return False

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
        target = n.new_name(token_span(token), token[1])
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
        return n.new_string_lit(span, text, (text,), False)

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


_STATEMENTS: dict[str, Callable[[Statements], n.Stmt]] = {
    "use": Statements.use,
    "input": Statements.input_decl,
    "output": Statements.output,
    "agent": Statements.agent,
    "block": Statements.block_def,
    "let": Statements.binding,
    "const": Statements.binding,
    "try": Statements.try_stmt,
    "throw": Statements.throw,
    "choice": Statements.choice,
    "if": Statements.if_stmt,
    "elif": Statements.orphan_clause,
    "else": Statements.orphan_clause,
    "catch": Statements.orphan_clause,
    "finally": Statements.orphan_clause,
    "option": Statements.orphan_clause,
}

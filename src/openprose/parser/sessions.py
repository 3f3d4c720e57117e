"""Parsing sessions and the `name: value` properties of sessions and agents (with the
forms people write by habit: unquoted prompts, bare lists, block scalars)."""

from __future__ import annotations

from typing import Literal

from openprose import habits
from openprose import nodes as n
from openprose.depth import MAX_NESTING
from openprose.diagnostics import Edit, Fix
from openprose.parser.cursor import (
    _LAYOUT,
    _NAME_GOES_ON,
    _PATTERN_RULES,
    Cursor,
    _is_word_kind,
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
    STRING,
    string_literal,
    token_span,
)
from openprose.source import Span, new_span

RETURNS = "returns"  # the property whose value is a shape (parser/shapes.py)


class Sessions(Cursor):
    """Sessions and the properties of sessions and agents."""

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
                    name=n.new_name(prompt.span, "prompt"),
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
        return n.new_session(
            self.span_from(keyword_at), kind, prompt, agent, name, tuple(properties)
        )

    def ask(self) -> n.Ask:
        """`ask "question"` (the word `ask` is a keyword only before a string) with its
        properties — `options:`, `default:`, `timeout:` — on the line or indented under it,
        as a session's are."""
        kinds = self.kinds
        keyword_at = self.pos
        question = string_literal(self.tokens[keyword_at + 1])
        self.pos = keyword_at + 2
        properties: list[n.Property] = []
        while kinds[self.pos + 1] == ":" and _is_word_kind(kinds[self.pos]):
            properties.append(self.property(inline=True))
        pos = self.pos
        if (
            kinds[pos] == NEWLINE
            and kinds[pos + 1] == INDENT
            and (kinds[pos + 2] == NAME or self.starts_property(2))
        ):
            properties.extend(self.property_block())
        return n.Ask(
            span=self.span_from(keyword_at), question=question, properties=tuple(properties)
        )

    def prompt_and_agent(self, at: int) -> n.Name:
        """`session "Summarize": writer` (the string at ``at``): reported, and parsed as
        `session: writer` with the prompt as its first property."""
        name = self.tokens[at + 2]
        self.note(habits.prompt_and_agent(self, at))
        self.pos = at + 3
        return n.new_name(token_span(name), name[1])

    def agent_then_prompt(self, at: int) -> n.Property:
        """`session: researcher "Find the sources"` (the string at ``at``): reported, and
        parsed as the `prompt:` property it means."""
        self.note(habits.agent_then_prompt(self, at))
        self.pos = at + 1
        prompt = string_literal(self.tokens[at])
        return n.Property(span=prompt.span, name=n.new_name(prompt.span, "prompt"), value=prompt)

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
        span = new_span(first[2], closer[3], first[4], first[5], closer[6], closer[7])
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
        name_span = new_span(token[2], token[3], token[4], token[5], token[6], token[7])
        name = n.new_name(name_span, token[1])
        pos += 2
        self.pos = pos
        value: n.PropertyValue
        if token[1] == RETURNS:
            value = self.shape_value()
        elif inline:
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
            and not isinstance(
                value,
                n.PermissionsBlock
                | n.ScalarType
                | n.ListType
                | n.EnumType
                | n.ObjectType
                | n.SchemaRef,
            )
            and not self.starts_property(1)
        ):
            value = self.unbracketed_list(token[1], value)
        return n.new_property(self.span_after(name_span), name, value)

    def unquoted_prompt(self, first: int) -> n.StringLit:
        """`prompt: You are a helpful assistant.`: reported, and parsed as that string."""
        span, raw = self.rest_of_line(first)
        found = habits.unquoted_prompt(self.source, span, raw)
        if found.fix is not None:
            self.taken_in(span)
        self.note(found)
        return n.new_string_lit(span, raw, (raw,), False)

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
        span = new_span(head[2], last[3], head[4], head[5], last[6], last[7])
        self.pos = end
        return span, self.source.text[span.start : span.end]

    def unquoted_patterns(self, first: int) -> n.ArrayLit:
        """`write: docs/` or `read: *.md, *.txt` under `permissions:`: reported, and parsed
        as the array of patterns it means."""
        span, raw = self.rest_of_line(first)
        found, patterns = habits.unquoted_patterns(self.source, span, raw)
        if found.fix is not None:
            self.taken_in(span)
        self.note(found)
        elements = tuple(n.new_string_lit(span, p, (p,), False) for p in patterns)
        return n.ArrayLit(span=span, elements=elements)

    def spaced_context(self, first: n.Name) -> n.Expr:
        """`context: notes draft` (names separated by spaces): the grammar's list is
        `[notes, draft]`. One E143 with that safe fix; parsed as the list."""
        names = [first]
        while self.kinds[self.pos] == NAME:
            token = self.tokens[self.pos]
            names.append(n.new_name(token_span(token), token[1]))
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
        span = new_span(first[2], last[3], first[4], first[5], last[6], last[7])
        self.pos = end
        return n.new_name(span, self.source.text[span.start : span.end])

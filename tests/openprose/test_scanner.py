"""Scanner: tokens, layout, strings, discretion, and the diagnostics it owns."""

from __future__ import annotations

from openprose import nodes as n
from openprose.scanner import (
    DEDENT,
    DISCRETION,
    EOF,
    INDENT,
    NAME,
    NEWLINE,
    NUMBER,
    STRING,
    StringValue,
    Token,
    scan,
    token_span,
)
from openprose.source import SourceFile


def tokens_of(text: str) -> list[Token]:
    return scan(SourceFile.from_text(text)).tokens


def kinds(text: str) -> list[str]:
    toks = tokens_of(text)
    assert toks[-2][0] == toks[-1][0] == EOF  # the scanner pads with a second EOF
    return [t[0] for t in toks[:-1]]


def codes(text: str) -> list[tuple[str, int, int]]:
    return [(d.code, d.line, d.column) for d in scan(SourceFile.from_text(text)).diagnostics]


def string_value(text: str) -> StringValue:
    (token,) = [t for t in tokens_of(text) if t[0] == STRING]
    assert isinstance(token[8], StringValue)
    return token[8]


# --- basic tokens ----------------------------------------------------------------------------


def test_keywords_names_and_punctuation() -> None:
    assert kinds('let x = session "a"') == ["let", NAME, "=", "session", STRING, NEWLINE, EOF]
    assert kinds("f(a: [1, 2.5], b: { c })") == [
        NAME, "(", NAME, ":", "[", NUMBER, ",", NUMBER, "]", ",", NAME, ":", "{", NAME, "}", ")",
        NEWLINE, EOF,
    ]  # fmt: skip


def test_hyphenated_identifiers_and_arrow() -> None:
    toks = tokens_of('do review-pipeline\nsession "a"->session "b"')
    assert [(t[0], t[1]) for t in toks[:2]] == [("do", "do"), (NAME, "review-pipeline")]
    assert "->" in [t[0] for t in toks]
    # `a->b` is a name, an arrow and a name; `on-fail` is one name
    assert [t[1] for t in tokens_of("a->b on-fail")][:4] == ["a", "->", "b", "on-fail"]


def test_numbers_carry_values() -> None:
    toks = tokens_of("repeat 3\nx = 2.5\ny = -1")
    assert [t[8] for t in toks if t[0] == NUMBER] == [3, 2.5, -1]


def test_positions_are_one_based_and_exact() -> None:
    toks = tokens_of("agent a:\n  model: sonnet\n")
    sonnet = next(t for t in toks if t[1] == "sonnet")
    span = token_span(sonnet)
    assert (span.line, span.column, span.end_line, span.end_column) == (2, 10, 2, 16)
    assert (span.start, span.end) == (18, 24)


# --- layout ----------------------------------------------------------------------------------


def test_indent_and_dedent() -> None:
    assert kinds("do:\n  a\n  b\nc\n") == [
        "do",
        ":",
        NEWLINE,
        INDENT,
        NAME,
        NEWLINE,
        NAME,
        NEWLINE,
        DEDENT,
        NAME,
        NEWLINE,
        EOF,
    ]


def test_dedents_close_at_end_of_file() -> None:
    assert kinds("do:\n  do:\n    a")[-4:] == [NEWLINE, DEDENT, DEDENT, EOF]


def test_blank_and_comment_lines_do_not_affect_layout() -> None:
    text = "do:\n  a\n\n      # deep comment\n  b\n"
    assert kinds(text) == ["do", ":", NEWLINE, INDENT, NAME, NEWLINE, NAME, NEWLINE, DEDENT, EOF]


def test_comments_are_collected_not_tokens() -> None:
    result = scan(SourceFile.from_text('session "a # not a comment"  # real\n#\n'))
    assert [c.text for c in result.comments] == [" real", ""]
    assert (result.comments[0].span.line, result.comments[0].span.column) == (1, 30)
    assert string_value('session "a # not a comment"').value == "a # not a comment"


def test_implicit_line_joining_inside_brackets() -> None:
    text = "let x = [\n  a,\n      b\n]\ncall(k: 1,\n  j: 2)\n"
    assert kinds(text).count(NEWLINE) == 2
    assert INDENT not in kinds(text)


def test_unclosed_bracket_stops_at_next_statement() -> None:
    # E109 at the end of line 1; line 2 is still scanned as its own statement
    assert codes('let x = [a, b\nsession "next"\n') == [("E109", 1, 9)]
    assert kinds('let x = [a, b\nsession "next"\n')[-4:] == ["session", STRING, NEWLINE, EOF]


def test_bracket_contents_may_sit_at_the_openers_indentation() -> None:
    text = 'let x = [\n"a",\nb\n]\ncall(\nk: 1\n)\n'
    assert codes(text) == []
    assert kinds(text).count(NEWLINE) == 2


def test_unclosed_bracket_before_a_complete_line() -> None:
    # `foo(k: 1)` could not continue `(a` (no comma), so the bracket was never closed
    assert codes("let x = (a\nfoo(k: 1)\n") == [("E109", 1, 9)]
    assert kinds("let x = (a\nfoo(k: 1)\n")[-8:-2] == [NAME, "(", NAME, ":", NUMBER, ")"]
    assert codes("let x = (a,\nfoo(k: 1))\n") == []


def test_unclosed_bracket_at_end_of_file() -> None:
    assert codes("let x = (a") == [("E109", 1, 9)]


def test_inconsistent_dedent() -> None:
    assert codes("do:\n    a\n  b\n") == [("E103", 3, 1)]
    assert codes("do:\n    a\nb\n") == []


def test_pipe_continuation_line_may_open_a_level() -> None:
    # the `|` line sits between the `let` (0) and the map body (4): no E103
    text = 'let x = items | map:\n    session "a"\n  | filter:\n    session "b"\n'
    assert codes(text) == []


def test_tabs_are_a_diagnostic() -> None:
    assert codes('do:\n\tsession "a"\n') == [("E101", 2, 1)]
    assert codes('do:\n  \tsession "a"\n') == [("E101", 2, 3)]
    assert codes('session\t"a"\t# tabs between tokens are whitespace\n') == []
    assert codes('session "a\tb"\n') == []  # a tab inside a string is content


def test_a_blank_or_comment_line_may_hold_tabs() -> None:
    # nothing on the line is indented, so there is no indentation to get wrong
    assert codes('do:\n  session "a"\n\t\n  \t \n\t# note\n  session "b"\n') == []
    assert kinds('do:\n  session "a"\n\t\n  session "b"\n') == kinds(
        'do:\n  session "a"\n\n  session "b"\n'
    )


def _tab_fixes(text: str) -> list[tuple[str, bool]]:
    found = scan(SourceFile.from_text(text)).diagnostics
    return [(e.text, d.fix.safe) for d in found if d.fix for e in d.fix.edits]


def test_tabs_fix_to_four_spaces_a_tab_safely_only_in_a_tab_indented_file() -> None:
    # four columns a tab is the width the layout used, so the fix keeps the structure
    assert _tab_fixes('do:\n\tsession "a"\n\t\tcontext: []\n') == [
        ("    ", True),
        ("        ", True),
    ]
    # a file that also indents with spaces: the tab's width is a guess, offered only
    assert _tab_fixes('do:\n  session "a"\n\tsession "b"\n') == [("    ", False)]


def test_spaces_after_opening_triple_quotes_are_not_text() -> None:
    assert codes('session """  \t\nline\n"""\n') == []
    assert string_value('session """   \nline\n"""\n').value == "line\n"
    assert string_value('session """  \r\nline\r\n"""\r\n').value == "line\n"
    assert codes('session """  text\n"""\n') == [("E106", 1, 9)]


def test_a_name_with_letters_outside_ascii_is_one_error_and_one_name() -> None:
    found = scan(SourceFile.from_text('let résumé = session "a"\n')).diagnostics
    assert [(d.code, d.column) for d in found] == [("E102", 5)]
    assert "`résumé`" in found[0].message and "`resume`" in found[0].help
    assert kinds("let résumé = x\n")[:3] == ["let", NAME, "="]
    assert codes("let ascii_start_é = x\n") == [("E102", 1, 5)]
    assert codes("let café-bar = x\n") == [("E102", 1, 5)]
    # symbols are still single bad characters
    assert codes('let x = session "a" « \n')[0][0] == "E102"


def test_operator_characters_say_the_grammar_has_none() -> None:
    (found,) = scan(SourceFile.from_text("let x = depth + 1\n")).diagnostics
    assert found.code == "E102" and "no operators" in found.message


def test_crlf_and_lf_give_the_same_tokens() -> None:
    text = 'agent a:\n  model: sonnet\nsession """\nx\n"""\n'

    def comparable(toks: list[Token]) -> list[tuple[str, object]]:
        return [(t[0], t[8].value if isinstance(t[8], StringValue) else t[8]) for t in toks]

    assert comparable(tokens_of(text)) == comparable(tokens_of(text.replace("\n", "\r\n")))


def test_trailing_whitespace_at_end_of_text() -> None:
    for text in ('session "a"   ', 'session "a"\n   ', "  ", 'session "a" \r'):
        assert codes(text) == []


def test_byte_order_mark_is_ignored() -> None:
    assert kinds('\ufeffsession "a"') == ["session", STRING, NEWLINE, EOF]
    assert codes('\ufeffsession "a"') == []


def test_unexpected_characters_are_grouped() -> None:
    assert codes('session @@@ "a"\nlet x = 1 $\n') == [("E102", 1, 9), ("E102", 2, 11)]
    assert codes("\x00\x01\x02") == [("E102", 1, 1)]


# --- strings ---------------------------------------------------------------------------------


def test_escape_sequences_decode() -> None:
    value = string_value(r'session "a\\b \"q\" \n \t \{x} \}"')
    assert value.value == 'a\\b "q" \n \t {x} }'
    assert value.parts == ('a\\b "q" \n \t {x} }',)  # \{ never starts an interpolation


def test_unknown_escape_is_E002_at_the_backslash() -> None:
    assert codes('session "ok"\nsession "bad \\q here"\n') == [("E002", 2, 14)]


def test_unterminated_string_is_E001() -> None:
    assert codes('session "Hello\nsession "next"\n') == [("E001", 1, 9)]
    assert codes('session "ends with backslash\\') == [("E001", 1, 9)]


def test_interpolation_parts_and_spans() -> None:
    value = string_value('session "Hi {name}, see {result.findings}!"')
    assert value.value == "Hi {name}, see {result.findings}!"
    text0, first, text1, second, text2 = value.parts
    assert (text0, text1, text2) == ("Hi ", ", see ", "!")
    assert isinstance(first, n.Interpolation) and isinstance(second, n.Interpolation)
    assert (first.name, first.path) == ("name", ())
    assert (second.name, second.path) == ("result", ("findings",))
    assert (first.span.line, first.span.column, first.span.end_column) == (1, 13, 19)


def test_empty_and_non_identifier_braces_are_literal() -> None:
    assert string_value('session "{} and { x } and {\\"a\\": 1}"').parts == (
        '{} and { x } and {"a": 1}',
    )
    assert string_value('session "{review-pipeline}"').parts[0] == n.Interpolation(
        span=token_span(tokens_of("x")[0]), name="review-pipeline"
    )


def test_triple_string_drops_the_opening_newline_only() -> None:
    value = string_value('session """\n  indented\n\nlast\n"""')
    assert value.value == "  indented\n\nlast\n"
    assert value.triple


def test_triple_string_interpolation_across_lines() -> None:
    value = string_value('session """\nA: {a}\nB: {b}\n"""')
    interps = [p for p in value.parts if isinstance(p, n.Interpolation)]
    assert [(i.name, i.span.line, i.span.column) for i in interps] == [("a", 2, 4), ("b", 3, 4)]


def test_triple_string_token_spans_lines() -> None:
    toks = tokens_of('session """\nx\n"""\nsession "y"')
    span = token_span(toks[1])
    assert (span.line, span.column, span.end_line, span.end_column) == (1, 9, 3, 4)
    assert token_span(toks[4]).line == 4


def test_triple_string_must_open_with_a_newline() -> None:
    assert codes('session """text\n"""') == [("E106", 1, 9)]
    assert codes('session """\ntext\n"""') == []


def test_unterminated_triple_string_is_E001() -> None:
    assert codes('session "ok"\nsession """\nnever closed\n') == [("E001", 2, 9)]


# --- discretion ------------------------------------------------------------------------------


def test_discretion_single_and_triple() -> None:
    toks = tokens_of("if **the code is safe**:\nloop until ***\n  a\n  b\n***:\n")
    discs = [t for t in toks if t[0] == DISCRETION]
    assert [d[8] for d in discs] == ["the code is safe", "\n  a\n  b\n"]
    assert (token_span(discs[1]).line, token_span(discs[1]).end_line) == (2, 5)


def test_unterminated_discretion() -> None:
    assert codes('if **never closed:\n  session "a"\n') == [("E107", 1, 4)]
    assert codes("if ***\nnever closed\n") == [("E108", 1, 4)]
    assert codes('if **closed**:\n  session "a"\n') == []


def test_overlong_number_is_E122_not_a_crash() -> None:
    # int() refuses more than 4300 digits; the scanner reports such a literal instead.
    digits = "9" * 5000
    assert codes(f'repeat {digits}:\n  session "x"\n') == [("E122", 1, 8)]
    assert codes(f'loop (max: {digits}.5):\n  session "x"\n') == [("E122", 1, 12)]
    # a thousand characters is still a number (and prints back)
    thousand = "9" * 1000
    assert [t[8] for t in tokens_of(f"repeat {thousand}:") if t[0] == NUMBER] == [int(thousand)]


def test_lone_carriage_return_is_reported_once() -> None:
    # Old Mac line endings: lines must end with LF or CRLF. One diagnostic at the first lone
    # CR (the parser then skips that line quietly), never "Unexpected token 'session'".
    assert codes('session "a"\rsession "b"\rsession "c"\r') == [("E102", 1, 12)]
    (diagnostic,) = scan(SourceFile.from_text("agent a:\n  model: sonnet\r  \n")).diagnostics
    assert "LF or CRLF" in diagnostic.message and (diagnostic.line, diagnostic.column) == (2, 16)
    # a comment followed by a lone CR does not swallow the code after it, nor indent it
    assert codes('# header\rsession "x"\n') == [("E102", 1, 9)]
    # CR before LF, and a CR ending the text, are line endings
    assert codes('session "a"  \r\nsession "b"\r') == []


def test_megabyte_strings_scan_in_bounded_memory() -> None:
    # A string's body must not cost backtracking state per character: with the pattern
    # written as alternatives in one repeat, a 1 MB prompt took ~280 MB while scanning.
    import tracemalloc

    body = ("a" * 99 + "\\n") * 10_000  # 1 MB, one escape per 100 characters
    cases = [
        ('session "' + body + '"\n', STRING),
        ('session """\n' + body + '\n"""\n', STRING),
        ('session """\n' + body + "\n", "ERROR"),  # unterminated: the engine tries to the end
    ]
    for text, kind in cases:
        source = SourceFile.from_text(text)
        tracemalloc.start()
        try:
            tokens = scan(source).tokens
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert tokens[1][0] == kind
        assert peak < 20 * len(text), (kind, peak)


def test_a_name_followed_by_a_non_ascii_symbol_is_still_a_name() -> None:
    # `try→`, `a✓`: the symbol is the bad character, not the name before it
    assert kinds("try→\n")[:1] == ["try"]
    assert [(d.code, d.column) for d in scan(SourceFile.from_text("a✓\n")).diagnostics] == [
        ("E102", 2)
    ]

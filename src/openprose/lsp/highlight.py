"""Semantic tokens: the scanner's tokens, with names coloured by what the index says they are.

A string's ``{name}`` interpolations are tokens of their own. Multi-line tokens (triple-quoted
strings, ``***`` discretions) are cut at line ends, since clients need not support tokens that
span lines.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from lsprotocol import types as lsp

from openprose import nodes as n
from openprose.lsp.documents import Analysis
from openprose.lsp.index import Definition, PropertyName, Reference
from openprose.parser.cursor import ASK
from openprose.scanner import DISCRETION, KEYWORDS, NAME, NUMBER, STRING, Token

TOKEN_TYPES = [
    "keyword",
    "string",
    "number",
    "comment",
    "operator",
    "variable",
    "parameter",
    "property",
    "class",
    "function",
    "namespace",
    "enumMember",
    "macro",
]
TOKEN_MODIFIERS = ["declaration", "readonly"]
LEGEND = lsp.SemanticTokensLegend(token_types=TOKEN_TYPES, token_modifiers=TOKEN_MODIFIERS)

_TYPE = {name: index for index, name in enumerate(TOKEN_TYPES)}
_DECLARATION = 1
_READONLY = 2
# Token kinds coloured by kind alone.
_SIMPLE = {
    NUMBER: "number",
    DISCRETION: "macro",
    "->": "operator",
    "|": "operator",
    "=": "operator",
}
_BY_NAMESPACE = {
    "agent": "class",
    "block": "function",
    "program": "namespace",
    "variable": "variable",
    "argument": "parameter",
    "output-field": "property",
}

# (start offset, end offset, type, modifiers)
Piece = tuple[int, int, str, int]


def semantic_tokens(
    analysis: Analysis, within: tuple[int, int] | None = None
) -> lsp.SemanticTokens:
    """The document's tokens, or those overlapping the offsets ``within`` (a range request:
    the editor colours what is on screen first)."""
    pieces = list(_pieces(analysis))
    if within is not None:
        start, end = within
        pieces = [p for p in pieces if p[1] > start and p[0] < end]
    pieces.sort(key=lambda p: p[0])
    return lsp.SemanticTokens(data=_encode(analysis, pieces))


def token_edits(old: Sequence[int], new: Sequence[int]) -> list[lsp.SemanticTokensEdit]:
    """``old`` turned into ``new`` by one edit of the changed middle (none when equal): a
    keystroke changes a token or two, so the editor receives a few numbers, not all."""
    if old == new:
        return []
    limit = min(len(old), len(new))
    prefix = 0
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    prefix -= prefix % 5  # whole tokens: 5 numbers each
    suffix = 0
    while suffix < limit - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    suffix -= suffix % 5
    return [
        lsp.SemanticTokensEdit(
            start=prefix,
            delete_count=len(old) - prefix - suffix,
            data=new[prefix : len(new) - suffix],
        )
    ]


def _pieces(analysis: Analysis) -> list[Piece]:
    index = analysis.index
    spots: dict[int, Definition | Reference | PropertyName] = {}
    everything: list[Definition | Reference | PropertyName] = [
        *index.definitions,
        *index.references,
        *index.properties,
    ]
    for each in everything:
        spots.setdefault(each.span.start, each)
    words = {  # names written as property values: `model: sonnet`, `bash: deny`
        p.value.span.start for p in index.properties if isinstance(p.value, n.Name)
    }
    found: list[Piece] = []
    append = found.append
    simple = _SIMPLE
    previous: Token | None = None
    for token in analysis.tokens:
        kind = token[0]
        if kind == NAME or kind in KEYWORDS:
            start = token[2]
            spot = spots.get(start)
            if spot is not None:
                append((start, token[3], *_classify(spot)))
            elif kind == NAME:
                append((start, token[3], "enumMember" if start in words else "variable", 0))
            else:
                append((start, token[3], "keyword", 0))
        elif kind == STRING:
            if previous is not None and previous[0] == NAME and previous[1] == ASK:
                found[-1] = (previous[2], previous[3], "keyword", 0)  # `ask "question"`
            found.extend(_string(token, spots))
        elif kind in simple:
            append((token[2], token[3], simple[kind], 0))
        previous = token
    for comment in analysis.result.program.comments:
        found.append((comment.span.start, comment.span.end, "comment", 0))
    return found


def _classify(spot: Definition | Reference | PropertyName) -> tuple[str, int]:
    if isinstance(spot, PropertyName):
        return "property", 0
    if isinstance(spot, Definition):
        if spot.kind == "scoped":
            kind = "parameter" if isinstance(spot.node, n.BlockDef) else "variable"
            return kind, _DECLARATION | _READONLY
        modifiers = _DECLARATION | (_READONLY if spot.kind == "const" else 0)
        return _BY_NAMESPACE[spot.namespace], modifiers
    return _BY_NAMESPACE[spot.namespace], 0


def _string(token: Token, spots: dict[int, Definition | Reference | PropertyName]) -> list[Piece]:
    """A string token, with each ``{name}`` inside it as a variable token."""
    start, end = token[2], token[3]
    pieces: list[Piece] = []
    at = start
    for part in getattr(token[8], "parts", ()):
        if isinstance(part, n.Interpolation):
            span = part.span
            if span.start > at:
                pieces.append((at, span.start, "string", 0))
            name_start = span.start + 1
            spot = spots.get(name_start)
            kind = _classify(spot)[0] if spot is not None else "variable"
            pieces.append((name_start, name_start + len(part.name), kind, 0))
            at = name_start + len(part.name)
    if end > at:
        pieces.append((at, end, "string", 0))
    return pieces


def _encode(analysis: Analysis, pieces: list[Piece]) -> list[int]:
    """LSP's relative encoding, one token per line piece, in client units. ``pieces`` are
    sorted and do not overlap, so the line they start on only moves forward."""
    source = analysis.source
    lines = analysis.lines
    text = source.text
    starts = source.line_starts
    last_line = len(starts) - 1
    ascii_lines: dict[int, bool] = {}
    data: list[int] = []
    previous_line = previous_start = line = 0
    for start, end, kind, modifiers in pieces:
        type_index = _TYPE[kind]
        while start < end:
            if start < starts[line]:
                line = bisect_right(starts, start) - 1
            while line < last_line and starts[line + 1] <= start:
                line += 1
            line_start = starts[line]
            line_end = text.find("\n", start, end)
            stop = end if line_end == -1 else line_end
            if text[stop - 1 : stop] == "\r" and stop - 1 >= start:
                stop -= 1
            if stop > start:
                plain = ascii_lines.get(line)
                if plain is None:
                    following = starts[line + 1] if line < last_line else len(text)
                    plain = ascii_lines[line] = text[line_start:following].isascii()
                if plain:
                    first, after = start - line_start, stop - line_start
                else:
                    first = lines.units(line, start - line_start)
                    after = lines.units(line, stop - line_start)
                delta_line = line - previous_line
                delta_start = first - previous_start if delta_line == 0 else first
                data += (delta_line, delta_start, after - first, type_index, modifiers)
                previous_line, previous_start = line, first
            if line_end == -1:
                break
            start = line_end + 1
    return data

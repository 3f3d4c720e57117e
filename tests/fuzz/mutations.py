"""Inputs for fuzzing: the corpus files, mutated by hypothesis-chosen edits."""

from __future__ import annotations

from pathlib import Path

from hypothesis import strategies as st

CORPUS = Path(__file__).parent / "corpus"
PLSP_EXAMPLES = Path(__file__).parents[2] / "examples" / "plsp"

# Tokens that have broken parsers before: long numbers, control and bidi characters,
# lone surrogates in JSON escapes, deep nesting, BOMs, line-end variants, near-syntax.
TOKENS = [
    b"9" * 5000,
    b"-" + b"1" * 4400,
    b"1e999",
    b"NaN",
    b"\x1b[2J",
    b"\xe2\x80\xae",
    b"\\ud800",
    b'"\\udc00"',
    b"[" * 3000,
    b"{" * 3000,
    b"\xef\xbb\xbf",
    b"\r\n",
    b"\r",
    b"\x00",
    b"\xff\xfe",
    b'{"messages": 1}',
    b"!<g>--minor",
    b"!<e> --<x>",
    b"[Version=v1.5 | Tag=q_99999999999999999999999 | Cycle=9/3]",
    b"<o_f>",
    b"S{$a:",
    b"}S",
    b"INSTR:@if:$a>1?@set:$b=2:@del:$c;",
    b'"refers_to": ["',
    b'"seq": 18446744073709551616',
    b'"session_id": "S", "seq": 1',
]


def corpus(*patterns: str) -> list[bytes]:
    files: list[Path] = []
    for pattern in patterns:
        files += sorted(CORPUS.glob(pattern)) + sorted(PLSP_EXAMPLES.glob(pattern))
    return [path.read_bytes() for path in files]


@st.composite
def mutated(draw: st.DrawFn, seeds: list[bytes]) -> bytes:
    """A seed with a few edits: flips, cuts, duplications, splices and hostile tokens."""
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(0, 6))):
        edit = draw(st.sampled_from(["flip", "cut", "copy", "token", "splice", "insert"]))
        at = draw(st.integers(0, len(data)))
        if edit == "flip" and data:
            index = min(at, len(data) - 1)
            data[index] ^= 1 << draw(st.integers(0, 7))
        elif edit == "cut":
            del data[at : at + draw(st.integers(1, 64))]
        elif edit == "copy":
            piece = data[at : at + draw(st.integers(1, 256))]
            where = draw(st.integers(0, len(data)))
            data[where:where] = piece
        elif edit == "token":
            data[at:at] = draw(st.sampled_from(TOKENS))
        elif edit == "splice":
            other = draw(st.sampled_from(seeds))
            start = draw(st.integers(0, len(other)))
            data[at:] = other[start:]
        else:
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
    return bytes(data)


def text(data: bytes) -> str:
    """The bytes as a str the way a Python caller could hand them over (lone surrogates
    for undecodable bytes, as argv and os.fsdecode give them)."""
    return data.decode("utf-8", "surrogateescape")

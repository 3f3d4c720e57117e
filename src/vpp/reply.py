"""Reading an assistant message into header, body and footer, leniently."""

from __future__ import annotations

import re
from dataclasses import dataclass

from vpp.footer import Footer, looks_like_footer, parse_footer
from vpp.versions import USER_TAGS, Version

# Line 1 when it starts with something tag-shaped, also `**<q>**` or `` `<q>` ``.
_HEADER_LIKE = re.compile(r"^\s*([*`]*)(!?)<([a-z_]+)>([*`]*)(.*)$")
_FENCE = re.compile(r"[ \t]*(?:`{3,}|~{3,})[\w.+-]*[ \t]*")


@dataclass(frozen=True)
class Header:
    """Line 1 of a reply when it starts with something tag-shaped."""

    line: int
    raw: str
    tag: str
    bang: bool
    decorated: bool  # Markdown marks around the tag
    rest: str  # text after the tag (and its marks) on the same line

    @property
    def bare(self) -> bool:
        # Trailing spaces and tabs are not text (the command line ignores them too);
        # leading ones are: indented, the line is no longer the tag at column 1.
        return self.raw.rstrip(" \t") == f"<{self.tag}>"


@dataclass(frozen=True)
class Reply:
    """An assistant message split into its parts; line numbers are 1-based."""

    lines: tuple[str, ...]
    header: Header | None
    body_start: int  # first body line
    body_end: int  # one past the last body line
    footer: Footer | None
    footer_line: int | None
    trailing_start: int | None  # first non-blank line after the footer
    fence_line: int | None = None  # a Markdown code fence opening the reply (framing)

    def body_lines(self) -> list[tuple[int, str]]:
        return [
            (number, self.lines[number - 1]) for number in range(self.body_start, self.body_end)
        ]

    @property
    def body(self) -> str:
        return trim_blank_lines([text for _, text in self.body_lines()])

    @property
    def trailing(self) -> str:
        if self.trailing_start is None:
            return ""
        return trim_blank_lines(list(self.lines[self.trailing_start - 1 :]))


def read_reply(message: str, version: Version = "1.4") -> Reply:
    """Split `message` into header, body and footer without judging it."""
    lines = tuple(message.replace("\r\n", "\n").split("\n"))
    filled = [number for number, text in enumerate(lines, 1) if text.strip()]
    if not filled:
        return Reply(lines, None, 1, 1, None, None, None)
    fence = None
    # A reply wrapped in a code fence: read what it wraps, so the one problem (the
    # fence) is reported, not a missing header and a nested one.
    if (
        len(filled) > 1
        and _FENCE.fullmatch(lines[filled[0] - 1])
        and _read_header(filled[1], lines[filled[1] - 1]) is not None
    ):
        fence = filled.pop(0)
        if _FENCE.fullmatch(lines[filled[-1] - 1]):
            filled.pop()
    header = _read_header(filled[0], lines[filled[0] - 1])
    body_start = filled[0] + 1 if header else filled[0]
    footer_line = next(
        (n for n in reversed(filled) if n >= body_start and looks_like_footer(lines[n - 1])), None
    )
    if footer_line is None:
        return Reply(lines, header, body_start, filled[-1] + 1, None, None, None, fence)
    footer = parse_footer(lines[footer_line - 1], version)
    trailing = next((n for n in filled if n > footer_line), None)
    return Reply(lines, header, body_start, footer_line, footer, footer_line, trailing, fence)


def _read_header(number: int, text: str) -> Header | None:
    match = _HEADER_LIKE.match(text)
    if match is None or match.group(3) not in USER_TAGS:  # e.g. an HTML `<table>` line
        return None
    decorated = bool(match.group(1) or match.group(4))
    if decorated and match.group(5).strip():  # "`<g>` is conceptual ..." is body text
        return None
    return Header(number, text, match.group(3), bool(match.group(2)), decorated, match.group(5))


def trim_blank_lines(lines: list[str]) -> str:
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)

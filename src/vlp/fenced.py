"""Messages in Markdown: a chat answer or a document with fenced JSON blocks.

People paste what a model or a page shows: prose, then a ```json block holding a message
(pretty-printed or one a line), more prose, another block. Read line by line, every prose
line and every line of a pretty-printed message was a VLP001 of its own. Here the blocks
are read as JSON (each line keeps its number) and the text around them is one problem.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FENCE = re.compile(r"[ \t]*(`{3,}|~{3,})[ \t]*([\w.+-]*)[ \t]*\r?")
#: Info strings of a block that may hold messages (none, or a JSON language).
_JSON_LANGUAGES = {"", "json", "jsonl", "ndjson", "json5", "jsonc", "javascript", "js"}
#: How a line of JSON starts: a line outside the blocks starting otherwise is prose.
_JSON_START = tuple('{}[]",')


@dataclass(frozen=True, slots=True)
class Markdown:
    """The JSON blocks (first and last line of their content, 1-based), the lines outside
    them that look like JSON (``loose``: messages pasted without a fence) and the other
    non-blank lines outside them (``prose``; fences of JSON blocks excepted)."""

    blocks: list[tuple[int, int]]
    loose: list[int]
    prose: list[int]


def read_markdown(text: str) -> Markdown | None:
    """The blocks and prose of ``text``, or None when it is not Markdown around JSON
    blocks (no JSON block, or nothing outside the blocks but JSON-looking lines)."""
    lines = text.split("\n")
    blocks: list[tuple[int, int]] = []
    prose: list[int] = []

    def close(start: int, end: int, language: str, fences: list[int]) -> None:
        """The block whose content is lines start+1 .. end-1: messages, or text."""
        content = [n for n in range(start + 1, end) if lines[n - 1].strip()]
        opens_json = bool(content) and lines[content[0] - 1].lstrip()[:1] in "{["
        if language in _JSON_LANGUAGES and opens_json:
            blocks.append((start + 1, end - 1))
        else:
            prose.extend(sorted([*fences, *content]))  # not messages: text like the rest

    opened: tuple[int, str, str] | None = None  # (line, fence, language)
    for number, line in enumerate(lines, 1):
        fence = _FENCE.fullmatch(line)
        if opened is None:
            if fence is not None:
                opened = (number, fence.group(1), fence.group(2).lower())
            elif line.strip():
                prose.append(number)
            continue
        start, marker, language = opened
        if fence is None or fence.group(2) or not fence.group(1).startswith(marker):
            continue
        opened = None
        close(start, number, language, [start, number])
    if opened is not None:  # an unclosed fence: the rest is its content
        close(opened[0], len(lines) + 1, opened[2], [opened[0]])
    loose = [n for n in prose if lines[n - 1].lstrip().startswith(_JSON_START)]
    if not blocks or len(loose) == len(prose):
        return None
    kept = set(loose)
    return Markdown(blocks, loose, sorted(n for n in prose if n not in kept))


def only_lines(data: bytes, first: int, last: int, also: frozenset[int] = frozenset()) -> bytes:
    """``data`` with every line emptied but lines ``first`` to ``last`` and those in
    ``also``: line numbers stay."""
    lines = data.split(b"\n")
    return b"\n".join(
        line if first <= number <= last or number in also else b""
        for number, line in enumerate(lines, 1)
    )


def prose_problem_text(markdown: Markdown) -> str:
    """The one problem for the text around the blocks: where it is, what was read."""
    count = len(markdown.blocks)
    return (
        f"not JSON: text outside the {count} JSON code block(s) "
        f"({_ranges(markdown.prose)}); the blocks' messages were read. A VLP stream holds "
        "only messages: keep the blocks' JSON, one message a line"
    )


def _ranges(numbers: list[int]) -> str:
    spans: list[list[int]] = []
    for number in numbers:
        if spans and number == spans[-1][1] + 1:
            spans[-1][1] = number
        else:
            spans.append([number, number])
    shown = [str(a) if a == b else f"{a}-{b}" for a, b in spans[:6]]
    more = f" and {len(spans) - 6} more" if len(spans) > 6 else ""
    word = "line" if len(numbers) == 1 else "lines"
    return f"{word} {', '.join(shown)}{more}"

"""Plain-text PLSP transcripts: the debugging sequence of seed §7 as people paste it.

    INSTR: @set:$p="run";@set:$t=75;
    S{}S                                  <- the previous state (optional)
    S{$p:"run";$t:75;}S                   <- the model's reply

A line starting with `INSTR:` opens a cycle; everything up to the next such line belongs
to it. With two or more blocks in a cycle the first is the previous state and the rest is
the reply; with one block it is the reply and the previous state is the last accepted one
(`S{}S` before the first cycle). A `Previous`/`Prev`/`Next` label before a block (the
seed's names, with or without a colon) is framing, as are blank lines, code fences and
the speaker labels of a pasted chat (`User:`, `**Assistant:**`, `Human:`, `ChatGPT said:`,
`## Model`) at the start of a line.
The middleware's own trace is NDJSON (`plsp.trace`); this reads what other tools print.
"""

from __future__ import annotations

import re
from dataclasses import replace

from plsp.diagnostics import ParseError, Violation
from plsp.instr import PREFIX, parse_instr
from plsp.syntax import block_spans, parse
from plsp.verify import verify

__all__ = ["CycleVerdict", "check_text", "looks_like_text_transcript"]

# `Previous S{...}S`, `Next state: S{...}S`, or the label alone on its line (the block in a
# code fence below it).
_LABEL = re.compile(
    r"^[ \t]*(?:previous|prev|next)(?:[ \t]+state)?[ \t]*:?[ \t]*(?=S\{|\r?$)",
    re.IGNORECASE | re.MULTILINE,
)
_EMPTY = "S{}S"
# A chat's speaker label at the start of a line: the name (with a colon, or alone on the
# line as a Markdown heading or in bold), as people paste transcripts from chat UIs.
# A chat log's timestamp: `[10:42]`, `[2024-05-01 10:42:07]`, `(10:42 PM)`.
_STAMP = r"[\[(](?:\d{4}-\d{2}-\d{2}[ T])?\d{1,2}:\d{2}(?::\d{2})?(?:[ \t]?[ap]m)?[\])]"
_SPEAKER = re.compile(
    rf"^([ \t]*)(?:{_STAMP}[ \t]*)?(?:#{{1,6}}[ \t]+)?(\*\*|__)?"
    r"(?:user|human|you|me|h|assistant|ai|a|model|bot|system|claude|chatgpt|gemini|gpt[\w.-]*)"
    rf"(?:[ \t]*{_STAMP})?(?:[ \t]+said)?(?:\2)?[ \t]*(?::(?:\2)?[ \t]*|$)",
    re.IGNORECASE | re.MULTILINE,
)


# A cycle's verdict: (line, cycle number, problems, violations); `plsp.trace.CycleCheck`
# carries it for both kinds of input.
CycleVerdict = tuple[int, int, tuple[str, ...], tuple[Violation, ...]]


def looks_like_text_transcript(text: str) -> bool:
    """A transcript, not an NDJSON trace: some line starts with `INSTR:` (after a
    speaker label)."""
    return any(line.lstrip().startswith(PREFIX) for line in _unlabelled(text).splitlines())


def _unlabelled(text: str) -> str:
    """`text` with the speaker labels at line starts removed (lines stay where they are)."""
    return _SPEAKER.sub(r"\1", text)


def check_text(text: str) -> list[CycleVerdict]:
    """Verify every cycle of a text transcript against its instruction."""
    text = _unlabelled(text.removeprefix("\ufeff").replace("\r\n", "\n"))
    lines = text.split("\n")
    starts = [n for n, line in enumerate(lines) if line.lstrip().startswith(PREFIX)]
    checks: list[CycleVerdict] = []
    state = _EMPTY
    for cycle, start in enumerate(starts, start=1):
        end = starts[cycle] if cycle < len(starts) else len(lines)
        chunk = "\n".join(lines[start:end])
        check, accepted = _check_cycle(chunk, start + 1, cycle, state)
        checks.append(check)
        if accepted is not None:
            state = accepted
    return checks


def _check_cycle(chunk: str, line: int, cycle: int, state: str) -> tuple[CycleVerdict, str | None]:
    instr_line, _, _ = chunk.partition("\n")
    # The instruction is the INSTR: line's directives; anything after them is the body.
    try:
        instruction = parse_instr(instr_line.strip(), passthrough=True)
    except ParseError as error:
        return (line, cycle, (f"unreadable INSTR: {error}",), ()), None
    body = _LABEL.sub("", chunk[len(instr_line) :])
    spans = block_spans(body)
    problems: list[str] = []
    previous_text, reply, reply_at = state, body, 0
    if len(spans) >= 2:
        first_start, first_end = spans[0]
        previous_text, reply, reply_at = body[first_start:first_end], body[first_end:], first_end
        try:
            given = parse(previous_text).dumps()
        except ParseError as error:
            return (line, cycle, (f"unreadable previous state: {error}",), ()), None
        if given != parse(state).dumps():
            problems.append(
                f"previous state {given} does not continue the last accepted state "
                f"{parse(state).dumps()}"
            )
    verdict = verify(parse(previous_text), instruction, reply)
    accepted = verdict.block.dumps() if verdict.acceptable and verdict.block else None
    # The reply's lines as the file's: its first line is the INSTR: line's + the newlines
    # before it in the cycle.
    shift = line + body.count("\n", 0, reply_at) - 1
    violations = tuple(
        replace(v, line=v.line + shift) if v.line is not None else v for v in verdict.violations
    )
    return (line, cycle, tuple(problems), violations), accepted

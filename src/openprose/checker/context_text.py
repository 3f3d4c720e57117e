"""The unsafe fix for text in `context:` (E143): `context: "docs/*.md"` means "read these
files", and the grammar's context passes variables only. The fix says it in the prompt —
"Read docs/*.md first." — appended to the session's (or agent's) prompt, or as a `prompt:`
of its own when there is none, and keeps the names of the context (docs/decisions.md,
"fixes36")."""

from __future__ import annotations

import re

from openprose import nodes as n
from openprose.checker.state import Checker
from openprose.diagnostics import Edit, Fix

# What reads as a file or folder path rather than a sentence: a slash, a glob, an extension.
_PATH = re.compile(r"\S*(/|\*|\.[A-Za-z0-9]{1,6}$)\S*")


def text_context_fix(ck: Checker, value: n.StringLit | n.ArrayLit) -> Fix | None:
    """Move the strings of ``value`` (a `context:` value) into the prompt of its owner."""
    text = ck.source_text
    owner = _owner(ck, value)
    if owner is None or not text:
        return None
    items = value.elements if isinstance(value, n.ArrayLit) else (value,)
    strings = [e for e in items if isinstance(e, n.StringLit)]
    names = [e for e in items if not isinstance(e, n.StringLit)]
    if not strings or any(not isinstance(e, n.Name | n.Attribute) for e in names):
        return None
    if any(type(part) is not str for s in strings for part in s.parts):
        return None
    sentence = _sentence([s.value for s in strings])
    line_start = text.rfind("\n", 0, value.span.start) + 1
    line_end = text.find("\n", value.span.end)
    line_end = len(text) if line_end == -1 else line_end
    line_end -= text[line_end - 1 : line_end] == "\r"
    head = text[line_start : value.span.start]
    if head.strip() != "context:" or text[value.span.end : line_end].strip():
        return None  # a comment or more on the line: left to the author
    kept = ", ".join(text[e.span.start : e.span.end] for e in names)
    if len(names) > 1:
        kept = f"[{kept}]"
    prompt = _prompt_of(owner)
    if prompt is None:
        # no prompt to add to: the context line becomes one (and the names go on below it)
        indent = head[: len(head) - len(head.lstrip())]
        new = f"prompt: {_quoted(sentence)}" + (f"\n{indent}context: {kept}" if kept else "")
        edits = [Edit(ck.span_at(line_start + len(indent), line_end), new)]
    else:
        edits = [_append(ck, prompt, sentence)]
        if kept:
            edits.append(Edit(value.span, kept))
        else:
            end = text.find("\n", line_end)
            edits.append(Edit(ck.span_at(line_start, len(text) if end == -1 else end + 1), ""))
    return Fix(f"say it in the prompt: {sentence}", tuple(edits), safe=False)


def _sentence(values: list[str]) -> str:
    paths = [v for v in values if _PATH.fullmatch(v.strip())]
    others = [v for v in values if v not in paths]
    parts: list[str] = []
    if paths:
        parts.append(f"Read {', '.join(paths)} first.")
    if others:
        parts.append("Context: " + "; ".join(others))
    return " ".join(parts)


def _quoted(text: str) -> str:
    return '"' + _escaped(text) + '"'


def _escaped(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("{", "\\{")


def _append(ck: Checker, prompt: n.StringLit, sentence: str) -> Edit:
    """An edit adding ``sentence`` at the end of ``prompt`` (its own line in a `\"\"\"` one)."""
    text = ck.source_text
    start, end = prompt.span.start, prompt.span.end
    if text[start : start + 3] == '"""' and end - start >= 6:
        close = end - 3
        last_line = text.rfind("\n", start, close) + 1
        if last_line > start and not text[last_line:close].strip():
            indent = text[last_line:close]
            return Edit(ck.span_at(last_line, last_line), f"{indent}{_escaped(sentence)}\n")
        return Edit(ck.span_at(close, close), _joiner(text[:close]) + _escaped(sentence))
    return Edit(ck.span_at(end - 1, end - 1), _joiner(text[: end - 1]) + _escaped(sentence))


def _joiner(before: str) -> str:
    """What goes between a prompt's last sentence and the added one."""
    last = before.rstrip()[-1:]
    return " " if last in (".", "!", "?", ":", '"') else ". "


def _prompt_of(owner: n.Session | n.AgentDef) -> n.StringLit | None:
    for prop in owner.properties:
        if prop.name.id == "prompt":
            return prop.value if isinstance(prop.value, n.StringLit) else None
    return owner.prompt if isinstance(owner, n.Session) else None


def _owner(ck: Checker, value: n.Expr) -> n.Session | n.AgentDef | None:
    """The session or agent whose `context:` property holds ``value`` (found by identity)."""
    if ck.program is None:
        return None
    for node in n.walk(ck.program):
        if isinstance(node, n.Session | n.AgentDef) and any(
            p.value is value for p in node.properties
        ):
            return node
    return None

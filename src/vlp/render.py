"""A thread as a readable tree, for ``vlp show``."""

from __future__ import annotations

from typing import Any

import orjson

from vlp.thread import SAFETY_LEVELS_BY_SEVERITY as _LEVEL_NAMES
from vlp.thread import Thread, references, safety_level
from vlp.validate import message_problems

_MARKS = {"safe": "", "review": "  [REVIEW]", "block": "  [BLOCK]"}
_WIDTH = 72
_MAX_INDENT = 24  # tree levels drawn indented; deeper ones are marked with their depth
_CHAIN_SHOWN = 4  # corrections named in a "corrected by" line before eliding the middle


def _short(content: Any) -> str:
    if isinstance(content, str):
        text = content
    else:
        try:
            text = orjson.dumps(content).decode()
        except orjson.JSONEncodeError:  # deeper than orjson writes, yet valid JSON
            text = "{… nested too deeply to show …}"
    text = " ".join(text.split())
    return text if len(text) <= _WIDTH else text[: _WIDTH - 1] + "…"


def _provenance(msg: dict[str, Any]) -> str:
    items = msg.get("provenance") or []
    refs = [item if isinstance(item, str) else str(item.get("ref")) for item in items]
    return ", ".join(refs) if refs else "none"


def _via(thread: Thread, ident: str, hops: int) -> str:
    """The corrections between ``ident`` and its current version; a long chain shows its
    ends only, so output stays linear in the thread's size."""
    shown: list[str] = []
    step = thread.resolved(ident).step
    while step is not None and len(shown) < _CHAIN_SHOWN:
        shown.append(step)
        step = thread.resolved(step).step
    if hops > _CHAIN_SHOWN:
        shown[-1:] = [f"… {hops - _CHAIN_SHOWN} more …", thread.resolved(ident).best]
    return " -> ".join(shown)


def _headline(thread: Thread, msg: dict[str, Any]) -> list[str]:
    route = msg["sender"] + (f" -> {msg['receiver']}" if msg.get("receiver") else "")
    level = safety_level(msg)
    issues = msg.get("safety", {}).get("issues") or []
    codes = ", ".join(i["code"] for i in issues)
    mark = _MARKS[level] + (f" {codes}" if codes and level != "safe" else "")
    lines = [f"{msg['id']} {msg['type']}  {route}  conf {float(msg['confidence']):.2f}{mark}"]
    lines.append(f"  {_short(msg['content'])}")
    resolved = thread.resolved(msg["id"])
    if resolved.cycle is not None:
        lines.append("  ! VLP307: corrections form a cycle: " + " -> ".join(resolved.cycle))
    elif resolved.hops:
        current = thread.by_id[resolved.best]
        via = _via(thread, msg["id"], resolved.hops)
        lines.append(
            f"  now: {_short(current.get('content'))}  (corrected by {via}, "
            f"conf {float(current['confidence']):.2f})"
        )
        effective_level = _LEVEL_NAMES[resolved.severity]
        if effective_level != level:
            lines.append(f"  effective safety: {effective_level}")
    lines.append(f"  provenance: {_provenance(msg)}")
    return lines


def _emit_tree(
    thread: Thread,
    root: dict[str, Any],
    children: dict[str, list[dict[str, Any]]],
    out: list[str],
) -> None:
    """Depth-first, with an explicit stack: reply chains of any length, no recursion.
    Past _MAX_INDENT levels the tree stops moving right, so output stays linear."""
    pending: list[tuple[dict[str, Any], str, bool, int]] = [(root, "", True, 0)]
    while pending:
        msg, prefix, last, depth = pending.pop()
        head, *rest = _headline(thread, msg)
        if depth > _MAX_INDENT:
            head = f"[depth {depth}] " + head
        branch = "" if depth == 0 else ("└─ " if last else "├─ ")
        out.append(prefix + branch + head)
        below = prefix
        if 0 < depth <= _MAX_INDENT:
            below += "   " if last else "│  "
        kids = children.get(msg["id"], [])
        for line in rest:
            out.append(below + ("│ " if kids else "  ") + line)
        for index in reversed(range(len(kids))):
            pending.append((kids[index], below, index == len(kids) - 1, depth + 1))


def render_thread(thread: Thread) -> str:
    """Each message under the first earlier message it refers to; invalid ones at the end."""
    if not thread.messages:
        return "no messages\n"
    children: dict[str, list[dict[str, Any]]] = {}
    roots: list[dict[str, Any]] = []
    duplicates: list[tuple[int | None, dict[str, Any]]] = []
    for msg, ok, line in zip(thread.messages, thread.valid, thread.lines):
        if not ok:
            continue
        if thread.by_id[msg["id"]] is not msg:  # the first message keeps the id
            duplicates.append((line, msg))
            continue
        parents = [
            ref
            for ref in references(msg)
            if ref in thread.by_id
            and ref != msg["id"]
            and thread.position[ref] < thread.position[msg["id"]]
        ]
        if parents:
            children.setdefault(parents[0], []).append(msg)
        else:
            roots.append(msg)
    out: list[str] = []

    for root in roots:
        _emit_tree(thread, root, children, out)
        out.append("")
    if duplicates:
        out.append(f"{len(duplicates)} message(s) reusing an earlier id, not shown in the tree:")
        for line, msg in duplicates:
            first = thread.lines[thread.position[msg["id"]]]
            out.append(
                f"  line {line if line is not None else '?'}: {msg['id']} {msg['type']}"
                f" (id first used on line {first if first is not None else '?'}):"
                f" {_short(msg['content'])}"
            )
        out.append("")
    invalid = [
        (line, msg) for msg, ok, line in zip(thread.messages, thread.valid, thread.lines) if not ok
    ]
    if invalid:
        out.append(f"{len(invalid)} invalid message(s) not shown in the tree:")
        for line, msg in invalid:
            ident = msg.get("id") if isinstance(msg, dict) else None
            where = f"line {line}" if line is not None else "?"
            codes = ", ".join(sorted({problem.code for problem in message_problems(msg)}))
            out.append(f"  {where}: {ident if isinstance(ident, str) else '(no id)'} ({codes})")
    return "\n".join(out).rstrip() + "\n"

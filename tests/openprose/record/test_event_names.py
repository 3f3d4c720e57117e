"""The codec is the only code that knows the journal's JSON: nothing else in `src/` chooses
what to do by an event's name (`ev`) or reads the `ev` key of a line; consumers match on
the event classes (`openprose.record.events`)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from openprose.record.events import REGISTRY

SRC = Path(__file__).resolve().parents[3] / "src"
# The codec knows names and JSON; the events module names each class once (`@journal_event`).
ALLOWED = {SRC / "openprose" / "record" / "codec.py", SRC / "openprose" / "record" / "events.py"}
NAMES = frozenset(REGISTRY)


def _text(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _names_in(node: ast.AST) -> list[str]:
    """Event names `node` is, or holds as a literal display (`in ("a", "b")`)."""
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [t for e in node.elts if (t := _text(e)) in NAMES and t is not None]
    text = _text(node)
    return [text] if text in NAMES and text is not None else []


def _all_names(elements: list[ast.expr | None]) -> bool:
    """A display of two or more event names and nothing else: a table keyed by names."""
    texts = [_text(e) if e is not None else None for e in elements]
    return len(texts) >= 2 and all(t in NAMES for t in texts)


def offences(tree: ast.AST) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                for name in _names_in(side):
                    yield node.lineno, f"compares with the event name {name!r}"
                if _text(side) == "ev":
                    yield node.lineno, "looks for the `ev` key"
        elif isinstance(node, ast.Subscript) and _text(node.slice) == "ev":
            yield node.lineno, 'reads `["ev"]`'
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("get", "pop")
            and node.args
            and _text(node.args[0]) == "ev"
        ):
            yield node.lineno, f'reads `.{node.func.attr}("ev")`'
        elif isinstance(node, ast.Dict):
            if any(k is not None and _text(k) == "ev" for k in node.keys):
                yield node.lineno, "writes an `ev` key"
            if _all_names(list(node.keys)):
                yield node.lineno, "a table keyed by event names"
        elif isinstance(node, ast.Tuple | ast.List | ast.Set) and _all_names(list(node.elts)):
            yield node.lineno, "a list of event names"
        elif isinstance(node, ast.MatchValue) and _text(node.value) in NAMES:
            yield node.lineno, f"matches the event name {_text(node.value)!r}"


def test_offences_are_found() -> None:
    """The walk finds each way of dispatching on names (so its silence below means something)."""
    source = (
        'if line["ev"] == "session_started": pass\n'
        'x = line.get("ev") in ("tool_call", "tool_result")\n'
        'TABLE = {"decision": 1, "run_started": 2}\n'
        'BOTH = ("session_failed", "session_finished")\n'
        'y = {"ev": "agents"}\n'
        'match kind:\n    case "permission": pass\n'
        'z = "ev" in line\n'
    )
    found = [line for line, _ in offences(ast.parse(source))]
    assert found.count(1) == 2 and found.count(2) >= 2
    assert {3, 4, 5, 7, 8} <= set(found)
    # a word that is also an event's name, used as a word, is not an offence
    assert not list(offences(ast.parse('topic = "tool_call"\nkeys = ("decision", "reason")\n')))


def test_nothing_outside_the_codec_dispatches_on_event_names() -> None:
    found = [
        f"{path.relative_to(SRC)}:{line}: {what}"
        for path in sorted(SRC.rglob("*.py"))
        if path not in ALLOWED
        for line, what in offences(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert found == []

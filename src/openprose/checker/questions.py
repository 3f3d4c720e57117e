"""`ask "question"`: its question, options, default and timeout (E190-E192, W190-W192)."""

from __future__ import annotations

from openprose import nodes as n
from openprose.asking import timeout_of
from openprose.checker.state import Checker, Handler
from openprose.diagnostics import Fix
from openprose.suggest import closest
from openprose.vocabulary import ASK_PROPERTIES


def _ask(ck: Checker, node: n.Ask) -> None:
    question = node.question
    if not question.value.strip():
        ck.emit("W191", question.span, "Ask has an empty question")
    ck.visit(question)
    seen: dict[str, n.Property] = {}
    for prop in node.properties:
        key = prop.name.id
        earlier = seen.get(key)
        if earlier is not None:
            ck.emit(
                "E009",
                prop.name.span,
                f"Property '{key}' already specified (line {earlier.span.line})",
            )
            continue
        seen[key] = prop
        if key not in ASK_PROPERTIES:
            guess = closest(key, ASK_PROPERTIES)
            ck.emit(
                "W190",
                prop.name.span,
                f"Unknown ask property '{key}'"
                + (
                    f" (did you mean `{guess}`?)"
                    if guess
                    else " (known: options, default, timeout)"
                ),
                help=f"rename it to `{guess}`" if guess else None,
                fix=Fix.nearest_word(prop.name.span, key, guess) if guess else None,
            )
            continue
        if not isinstance(prop.value, n.PermissionsBlock):
            ck.visit(prop.value)
    options = _options(ck, seen.get("options"))
    default = seen.get("default")
    if default is not None and options is not None:
        _default_among(ck, default, options)
    timeout = seen.get("timeout")
    if timeout is not None and timeout_of(timeout.value) is None:
        ck.emit(
            "E192",
            timeout.value.span,
            "Invalid ask timeout: a positive number of seconds, or a string such as "
            '"90s", "10m", "2h"',
        )


def _options(ck: Checker, prop: n.Property | None) -> list[str] | None:
    """The options written out as plain strings (None when there are none, or when they
    come from a variable or hold interpolations: known only at run time)."""
    if prop is None:
        return None
    value = prop.value
    if isinstance(value, n.Name | n.Attribute):
        return None  # a list bound earlier: checked when the question is asked
    if not isinstance(value, n.ArrayLit) or not value.elements:
        ck.emit(
            "E190",
            value.span,
            'Ask options must be a non-empty list of strings, e.g. options: ["yes", "no"]',
        )
        return None
    texts: list[str] = []
    plain = True
    for element in value.elements:
        if not isinstance(element, n.StringLit):
            ck.emit("E190", element.span, "Ask options must be strings")
            plain = False
            continue
        if element.interpolations:
            plain = False
        elif element.value in texts:
            ck.emit("W192", element.span, f"Option {element.value!r} is listed twice")
        texts.append(element.value)
    return texts if plain else None


def _default_among(ck: Checker, default: n.Property, options: list[str]) -> None:
    value = default.value
    if not isinstance(value, n.StringLit) or value.interpolations or value.value in options:
        return
    guess = closest(value.value, options)
    listed = ", ".join(repr(o) for o in dict.fromkeys(options))
    ck.emit(
        "E191",
        value.span,
        f"Ask default {value.value!r} is not one of its options ({listed})"
        + (f" (did you mean {guess!r}?)" if guess else ""),
        help=f'write default: "{guess}"' if guess else None,
        fix=Fix.nearest_word(value.span, value.value, f'"{guess}"') if guess else None,
    )


HANDLERS: dict[type, Handler] = {n.Ask: _ask}

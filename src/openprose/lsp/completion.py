"""Completion: what may be written at the cursor, read from the line being typed.

The text around the cursor is usually broken while it is typed, so the context comes from the
current line and the lines above it (what block the cursor sits in), and the names come from
the index of the latest parse — the parser recovers per statement, so the rest of the program
is still there.
"""

from __future__ import annotations

import json
import re
from typing import Any

from lsprotocol import types as lsp

from openprose.lsp import language
from openprose.lsp.documents import Analysis, Documents
from openprose.lsp.index import Definition
from openprose.lsp.strings import string_at
from openprose.shapes import field_schema, fields_of

_TYPED = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*$")
_AGENT_SLOT = re.compile(r"(?:^|[=\s])(?:session|resume)(?:\s+[A-Za-z_][\w-]*)?\s*:\s*$")
_DO_SLOT = re.compile(r"\bdo\s+$")
_PROPERTY_VALUE = re.compile(r"^\s*([A-Za-z_][\w-]*)\s*:\s*$")
_MODIFIERS = re.compile(r"\b(parallel|loop|for)\b[^()]*\(([^)]*)$")
_CONTEXT = re.compile(r"^\s*context\s*:")
_EXPRESSION_SLOT = re.compile(r"(?:=|->)\s*$")
# `result.` or `result.fi` typed outside a string: the fields of `result` (of `result.a`
# after `result.a.`).
_FIELD = re.compile(
    r"(?<![\w.-])(?P<root>[A-Za-z_][\w-]*)(?P<through>(?:\.[A-Za-z_][\w-]*)*)\.[\w-]*$"
)
_AGENT_HEAD = re.compile(r"^\s*agent\s+[^:]+:\s*(#.*)?$")
_PERMISSIONS_HEAD = re.compile(r"^\s*permissions\s*:\s*(#.*)?$")
_SESSION_HEAD = re.compile(r"(?:^\s*|[=>]\s*)(?:session|resume)\b")

# Clauses that continue the statement before them, and what each may follow.
_CLAUSES = frozenset(("elif", "else", "catch", "finally"))
_CONTINUES: dict[str, set[str]] = {
    "if": {"elif", "else"},
    "elif": {"elif", "else"},
    "try": {"catch", "finally"},
    "catch": {"finally"},
}

_VALUES: dict[str, tuple[str, ...]] = {
    "model": tuple(sorted(language.MODELS)),
    "persist": language.PERSIST_VALUES,
    "backoff": tuple(sorted(language.BACKOFFS)),
    **{name: tuple(sorted(language.PERMISSION_VALUES)) for name in language.SWITCH_PERMISSIONS},
}


def complete(
    analysis: Analysis, offset: int, store: Documents | None = None
) -> list[lsp.CompletionItem]:
    source = analysis.source
    line, column = source.position(offset)
    typed_line = source.line_text(line)[: column - 1]
    typed = _TYPED.search(typed_line)
    before = typed_line[: typed.start()] if typed else typed_line

    spot = string_at(analysis, offset)
    if spot is not None:
        if spot.path is not None:  # after an open `{` (an escaped `\{` is text)
            if len(spot.path) == 1:
                return _variables(analysis, spot.start)
            return _fields(analysis, store, spot.path[0], spot.path[1:-1])
        if re.match(r"^\s*skills\s*:", before):
            return [
                _item(d.name, lsp.CompletionItemKind.Module, "import") for d in _imports(analysis)
            ]
        return []
    field = _FIELD.search(typed_line)
    if field is not None:
        through = tuple(field.group("through").split(".")[1:])
        return _fields(analysis, store, field.group("root"), through)
    if _AGENT_SLOT.search(before):
        return _names(analysis, "agent", lsp.CompletionItemKind.Class)
    if _DO_SLOT.search(before):
        return _names(analysis, "block", lsp.CompletionItemKind.Function)
    modifiers = _MODIFIERS.search(before)
    if modifiers is not None:
        return _modifiers(modifiers.group(1), modifiers.group(2))
    value = _PROPERTY_VALUE.match(before)
    if value is not None and value.group(1) in _VALUES:
        return [
            _item(v, lsp.CompletionItemKind.EnumMember, language.VALUE_DOCS.get(v, ""))
            for v in _VALUES[value.group(1)]
        ]
    if _CONTEXT.match(before):
        return _variables(analysis, offset)
    if _EXPRESSION_SLOT.search(before):
        return _expression(analysis, offset)
    if before.strip():
        return []
    owner, sibling = _surroundings(analysis, line, len(before))
    if owner == "agent":
        return _properties(language.AGENT_PROPERTIES)
    if owner == "session":
        return _properties(language.SESSION_PROPERTIES)
    if owner == "permissions":
        names = sorted(language.PATTERN_PERMISSIONS | language.SWITCH_PERMISSIONS | {"deny"})
        return [
            _item(p, lsp.CompletionItemKind.Property, language.PERMISSION_DOCS[p], p + ": ")
            for p in names
        ]
    keywords = [
        _item(k, lsp.CompletionItemKind.Keyword, language.KEYWORD_DOCS[k])
        for k in _statement_keywords(owner, sibling)
    ]
    if owner == "choice":
        return keywords
    return keywords + _variables(analysis, offset) + _programs(analysis)


def _surroundings(analysis: Analysis, line: int, indent: int) -> tuple[str | None, str | None]:
    """What the indented block holding the cursor belongs to (the nearest line above indented
    less: ``agent``, ``permissions``, ``session``, ``choice`` or None), and the first word of
    the statement before the cursor's at the same indentation (None when there is none)."""
    source = analysis.source
    sibling: str | None = None
    for number in range(line - 1, 0, -1):
        text = source.line_text(number)
        stripped = text.lstrip()
        if not stripped or stripped.startswith("#"):
            continue
        depth = len(text) - len(stripped)
        if depth > indent:
            continue
        if depth == indent:
            if sibling is None:
                sibling = re.split(r"[\s:(]", stripped, maxsplit=1)[0]
            continue
        if _AGENT_HEAD.match(text):
            return "agent", sibling
        if _PERMISSIONS_HEAD.match(text):
            return "permissions", sibling
        if _SESSION_HEAD.search(text):
            return "session", sibling
        if stripped.startswith("choice"):
            return "choice", sibling
        return None, sibling
    return None, sibling


def _statement_keywords(owner: str | None, sibling: str | None) -> list[str]:
    """Statement keywords valid here: clauses only after what they continue."""
    if owner == "choice":
        return ["option"]
    allowed = _CONTINUES.get(sibling or "", set())
    return [
        k
        for k in language.STATEMENT_KEYWORDS
        if (k not in _CLAUSES or k in allowed) and k != "option"
    ]


def _modifiers(head: str, inside: str) -> list[lsp.CompletionItem]:
    last = inside.rsplit(",", 1)[-1]
    if re.search(r"on-fail\s*:\s*$", last):
        return [
            _item(f'"{p}"', lsp.CompletionItemKind.EnumMember, "failure policy")
            for p in language.FAIL_POLICIES
        ]
    if ":" in last:
        return []
    if head == "loop":
        return [_item("max", lsp.CompletionItemKind.Property, "most iterations", "max: ")]
    strategies = [
        _item(f'"{s}"', lsp.CompletionItemKind.EnumMember, "join strategy")
        for s in language.JOIN_STRATEGIES
    ]
    return strategies + [
        _item("on-fail", lsp.CompletionItemKind.Property, "failure policy", "on-fail: "),
        _item("count", lsp.CompletionItemKind.Property, 'branches to wait for ("any")', "count: "),
    ]


def _expression(analysis: Analysis, offset: int) -> list[lsp.CompletionItem]:
    keywords = [
        _item(k, lsp.CompletionItemKind.Keyword, language.KEYWORD_DOCS[k])
        for k in language.EXPRESSION_KEYWORDS
    ]
    return keywords + _variables(analysis, offset) + _programs(analysis)


def _properties(names: tuple[str, ...]) -> list[lsp.CompletionItem]:
    return [
        _item(p, lsp.CompletionItemKind.Property, language.PROPERTY_DOCS[p], p + ": ")
        for p in names
    ]


def _variables(analysis: Analysis, offset: int) -> list[lsp.CompletionItem]:
    seen: dict[str, lsp.CompletionItem] = {}
    for d in analysis.index.usable_variables(offset):
        seen.setdefault(d.name, _item(d.name, lsp.CompletionItemKind.Variable, d.kind))
    return list(seen.values())


def _fields(
    analysis: Analysis, store: Documents | None, root: str, through: tuple[str, ...] = ()
) -> list[lsp.CompletionItem]:
    """The fields of ``root`` (of its field ``through``, nested) where its shape is known: a
    typed result (bound to a session that `returns:` a shape, or an output declaring one —
    the names E181 checks), or the outputs of the imported program it holds the result of
    (`let r = research(...)`)."""
    schema = analysis.typed_names.get(root)
    if schema is not None:
        return _shape_fields(schema, root, through)
    program = analysis.index.program_results.get(root)
    if through:
        return []  # an output's value has no declared shape
    if program is None or store is None:
        return []
    base = analysis.path.parent if analysis.path is not None else None
    for definition in analysis.index.named(program, "program"):
        contract = store.contract(definition.node.path.value, base)
        if contract is not None:
            return [
                _item(name, lsp.CompletionItemKind.Field, f"output of {program}")
                for name in contract.outputs
            ]
    return []


def _shape_fields(
    schema: dict[str, Any], root: str, through: tuple[str, ...]
) -> list[lsp.CompletionItem]:
    for name in through:
        if name not in (fields_of(schema) or ()):
            return []
        schema = field_schema(schema, name)
    owner = ".".join((root, *through))
    return [
        _item(
            name,
            lsp.CompletionItemKind.Field,
            f"{_type_of(field_schema(schema, name))} field of {owner}",
        )
        for name in fields_of(schema) or ()
    ]


def _type_of(schema: dict[str, Any]) -> str:
    """A field's type in a word or two (`string`, `list`, `"a" | "b"`), for the detail."""
    if "enum" in schema:
        return " | ".join(json.dumps(value) for value in schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " or ".join(str(k) for k in kind)
    return str(kind) if kind else "any"


def _names(
    analysis: Analysis, namespace: str, kind: lsp.CompletionItemKind
) -> list[lsp.CompletionItem]:
    seen: dict[str, lsp.CompletionItem] = {}
    for d in analysis.index.definitions:
        if d.namespace == namespace:
            seen.setdefault(d.name, _item(d.name, kind, namespace))
    return list(seen.values())


def _imports(analysis: Analysis) -> list[Definition]:
    return [d for d in analysis.index.definitions if d.kind == "import"]


def _programs(analysis: Analysis) -> list[lsp.CompletionItem]:
    return _names(analysis, "program", lsp.CompletionItemKind.Module)


def _item(
    label: str, kind: lsp.CompletionItemKind, detail: str, insert: str | None = None
) -> lsp.CompletionItem:
    return lsp.CompletionItem(label=label, kind=kind, detail=detail, insert_text=insert)

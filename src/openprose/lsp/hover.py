"""Hover: what a keyword, property or value means; what a name is defined as."""

from __future__ import annotations

from lsprotocol import types as lsp

from openprose import nodes as n
from openprose.lsp import language
from openprose.lsp.convert import range_of
from openprose.lsp.documents import Analysis, Documents
from openprose.lsp.index import Definition, PropertyName, Reference
from openprose.lsp.navigation import imported_definition
from openprose.printer import inline, shape
from openprose.scanner import KEYWORDS, NAME, token_span
from openprose.shapes import returns_of
from openprose.source import Span

_FIRST_LINE = 100  # characters of a prompt shown


def hover(store: Documents, analysis: Analysis, offset: int) -> lsp.Hover | None:
    spot = analysis.index.at(offset)
    if isinstance(spot, PropertyName):
        text = _property_doc(spot)
        return _hover(analysis, text, spot.span) if text else None
    if isinstance(spot, Definition):
        return _hover(analysis, describe(store, analysis, spot), spot.span)
    if isinstance(spot, Reference):
        if spot.namespace in ("argument", "output-field"):
            found = imported_definition(store, analysis, spot)
            if found is None:
                return None
            return _hover(analysis, describe(store, found[0], found[1]), spot.span)
        definition = analysis.index.resolve(spot)
        if definition is None:
            return None
        return _hover(analysis, describe(store, analysis, definition), spot.span)
    token = analysis.token_at(offset)
    if token is None:
        return None
    kind, text, span = token[0], token[1], token_span(token)
    if kind in KEYWORDS:
        return _hover(analysis, f"**{text}** (keyword) — {language.KEYWORD_DOCS[text]}", span)
    doc = language.VALUE_DOCS.get(text)
    if kind == NAME and doc is not None and _is_property_value(analysis, span):
        return _hover(analysis, f"**{text}** (value) — {doc}", span)
    return None


def _is_property_value(analysis: Analysis, span: Span) -> bool:
    """Is ``span`` a word written as a property's value (``model: opus``, ``bash: deny``)?"""
    return any(
        isinstance(p.value, n.Name) and p.value.span.start == span.start
        for p in analysis.index.properties
    )


def _property_doc(spot: PropertyName) -> str | None:
    table = language.PERMISSION_DOCS if spot.owner == "permissions" else language.PROPERTY_DOCS
    doc = table.get(spot.name)
    if doc is None:
        return None
    where = "permission" if spot.owner == "permissions" else f"{spot.owner} property"
    return f"**{spot.name}** ({where}) — {doc}"


def describe(store: Documents, analysis: Analysis, definition: Definition) -> str:
    """Markdown for a name's definition: the declaring code's head and what it configures."""
    node = definition.node
    source = analysis.source
    if isinstance(node, n.AgentDef):
        lines = [f"agent {node.name.id}"]
        for prop in node.properties:
            if prop.name.id == "permissions":
                continue
            lines.append(f"  {prop.name.id}: {_value(source.text, prop.value)}")
        return _code("\n".join(lines))
    if isinstance(node, n.BlockDef):
        params = ", ".join(p.id for p in node.params)
        head = (
            f"block {node.name.id}({params})"
            if node.has_parens or params
            else f"block {node.name.id}"
        )
        first = _first_line(source.text, node.body[0].span) if node.body else ""
        return _code(head) + (f"\n\nfirst statement: `{first}`" if first else "")
    if isinstance(node, n.Input):
        return _code(f"input {node.name.id}: {inline(node.description)}") + _from(analysis)
    if isinstance(node, n.Use):
        return _import(store, analysis, node, definition.name)
    if definition.kind == "scoped":
        text = _first_line(source.text, node.span)
        return f"`{definition.name}` — scoped to `{text}`"
    return _code(_first_line(source.text, node.span)) + _shape(node) + _from(analysis)


def _shape(node: object) -> str:
    """The shape a typed binding declares (`returns:`, `output name: shape =`), if any."""
    declared = node.shape if isinstance(node, n.Output) else None
    if declared is None:
        declared = returns_of(getattr(node, "value", node))
    return "" if declared is None else f"\n\nshape: `{shape(declared)}`"


def _import(store: Documents, analysis: Analysis, node: n.Use, name: str) -> str:
    text = _code(_first_line(analysis.source.text, node.span))
    file = store.imported(analysis, node.path.value)
    if file is None:
        return text + f"\n\nprogram `{name}` (resolved when the program runs)"
    target = store.file(file)
    if target is None:
        return text + f"\n\n`{file}` cannot be read"
    contract = target.contract
    inputs = ", ".join(contract.inputs) or "none"
    outputs = ", ".join(contract.outputs) or "none"
    return text + f"\n\n`{file}` — inputs: {inputs}; outputs: {outputs}"


def _from(analysis: Analysis) -> str:
    return f"\n\nin `{analysis.path.name}`" if analysis.path is not None else ""


def _value(text: str, value: object) -> str:
    span: Span = value.span  # type: ignore[attr-defined]
    shown = text[span.start : span.end].split("\n", 1)[0]
    if isinstance(value, n.StringLit) and value.triple:
        shown = value.value.strip().split("\n", 1)[0]
    return shown if len(shown) <= _FIRST_LINE else shown[:_FIRST_LINE] + "…"


def _first_line(text: str, span: Span) -> str:
    line = text[span.start : span.end].split("\n", 1)[0].rstrip()
    return line if len(line) <= _FIRST_LINE else line[:_FIRST_LINE] + "…"


def _code(text: str) -> str:
    return f"```prose\n{text}\n```"


def _hover(analysis: Analysis, markdown: str, span: Span) -> lsp.Hover:
    return lsp.Hover(
        contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=markdown),
        range=range_of(analysis.lines, span),
    )

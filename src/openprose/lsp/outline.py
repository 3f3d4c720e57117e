"""The document outline: agents, blocks, imports, inputs, outputs and bindings, nested as the
program nests them (a block's own bindings sit under the block); and the workspace's symbols,
the same names across every open document and `.prose` file of the workspace."""

from __future__ import annotations

from lsprotocol import types as lsp

from openprose import nodes as n
from openprose.lsp.convert import range_of
from openprose.lsp.documents import Analysis, Documents
from openprose.lsp.index import Definition

_KINDS: dict[str, lsp.SymbolKind] = {
    "agent": lsp.SymbolKind.Class,
    "block": lsp.SymbolKind.Function,
    "import": lsp.SymbolKind.Module,
    "input": lsp.SymbolKind.Field,
    "output": lsp.SymbolKind.Property,
    "let": lsp.SymbolKind.Variable,
    "const": lsp.SymbolKind.Constant,
    "branch": lsp.SymbolKind.Variable,
}


def document_symbols(analysis: Analysis) -> list[lsp.DocumentSymbol]:
    lines = analysis.lines
    top: list[lsp.DocumentSymbol] = []
    # Blocks in source order, with the symbol their definitions nest under.
    blocks: list[tuple[int, int, lsp.DocumentSymbol]] = []
    children: dict[int, list[lsp.DocumentSymbol]] = {}  # a block symbol's own list, by id
    for definition in analysis.index.definitions:
        kind = _KINDS.get(definition.kind)
        if kind is None:
            continue  # scoped names (loop variables, parameters) are not part of the outline
        node = definition.node
        symbol = lsp.DocumentSymbol(
            name=definition.name,
            detail=_detail(definition),
            kind=kind,
            range=range_of(lines, node.span),
            selection_range=range_of(lines, definition.span),
        )
        if isinstance(node, n.AgentDef):
            symbol.children = [
                lsp.DocumentSymbol(
                    name=prop.name.id,
                    kind=lsp.SymbolKind.Property,
                    range=range_of(lines, prop.span),
                    selection_range=range_of(lines, prop.name.span),
                )
                for prop in node.properties
            ]
        parent = next(
            (s for start, end, s in reversed(blocks) if start <= node.span.start < end), None
        )
        siblings = top if parent is None else children[id(parent)]
        siblings.append(symbol)
        if isinstance(node, n.BlockDef):
            blocks.append((node.span.start, node.span.end, symbol))
            children[id(symbol)] = []
            symbol.children = children[id(symbol)]
    return top


def _detail(definition: Definition) -> str:
    node = definition.node
    if isinstance(node, n.BlockDef):
        return "(" + ", ".join(p.id for p in node.params) + ")"
    if isinstance(node, n.Use):
        return node.path.value
    if isinstance(node, n.Input):
        return node.text
    return definition.kind


def workspace_symbols(store: Documents, query: str) -> list[lsp.WorkspaceSymbol]:
    """The outline's names whose name holds ``query``'s characters in order (as editors
    filter: ``wrt`` finds ``writer``), case-insensitively."""
    wanted = query.lower()
    found: list[lsp.WorkspaceSymbol] = []
    for analysis in store.workspace():
        for definition in analysis.index.definitions:
            kind = _KINDS.get(definition.kind)
            if kind is None or not _fuzzy(wanted, definition.name.lower()):
                continue
            found.append(
                lsp.WorkspaceSymbol(
                    name=definition.name,
                    kind=kind,
                    location=lsp.Location(analysis.uri, range_of(analysis.lines, definition.span)),
                    container_name=analysis.path.name if analysis.path else None,
                )
            )
    return found


def _fuzzy(query: str, name: str) -> bool:
    rest = iter(name)
    return all(char in rest for char in query)

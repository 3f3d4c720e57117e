"""Go to definition and find references, within a file and across `use` imports.

An invocation's argument names (``research(topic: x)``) lead to the imported program's
``input topic``, and ``result.findings`` (``result`` bound to an invocation) to its
``output findings``; finding references of an input or output searches every open document and
every ``.prose`` file in the workspace that imports its program.
"""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types as lsp

from openprose import nodes as n
from openprose.lsp.convert import range_of
from openprose.lsp.documents import Analysis, Documents, resolve_path
from openprose.lsp.index import Definition, Reference
from openprose.source import Span

_FILE_START = lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0))

Target = tuple[Analysis, Definition]


def use_at(analysis: Analysis, offset: int) -> n.Use | None:
    """The ``use`` statement whose path string holds ``offset``."""
    for use in analysis.index.uses:
        if use.path.span.start <= offset <= use.path.span.end:
            return use
    return None


def imported_definition(store: Documents, analysis: Analysis, ref: Reference) -> Target | None:
    """The ``input``/``output`` an argument name or an output field names in another file."""
    target = imported_program(store, analysis, ref.program)
    if target is None:
        return None
    kind = "input" if ref.namespace == "argument" else "output"
    for definition in target.index.definitions:
        if definition.kind == kind and definition.name == ref.name:
            return target, definition
    return None


def imported_program(store: Documents, analysis: Analysis, name: str | None) -> Analysis | None:
    """The analysis of the local program file that ``name`` was imported from."""
    if name is None:
        return None
    for definition in analysis.index.named(name, "program"):
        file = store.imported(analysis, definition.node.path.value)
        if file is not None:
            return store.file(file)
    return None


def target_at(store: Documents, analysis: Analysis, offset: int) -> Target | None:
    """The definition the name under ``offset`` stands for (maybe in another file)."""
    spot = analysis.index.at(offset)
    if isinstance(spot, Definition):
        return analysis, spot
    if isinstance(spot, Reference):
        if spot.namespace in ("argument", "output-field"):
            return imported_definition(store, analysis, spot)
        definition = analysis.index.resolve(spot)
        return (analysis, definition) if definition is not None else None
    return None


def definition(store: Documents, analysis: Analysis, offset: int) -> list[lsp.Location]:
    use = use_at(analysis, offset)
    if use is not None:  # the path string of a local import: the file itself
        file = store.imported(analysis, use.path.value)
        if file is not None and file.is_file():
            return [lsp.Location(resolve_path(file).as_uri(), _FILE_START)]
    target = target_at(store, analysis, offset)
    if target is None:
        return []
    where, found = target
    return [lsp.Location(where.uri, range_of(where.lines, found.span))]


def references(
    store: Documents, analysis: Analysis, offset: int, include_declaration: bool
) -> list[lsp.Location]:
    target = target_at(store, analysis, offset)
    if target is None:
        return []
    home, found = target
    spans: list[tuple[Analysis, Span]] = []
    if include_declaration:
        spans.append((home, found.span))
    spans.extend((home, r.span) for r in home.index.references_to(found))
    if found.kind in ("input", "output") and found.region is None and home.path is not None:
        spans.extend(_importers_uses(store, home.path, found))
    seen: set[tuple[str, int]] = set()
    locations = []
    for where, span in spans:
        key = (where.uri, span.start)
        if key not in seen:
            seen.add(key)
            locations.append(lsp.Location(where.uri, range_of(where.lines, span)))
    return locations


def _importers_uses(
    store: Documents, program: Path, found: Definition
) -> list[tuple[Analysis, Span]]:
    """Argument names (for an input) or output fields (for an output) naming ``found`` in
    every known program that imports ``program``."""
    wanted = resolve_path(program)
    namespace = "argument" if found.kind == "input" else "output-field"
    uses: list[tuple[Analysis, Span]] = []
    for analysis in store.workspace():
        names = {
            d.name
            for d in analysis.index.definitions
            if d.kind == "import"
            and (file := store.imported(analysis, d.node.path.value)) is not None
            and resolve_path(file) == wanted
        }
        if not names:
            continue
        uses.extend(
            (analysis, r.span)
            for r in analysis.index.references
            if r.namespace == namespace and r.program in names and r.name == found.name
        )
    return uses


def highlights(store: Documents, analysis: Analysis, offset: int) -> list[lsp.DocumentHighlight]:
    """Every occurrence in this document of the name under the cursor (its definition a
    write, uses reads)."""
    target = target_at(store, analysis, offset)
    if target is None or target[0] is not analysis:
        return []
    found = target[1]
    marks = [
        lsp.DocumentHighlight(range_of(analysis.lines, found.span), lsp.DocumentHighlightKind.Write)
    ]
    marks += [
        lsp.DocumentHighlight(range_of(analysis.lines, r.span), lsp.DocumentHighlightKind.Read)
        for r in analysis.index.references_to(found)
    ]
    return marks

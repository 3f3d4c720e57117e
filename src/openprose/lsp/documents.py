"""Documents the server knows: each one's text analysed once per version.

An ``Analysis`` is what ``prose check`` computes — the parse, the diagnostics — plus the name
index the editor features read, built on first use (diagnostics alone do not need it). A
``Documents`` store keeps the analysis of every open document and parses, on demand, the
``.prose`` files they import or that import them, so navigation works across files.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from functools import cached_property
from pathlib import Path
from typing import Any

from openprose.contracts import ProgramContract, contract_of, is_local_path, local_contracts
from openprose.diagnostics import Diagnostic
from openprose.lsp.background import shielded
from openprose.lsp.incremental import SpanTable, reparse
from openprose.lsp.index import Index, build_index
from openprose.lsp.positions import Lines
from openprose.lsp.trace import mark
from openprose.parser import ParseResult, parse
from openprose.scanner import DEDENT, EOF, INDENT, NEWLINE, Token, scan
from openprose.source import SourceFile

_LAYOUT = frozenset((NEWLINE, INDENT, DEDENT, EOF))


class _Parse:
    """A parse, and the table of its spans once an edit needed it. The next version of its
    document may take it over (`Documents.latest`: one taker at most) and move its spans in
    place; it is then ``spent``: its tree describes the newer text."""

    __slots__ = ("result", "spent", "table")

    def __init__(self, result: ParseResult, table: SpanTable | None = None) -> None:
        self.result = result
        self.table = table
        self.spent = False


class Analysis:
    """One version of one document, parsed and checked. Given the parse of an earlier
    version, only the statements the edit touched are parsed again (`lsp.incremental`): the
    latest parse of an open document is taken over and its later statements moved in place;
    another earlier analysis (``previous``) is copied from.

    Once a newer version took its parse over, an analysis's ``result`` is parsed again when
    asked for (a request that still holds it); its ``diagnostics`` are not to be used then
    (their spans may have moved) — the newer analysis's are the document's."""

    def __init__(
        self,
        uri: str,
        path: Path | None,
        text: str,
        version: int | None,
        store: Documents,
        previous: Analysis | None = None,
        *,
        reuse: bool = True,
        line_starts: tuple[int, ...] | None = None,
    ) -> None:
        from openprose.checker import check

        self.uri = uri
        self.path = path
        self.version = version
        mark("analysing", uri, version)
        name = str(path) if path else f"<{uri}>"
        # The editor's document keeps the line table (`lsp.textdoc`): no count of the lines.
        self.source = (
            SourceFile.from_text(text, name)
            if line_starts is None
            else SourceFile(name, text, line_starts)
        )
        self._parse = self._parsed(store, previous if reuse else None, reuse)
        mark("parsed", uri, version)
        self.diagnostics: list[Diagnostic] = check(self._parse.result, contracts=store.contract)
        mark("checked", uri, version)
        self.lines = Lines(self.source, store.encoding)

    def _parsed(self, store: Documents, previous: Analysis | None, reuse: bool) -> _Parse:
        donor = store.latest.pop(self.uri, None) if reuse else None
        if donor is not None and not donor.spent:
            if donor.table is None:  # the first edit lists the spans, once
                donor.table = SpanTable.of(donor.result.program.body)
            with shielded():  # half-moved spans would be of no version at all
                donor.spent = True
                moved = reparse(donor.result, self.source, table=donor.table)
                if moved is not None:
                    parsed = _Parse(moved, donor.table)
                    donor.table = None
                    # Before a cancellation can land: the next version starts from here even
                    # when this one's check is cancelled.
                    store.latest[self.uri] = parsed
                    return parsed
                donor.spent = False  # declined: nothing was moved
                previous = None  # nor would copying from it be accepted: the same edit
        reused = None
        if previous is not None and not previous._parse.spent:
            reused = reparse(previous._parse.result, self.source)
        parsed = _Parse(reused or parse(self.source))
        if reuse:
            store.latest[self.uri] = parsed
        return parsed

    @property
    def result(self) -> ParseResult:
        if self._parse.spent:  # a newer version moved this tree's spans: parse it again
            self._parse = _Parse(parse(self.source))
        return self._parse.result

    @cached_property
    def index(self) -> Index:
        return build_index(self.result.program)

    @cached_property
    def typed_names(self) -> dict[str, dict[str, Any]]:
        """The names bound to typed results, with their JSON Schemas (as E181 sees them)."""
        from openprose.checker.shapes import typed_names

        return typed_names(self.result.program, self.path.parent if self.path else None)

    @cached_property
    def contract(self) -> ProgramContract:
        # Names only: a spent tree still holds them (only its spans moved), no new parse.
        return contract_of(self._parse.result.program)

    @cached_property
    def tokens(self) -> list[Token]:
        """The scanner's tokens (the parser does not keep them), for highlighting and hover."""
        return scan(self.source).tokens

    def token_at(self, offset: int) -> Token | None:
        """The token holding ``offset`` (its end included); layout tokens are not returned."""
        tokens = self.tokens
        starts = self._token_starts
        i = bisect_right(starts, offset) - 1
        while i >= 0 and tokens[i][2] == tokens[i][3]:  # zero-width layout tokens
            i -= 1
        if i >= 0 and tokens[i][2] <= offset <= tokens[i][3] and tokens[i][0] not in _LAYOUT:
            return tokens[i]
        return None

    @cached_property
    def _token_starts(self) -> list[int]:
        return [t[2] for t in self.tokens]


class Documents:
    """Open documents by URI, plus parsed files from disk (by path, refreshed on change)."""

    def __init__(self) -> None:
        self.encoding = "utf-16"  # what the client and server agreed at initialisation
        self.open: dict[str, Analysis] = {}
        # The newest parse of each open document, for the next version to take over.
        self.latest: dict[str, _Parse] = {}
        self.roots: list[Path] = []
        self._disk: dict[Path, tuple[float, Analysis]] = {}

    # --- open documents ---------------------------------------------------------------------

    def update(self, uri: str, text: str, version: int | None) -> Analysis:
        analysis = Analysis(uri, path_of(uri), text, version, self, self.open.get(uri))
        self.open[uri] = analysis
        return analysis

    def close(self, uri: str) -> None:
        self.open.pop(uri, None)
        self.latest.pop(uri, None)

    def project_of(self, analysis: Analysis) -> Path:
        """The project a document belongs to: the workspace root holding it, else its
        folder (an untitled buffer: the first root, else the working directory)."""
        if analysis.path is None:
            return self.roots[0] if self.roots else Path.cwd()
        resolved = resolve_path(analysis.path)
        for root in self.roots:
            if resolved.is_relative_to(resolve_path(root)):
                return root
        return resolved.parent

    # --- files ------------------------------------------------------------------------------

    def file(self, path: Path) -> Analysis | None:
        """The analysis of a program file: its open buffer when it is open, else the disk."""
        resolved = resolve_path(path)
        for analysis in self.open.values():
            if analysis.path is not None and resolve_path(analysis.path) == resolved:
                return analysis
        try:
            mtime = resolved.stat().st_mtime
            cached = self._disk.get(resolved)
            if cached is not None and cached[0] == mtime:
                return cached[1]
            text = resolved.read_text(encoding="utf-8").removeprefix("\ufeff")
        except (OSError, UnicodeDecodeError):
            return None
        analysis = Analysis(resolved.as_uri(), resolved, text, None, self, reuse=False)
        self._disk[resolved] = (mtime, analysis)
        return analysis

    def imported(self, importer: Analysis, spec: str) -> Path | None:
        """The file a local ``use`` path names, resolved as the checker resolves it."""
        if not is_local_path(spec):
            return None
        file = Path(spec)
        if not file.is_absolute():
            if importer.path is None:
                return None
            file = importer.path.parent / file
        return file

    def contract(self, spec: str, base_dir: Path | None) -> ProgramContract | None:
        """The checker's contract lookup: an open buffer's unsaved text wins over the disk."""
        if is_local_path(spec) and base_dir is not None:
            wanted = resolve_path(Path(spec) if Path(spec).is_absolute() else base_dir / spec)
            for analysis in self.open.values():
                if analysis.path is not None and resolve_path(analysis.path) == wanted:
                    return analysis.contract
        return local_contracts(spec, base_dir)

    def workspace(self) -> Iterator[Analysis]:
        """Every open document, then every ``.prose`` file under the workspace roots."""
        from openprose import find_programs

        seen: set[Path] = set()
        for analysis in list(self.open.values()):
            if analysis.path is not None:
                seen.add(resolve_path(analysis.path))
            yield analysis
        for root in self.roots:
            for program in find_programs(root):
                resolved = resolve_path(program)
                if resolved in seen:
                    continue
                seen.add(resolved)
                found = self.file(resolved)
                if found is not None:
                    yield found


def path_of(uri: str) -> Path | None:
    """The file system path of a ``file:`` URI (None for untitled buffers and other schemes)."""
    from urllib.parse import unquote, urlparse

    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return Path(unquote(parsed.path))


def resolve_path(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path.absolute()

"""The language server: pygls wiring from LSP messages to the feature modules.

Diagnostics are debounced: a change to a document that has been quiet for ``PAUSE_S`` is
analysed at once (a single edit gets its diagnostics without waiting); a change that follows
another sooner (someone typing) waits until the document has been quiet for ``QUIET_S``.
Analyses run on a worker thread (`openprose.lsp.background`), so the server keeps reading
while one runs, and a change cancels the analysis of the version it replaces: a burst
of keystrokes starts at most two analyses (its first keystroke's, cancelled by the second, and
the one after the pause) and completes one.
Requests (hover, completion...) always see the current text — a document changed since its last
analysis is analysed first (waiting for the running analysis of that text when there is one).
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections import Counter
from collections.abc import Sequence
from typing import Any

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer

from cliconventions import __version__
from openprose.depth import deep_recursion
from openprose.lsp import completion, fixes, highlight, hover, navigation, outline, rename
from openprose.lsp.background import Job
from openprose.lsp.convert import diagnostic
from openprose.lsp.documents import Analysis, Documents, path_of, resolve_path
from openprose.lsp.folding import folding_ranges
from openprose.lsp.formatting import format_document, format_range
from openprose.lsp.inlay import inlay_hints, project_models
from openprose.lsp.publish import DiagnosticsWriter, send
from openprose.lsp.signature import signature_help
from openprose.lsp.textdoc import LineTableDocument, ProseWorkspace
from openprose.lsp.trace import mark, recent
from openprose.lsp.transport import Inbox, serve_stdio

logger = logging.getLogger("openprose.lsp")

# A pause: longer than the gap between two keystrokes of someone typing (50 ms at 20 keys/s).
QUIET_S = 0.075
# A change this long after the previous one starts a burst: it is analysed at once. Longer
# than QUIET_S: on a loaded machine the server handles a burst's keystrokes unevenly (gaps of
# 100-300 ms between two of them were seen), and each gap read as a pause started (and the
# next keystroke cancelled) one more analysis.
PAUSE_S = 0.5
# The custom request that reports how many analyses were started, completed and cancelled.
STATS_METHOD = "prose/analysisStats"
_TRIGGERS = [":", "{", "(", '"', " "]


class ProseServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("prose-lsp", __version__)
        self.store = Documents()
        self.pending: dict[str, asyncio.TimerHandle] = {}
        self.jobs: dict[str, Job[Analysis]] = {}  # the analysis running per document
        self.last_change: dict[str, float] = {}
        self.published: dict[str, Analysis] = {}  # the analysis whose diagnostics were sent
        self.diagnostics_writer = DiagnosticsWriter()
        self.stats: Counter[str] = Counter()  # analyses started / completed / cancelled
        self.inbox: Inbox | None = None  # messages read ahead (set when serving stdio)
        # The semantic tokens last sent per document, by result id (for delta requests).
        self.sent_tokens: dict[str, tuple[str, Sequence[int]]] = {}
        self.results = 0  # numbers the result ids of semantic tokens

    def analysis(self, uri: str) -> Analysis:
        """The analysis of the document's current text (analysed now when out of date)."""
        document = self.workspace.get_text_document(uri)
        known = self.store.open.get(uri)
        if (
            known is not None
            and known.version == document.version
            and known.source.text == document.source
        ):
            return known
        job = self.jobs.get(uri)
        if job is not None and job.version == document.version:
            done = job.future.result()  # the worker is analysing this very text: wait for it
            if done is not None and done.source.text == document.source:
                self.store.open[uri] = done
                return done
        # A job moving the previous parse's spans finishes the move first (a few ms): this
        # analysis then starts from its parse instead of parsing everything.
        self.cancel_analysis(uri, settle=True)
        self.stats["started"] += 1
        self.stats["completed"] += 1
        return self.store.update(uri, document.source, document.version)

    def schedule(self, uri: str) -> None:
        """The document changed (or its imports did): analyse it now or after the pause."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        quiet = now - self.last_change.get(uri, float("-inf")) >= PAUSE_S
        self.last_change[uri] = now
        self.cancel_analysis(uri)  # analysing a text that no longer exists
        handle = self.pending.pop(uri, None)
        if handle is not None:
            handle.cancel()
            quiet = False
        if quiet:
            self.start(uri)
        else:
            mark("deferred", uri, self.workspace.get_text_document(uri).version)
            self.pending[uri] = loop.call_later(QUIET_S, self.publish, uri)

    def publish(self, uri: str) -> None:
        """The pause is over: analyse the document, unless more messages are waiting."""
        self.pending.pop(uri, None)
        if uri not in self.workspace.text_documents:
            return  # closed meanwhile
        mark("pause-over", uri, self.workspace.get_text_document(uri).version)
        if self.inbox is not None and self.inbox.waiting():
            # More messages arrived (a burst of changes): this version may already be stale,
            # and checking it would delay them; look again once they are handled.
            self.pending[uri] = asyncio.get_running_loop().call_later(QUIET_S, self.publish, uri)
            return
        self.start(uri)

    def start(self, uri: str) -> None:
        """Analyse the document's current text on the worker, then publish its diagnostics."""
        document = self.workspace.get_text_document(uri)
        known = self.store.open.get(uri)
        if known is not None and known.version == document.version:
            self.send_diagnostics(uri, known)
            return
        running = self.jobs.get(uri)
        if running is not None and running.version == document.version:
            return
        self.cancel_analysis(uri)
        store, text, number = self.store, document.source, document.version
        starts = document.line_starts if isinstance(document, LineTableDocument) else None
        previous = self.store.open.get(uri) or self.published.get(uri)
        mark("queued", uri, number)
        job = Job(
            lambda: Analysis(uri, path_of(uri), text, number, store, previous, line_starts=starts),
            number,
        )
        self.jobs[uri] = job
        self.stats["started"] += 1
        loop = asyncio.get_running_loop()
        job.future.add_done_callback(lambda _: loop.call_soon_threadsafe(self.finished, uri, job))

    def finished(self, uri: str, job: Job[Analysis]) -> None:
        mark("handed-back", uri, job.version)
        if self.jobs.get(uri) is job:
            del self.jobs[uri]
        try:
            analysis = job.future.result()
        except Exception as error:  # noqa: BLE001  # a bug: one log line, the server goes on
            logger.error("analysing %s failed (%s: %s)", uri, type(error).__name__, error)
            return
        if analysis is None:
            self.stats["cancelled"] += 1
            return
        self.stats["completed"] += 1
        if uri not in self.workspace.text_documents:
            return  # closed meanwhile
        document = self.workspace.get_text_document(uri)
        if analysis.version != document.version or analysis.source.text != document.source:
            return  # changed meanwhile: that change scheduled the next analysis
        known = self.store.open.get(uri)
        if known is None or known.version != analysis.version:
            self.store.open[uri] = analysis
        else:
            analysis = known  # a request analysed this version meanwhile
        self.send_diagnostics(uri, analysis)

    def send_diagnostics(self, uri: str, analysis: Analysis) -> None:
        before = self.published.get(uri)
        if analysis is before:
            return  # this version's diagnostics went out already
        self.published[uri] = analysis
        message = self.diagnostics_writer.message(uri, analysis)
        mark("converted", uri, analysis.version)
        send(self.protocol, message)
        mark("written", uri, analysis.version)
        importers = self.importers_of(analysis)
        if importers and (before is None or before.contract != analysis.contract):
            for importer in importers:  # their E026-E028 were checked against the old contract
                self.store.open.pop(importer, None)
                self.schedule(importer)

    def remember_tokens(self, uri: str, data: Sequence[int]) -> str:
        """Keep the tokens sent for ``uri`` (a delta request is relative to them); their id."""
        self.results += 1
        result_id = str(self.results)
        self.sent_tokens[uri] = (result_id, data)
        return result_id

    def result_id(self, analysis: Analysis) -> str:
        """An id naming this analysis's diagnostics (the same text gives the same id)."""
        return f"{analysis.version}:{len(analysis.source.text)}:{hash(analysis.source.text)}"

    def cancel_analysis(self, uri: str, *, settle: bool = False) -> None:
        """Cancel the document's running analysis; with ``settle``, wait for one that is
        inside work it cannot leave half-done."""
        job = self.jobs.pop(uri, None)
        if job is not None and job.cancel() and settle:
            job.future.result()

    def importers_of(self, changed: Analysis) -> list[str]:
        """The other open documents that import ``changed``."""
        if changed.path is None:
            return []
        wanted = resolve_path(changed.path)
        return [
            uri
            for uri, other in list(self.store.open.items())
            if other is not changed
            and any(
                (file := self.store.imported(other, use.path.value)) is not None
                and resolve_path(file) == wanted
                for use in other.index.uses
            )
        ]


def _offset(server: ProseServer, uri: str, position: lsp.Position) -> tuple[Analysis, int]:
    analysis = server.analysis(uri)
    return analysis, analysis.lines.offset(position.line, position.character)


def create_server() -> ProseServer:
    server = ProseServer()

    @server.feature(lsp.INITIALIZE)
    def initialize(ls: ProseServer, params: lsp.InitializeParams) -> None:
        roots = [path_of(f.uri) for f in params.workspace_folders or []]
        if not roots and params.root_uri:
            roots = [path_of(params.root_uri)]
        ls.store.roots = [r for r in roots if r is not None and r.is_dir()]
        ls.store.encoding = str(ls.workspace.position_encoding or "utf-16")
        # pygls made its workspace just before; ours differs only in the documents it makes
        # (changed by one splice: `lsp.textdoc`), and none exists yet.
        ls.workspace.__class__ = ProseWorkspace

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: ProseServer, params: lsp.DidOpenTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: ProseServer, params: lsp.DidChangeTextDocumentParams) -> None:
        mark("received", params.text_document.uri, params.text_document.version)
        ls.schedule(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: ProseServer, params: lsp.DidSaveTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: ProseServer, params: lsp.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        handle = ls.pending.pop(uri, None)
        if handle is not None:
            handle.cancel()
        ls.cancel_analysis(uri)
        ls.store.close(uri)
        ls.last_change.pop(uri, None)
        ls.published.pop(uri, None)
        ls.diagnostics_writer.forget(uri)
        ls.sent_tokens.pop(uri, None)
        ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    def on_hover(ls: ProseServer, params: lsp.HoverParams) -> lsp.Hover | None:
        analysis, offset = _offset(ls, params.text_document.uri, params.position)
        return hover.hover(ls.store, analysis, offset)

    @server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    def on_definition(ls: ProseServer, params: lsp.DefinitionParams) -> list[lsp.Location]:
        analysis, offset = _offset(ls, params.text_document.uri, params.position)
        return navigation.definition(ls.store, analysis, offset)

    @server.feature(lsp.TEXT_DOCUMENT_REFERENCES)
    def on_references(ls: ProseServer, params: lsp.ReferenceParams) -> list[lsp.Location]:
        analysis, offset = _offset(ls, params.text_document.uri, params.position)
        return navigation.references(ls.store, analysis, offset, params.context.include_declaration)

    @server.feature(lsp.TEXT_DOCUMENT_RENAME, lsp.RenameOptions(prepare_provider=True))
    def on_rename(ls: ProseServer, params: lsp.RenameParams) -> lsp.WorkspaceEdit:
        analysis, offset = _offset(ls, params.text_document.uri, params.position)
        try:
            return rename.rename(ls.store, analysis, offset, params.new_name)
        except rename.RenameError as error:  # the editor shows the message
            raise JsonRpcInvalidParams(str(error)) from None

    @server.feature(lsp.TEXT_DOCUMENT_PREPARE_RENAME)
    def on_prepare_rename(ls: ProseServer, params: lsp.PrepareRenameParams) -> lsp.Range | None:
        analysis, offset = _offset(ls, params.text_document.uri, params.position)
        return rename.prepare_rename(ls.store, analysis, offset)

    @server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_HIGHLIGHT)
    def on_highlight(
        ls: ProseServer, params: lsp.DocumentHighlightParams
    ) -> list[lsp.DocumentHighlight]:
        analysis, offset = _offset(ls, params.text_document.uri, params.position)
        return navigation.highlights(ls.store, analysis, offset)

    @server.feature(
        lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionOptions(trigger_characters=_TRIGGERS)
    )
    def on_completion(ls: ProseServer, params: lsp.CompletionParams) -> lsp.CompletionList:
        analysis, offset = _offset(ls, params.text_document.uri, params.position)
        return lsp.CompletionList(
            is_incomplete=False, items=completion.complete(analysis, offset, ls.store)
        )

    @server.feature(lsp.TEXT_DOCUMENT_FORMATTING)
    def on_formatting(
        ls: ProseServer, params: lsp.DocumentFormattingParams
    ) -> list[lsp.TextEdit] | None:
        return format_document(ls.analysis(params.text_document.uri))

    @server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def on_symbols(ls: ProseServer, params: lsp.DocumentSymbolParams) -> list[lsp.DocumentSymbol]:
        return outline.document_symbols(ls.analysis(params.text_document.uri))

    @server.feature(lsp.TEXT_DOCUMENT_FOLDING_RANGE)
    def on_folding(ls: ProseServer, params: lsp.FoldingRangeParams) -> list[lsp.FoldingRange]:
        return folding_ranges(ls.analysis(params.text_document.uri))

    @server.feature(lsp.WORKSPACE_SYMBOL)
    def on_workspace_symbols(
        ls: ProseServer, params: lsp.WorkspaceSymbolParams
    ) -> list[lsp.WorkspaceSymbol]:
        return outline.workspace_symbols(ls.store, params.query)

    tokens_options = lsp.SemanticTokensRegistrationOptions(
        legend=highlight.LEGEND,
        full=lsp.SemanticTokensFullDelta(delta=True),
        range=True,
    )

    @server.feature(lsp.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, tokens_options)
    def on_tokens(ls: ProseServer, params: lsp.SemanticTokensParams) -> lsp.SemanticTokens:
        uri = params.text_document.uri
        found = highlight.semantic_tokens(ls.analysis(uri))
        found.result_id = ls.remember_tokens(uri, found.data)
        return found

    @server.feature(lsp.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL_DELTA)
    def on_tokens_delta(
        ls: ProseServer, params: lsp.SemanticTokensDeltaParams
    ) -> lsp.SemanticTokens | lsp.SemanticTokensDelta:
        uri = params.text_document.uri
        found = highlight.semantic_tokens(ls.analysis(uri))
        before = ls.sent_tokens.get(uri)
        result_id = ls.remember_tokens(uri, found.data)
        if before is None or before[0] != params.previous_result_id:
            found.result_id = result_id  # not the tokens the editor holds: all of them
            return found
        return lsp.SemanticTokensDelta(
            edits=highlight.token_edits(before[1], found.data), result_id=result_id
        )

    @server.feature(lsp.TEXT_DOCUMENT_SEMANTIC_TOKENS_RANGE)
    def on_tokens_range(
        ls: ProseServer, params: lsp.SemanticTokensRangeParams
    ) -> lsp.SemanticTokens:
        analysis = ls.analysis(params.text_document.uri)
        start, end = params.range.start, params.range.end
        within = (
            analysis.lines.offset(start.line, start.character),
            analysis.lines.offset(end.line, end.character),
        )
        return highlight.semantic_tokens(analysis, within)

    @server.feature(
        lsp.TEXT_DOCUMENT_DIAGNOSTIC,
        lsp.DiagnosticOptions(inter_file_dependencies=True, workspace_diagnostics=False),
    )
    def on_pull_diagnostics(
        ls: ProseServer, params: lsp.DocumentDiagnosticParams
    ) -> lsp.RelatedFullDocumentDiagnosticReport | lsp.RelatedUnchangedDocumentDiagnosticReport:
        """The diagnostics of the current text, for clients that ask rather than listen;
        unchanged when the client holds those of this very analysis."""
        analysis = ls.analysis(params.text_document.uri)
        result_id = ls.result_id(analysis)
        if params.previous_result_id == result_id:
            return lsp.RelatedUnchangedDocumentDiagnosticReport(result_id=result_id)
        return lsp.RelatedFullDocumentDiagnosticReport(
            items=[
                fixes.attach(analysis, diagnostic(analysis.lines, d), d)
                for d in analysis.diagnostics
            ],
            result_id=result_id,
        )

    @server.feature(
        lsp.TEXT_DOCUMENT_SIGNATURE_HELP,
        lsp.SignatureHelpOptions(trigger_characters=["(", ","], retrigger_characters=[" "]),
    )
    def on_signature_help(
        ls: ProseServer, params: lsp.SignatureHelpParams
    ) -> lsp.SignatureHelp | None:
        analysis, offset = _offset(ls, params.text_document.uri, params.position)
        return signature_help(ls.store, analysis, offset)

    @server.feature(lsp.TEXT_DOCUMENT_INLAY_HINT)
    def on_inlay_hints(ls: ProseServer, params: lsp.InlayHintParams) -> list[lsp.InlayHint]:
        analysis = ls.analysis(params.text_document.uri)
        start, end = params.range.start, params.range.end
        within = (
            analysis.lines.offset(start.line, start.character),
            analysis.lines.offset(end.line, end.character),
        )
        project = ls.store.project_of(analysis)
        return inlay_hints(ls.store, analysis, within, project_models(project))

    @server.feature(lsp.TEXT_DOCUMENT_RANGE_FORMATTING)
    def on_range_formatting(
        ls: ProseServer, params: lsp.DocumentRangeFormattingParams
    ) -> list[lsp.TextEdit] | None:
        start, end = params.range.start, params.range.end
        last = end.line if end.character or end.line == start.line else end.line - 1
        return format_range(ls.analysis(params.text_document.uri), range(start.line, last + 1))

    @server.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix]),
    )
    def on_code_action(ls: ProseServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        return fixes.code_actions(params.text_document.uri, params.context.diagnostics)

    @server.feature(STATS_METHOD)
    def on_stats(ls: ProseServer, params: Any) -> dict[str, Any]:
        """How many analyses ran, and the recent events of `lsp.trace`: for tests and
        benches (not part of LSP)."""
        found: dict[str, Any] = {
            key: ls.stats[key] for key in ("started", "completed", "cancelled")
        }
        found["trace"] = [list(event) for event in recent()]
        return found

    return server


def serve(stdin: Any = None, stdout: Any = None, *, debug: bool = False) -> int:
    """Run the server over stdio until the client exits it; the exit status (`serve_stdio`).
    Its log goes to stderr (editors show it in their LSP log): one line per problem, or with
    ``debug`` everything pygls logs, tracebacks included."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        logging.Formatter("prose lsp: %(levelname)s: %(message)s") if debug else _OneLine()
    )
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING, handlers=[handler])
    server = create_server()
    try:
        with deep_recursion():  # every feature walks the tree, nested up to E115's limit
            return asyncio.run(
                _serve_stdio(server, stdin or _own_stdin(), stdout or sys.stdout.buffer)
            )
    except SystemExit as done:  # `exit` handled in a callback rather than in line
        return done.code if isinstance(done.code, int) else 1
    except BrokenPipeError:
        logging.getLogger("openprose.lsp").error("the client closed its end; stopping")
        return 1
    finally:
        server.shutdown()  # type: ignore[no-untyped-call]  # pygls leaves it untyped


def _own_stdin() -> Any:
    """A reader of the standard input of our own. The reader thread (a daemon) is blocked in
    a read when the server exits; had it been reading ``sys.stdin.buffer``, the interpreter's
    shutdown would wait for that buffer's lock and abort ("could not acquire lock for
    <stdin> at interpreter shutdown", exit status -6)."""
    try:
        return open(sys.stdin.fileno(), "rb", closefd=False)  # the process's stdin, not closed
    except (AttributeError, OSError, ValueError):  # no file descriptor behind it
        return sys.stdin.buffer


async def _serve_stdio(server: ProseServer, stdin: Any, stdout: Any) -> int:
    server.inbox = Inbox(stdin, asyncio.get_running_loop())
    return await serve_stdio(server, server.inbox, stdout)


class _OneLine(logging.Formatter):
    """``prose lsp: error: Unable to handle message (JSONDecodeError: ...)`` — no traceback:
    a client sending bad JSON is told so (pygls answers it too), and the log stays readable."""

    def __init__(self) -> None:
        super().__init__("prose lsp: %(levelname)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = f"prose lsp: {record.levelname.lower()}: {record.getMessage()}"
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            text += f" ({type(error).__name__}: {error})"
        return text

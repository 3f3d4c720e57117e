"""Quick fixes: the front end's own fix data on a diagnostic, as LSP code actions.

The edits travel with the published diagnostic (its ``data``), so a code-action request needs
no second analysis and a fix always applies to the text the diagnostic was computed on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lsprotocol import types as lsp

from openprose.diagnostics import Diagnostic
from openprose.lsp.convert import range_of
from openprose.lsp.documents import Analysis


def attach(analysis: Analysis, published: lsp.Diagnostic, found: Diagnostic) -> lsp.Diagnostic:
    """Put the diagnostic's fixes (title and edits, in client positions) on its ``data``."""
    fixes = [
        {
            "title": title,
            "edits": [
                {"range": _range_json(analysis, span), "newText": text} for span, text in edits
            ],
        }
        for title, edits in _fixes_of(found)
    ]
    if fixes:
        published.data = {"fixes": fixes}
    return published


def _fixes_of(found: Diagnostic) -> list[tuple[str, list[tuple[Any, str]]]]:
    """The front end's fixes for a diagnostic: (title, [(span, replacement)]). The only place
    that reads the front end's fix type."""
    return []


def _range_json(analysis: Analysis, span: Any) -> dict[str, Any]:
    r = range_of(analysis.lines, span)
    return {
        "start": {"line": r.start.line, "character": r.start.character},
        "end": {"line": r.end.line, "character": r.end.character},
    }


def code_actions(uri: str, diagnostics: Sequence[lsp.Diagnostic]) -> list[lsp.CodeAction]:
    actions = []
    for published in diagnostics:
        data = published.data if isinstance(published.data, dict) else {}
        for fix in data.get("fixes", ()):
            edits = [
                lsp.TextEdit(
                    range=lsp.Range(
                        lsp.Position(e["range"]["start"]["line"], e["range"]["start"]["character"]),
                        lsp.Position(e["range"]["end"]["line"], e["range"]["end"]["character"]),
                    ),
                    new_text=e["newText"],
                )
                for e in fix["edits"]
            ]
            actions.append(
                lsp.CodeAction(
                    title=fix["title"],
                    kind=lsp.CodeActionKind.QuickFix,
                    diagnostics=[published],
                    edit=lsp.WorkspaceEdit(changes={uri: edits}),
                    is_preferred=len(data["fixes"]) == 1,
                )
            )
    return actions

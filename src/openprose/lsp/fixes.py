"""Quick fixes: the front end's own fix on a diagnostic (``Diagnostic.fix``), as a code action.

The edits travel with the published diagnostic (its ``data``, in client positions), so a
code-action request needs no second analysis and a fix always applies to the text the
diagnostic was computed on. A fix the front end marks unsafe (a likely guess, such as the
nearest keyword to a misspelled one) is offered too, but not as the preferred action.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lsprotocol import types as lsp

from openprose.diagnostics import Diagnostic
from openprose.lsp.convert import range_of
from openprose.lsp.documents import Analysis


def attach(analysis: Analysis, published: lsp.Diagnostic, found: Diagnostic) -> lsp.Diagnostic:
    """Put the diagnostic's fix (title, safety and edits, in client positions) on its ``data``."""
    fix = found.fix
    if fix is not None:
        edits = []
        for edit in fix.edits:
            r = range_of(analysis.lines, edit.span)
            edits.append(
                {
                    "range": [r.start.line, r.start.character, r.end.line, r.end.character],
                    "newText": edit.text,
                }
            )
        published.data = {"fix": {"title": fix.title, "safe": fix.safe, "edits": edits}}
    return published


def code_actions(uri: str, diagnostics: Sequence[lsp.Diagnostic]) -> list[lsp.CodeAction]:
    """A quick fix for each diagnostic in the request that carries one."""
    actions = []
    for published in diagnostics:
        fix = _fix_data(published.data)
        if fix is None:
            continue
        edits = [
            lsp.TextEdit(
                range=lsp.Range(lsp.Position(*e["range"][:2]), lsp.Position(*e["range"][2:])),
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
                is_preferred=bool(fix["safe"]),
            )
        )
    return actions


def _fix_data(data: Any) -> dict[str, Any] | None:
    """The fix this server put on a diagnostic; None for anything else a client sends back."""
    if not isinstance(data, dict):
        return None
    fix = data.get("fix")
    if not isinstance(fix, dict) or not isinstance(fix.get("edits"), list):
        return None
    for edit in fix["edits"]:
        if not (
            isinstance(edit, dict)
            and isinstance(edit.get("newText"), str)
            and isinstance(edit.get("range"), list)
            and len(edit["range"]) == 4
            and all(isinstance(x, int) and x >= 0 for x in edit["range"])
        ):
            return None
    return fix

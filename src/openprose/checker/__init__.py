"""The OpenProse checker: every semantic rule of the reference's validation tables.

``check`` walks the tree once (after a pass over the top level that registers the hoisted
names: agents, blocks and imports) and returns the parser's diagnostics plus its own, sorted by
position. Checks that need the outside world — agent memory on disk, imported programs'
contracts — run when the information is at hand and otherwise leave an INFO note (I001, I002).
"""

from __future__ import annotations

import sys
from pathlib import Path

from openprose import nodes as n
from openprose.checker import agents, bindings, blocks, control, imports, sessions
from openprose.checker.state import Checker, Handler, broken_names
from openprose.contracts import ContractLookup, local_contracts
from openprose.diagnostics import Diagnostic
from openprose.parser import ParseResult, parse_text

__all__ = ["check", "check_program"]


def _invalid(ck: Checker, node: n.Invalid) -> None:
    """A statement the parser rejected: what it declares is not reported as undefined later."""
    ck.broken.update(broken_names(node))


_DISPATCH: dict[type, Handler] = {
    n.Invalid: _invalid,
    **bindings.HANDLERS,
    **imports.HANDLERS,
    **agents.HANDLERS,
    **sessions.HANDLERS,
    **blocks.HANDLERS,
    **control.HANDLERS,
}

# Statements that declare rather than run; an `input` may follow only these (E022).
_DECLARATIONS = (n.Use, n.Input, n.AgentDef, n.BlockDef, n.Invalid)

# Each nesting level costs a few Python frames; programs nest hundreds of levels deep.
_RECURSION_LIMIT = 20_000


def check(
    result: ParseResult | str,
    *,
    project_dir: Path | None = None,
    contracts: ContractLookup | None = None,
) -> list[Diagnostic]:
    """The parse diagnostics plus the checker's, sorted by (line, column). ``result`` may
    also be program text, which is parsed first."""
    if isinstance(result, str):
        result = parse_text(result)
    found = list(result.diagnostics)
    found.extend(check_program(result.program, project_dir=project_dir, contracts=contracts))
    found.sort(key=lambda d: (d.line, d.column))
    return found


def check_program(
    program: n.Program,
    *,
    project_dir: Path | None = None,
    contracts: ContractLookup | None = None,
) -> list[Diagnostic]:
    """The checker's own diagnostics for a parsed program, in walk order."""
    ck = Checker(program.path, project_dir, contracts or local_contracts, _DISPATCH)
    body = program.body
    _register_hoisted(ck, body)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, _RECURSION_LIMIT))
    try:
        visit = ck.visit
        for stmt in body:
            if not isinstance(stmt, _DECLARATIONS):
                ck.seen_executable = True
            visit(stmt)
        ck.finish()
    finally:
        sys.setrecursionlimit(limit)
    return ck.diagnostics


def _register_hoisted(ck: Checker, body: tuple[n.Stmt, ...]) -> None:
    """Agents, blocks and imports are known program-wide, wherever they are written (and so
    are the names of top-level statements the parser rejected, for the same reason)."""
    for stmt in body:
        if type(stmt) is n.Invalid:
            ck.broken.update(broken_names(stmt))
    for stmt in body:
        if type(stmt) is n.AgentDef:
            agents.register_agent(ck, stmt)
    for stmt in body:
        if type(stmt) is n.BlockDef:
            blocks.register_block(ck, stmt)
        elif type(stmt) is n.Use:
            imports.register_use(ck, stmt)

"""The OpenProse checker: every semantic rule of the reference's validation tables.

``check`` walks the tree once (after a pass over the top level that registers the hoisted
names: agents, blocks and imports) and returns the parser's diagnostics plus its own, sorted by
position. Checks that need the outside world — agent memory on disk, imported programs'
contracts — run when the information is at hand and otherwise leave an INFO note (I001, I002).
"""

from __future__ import annotations

import gc
from pathlib import Path

from openprose import nodes as n
from openprose.checker import (
    agents,
    bindings,
    blocks,
    control,
    imports,
    questions,
    sessions,
    shapes,
)
from openprose.checker.state import Checker, Handler, broken_names
from openprose.codes import diagnostic
from openprose.contracts import ContractLookup, local_contracts
from openprose.depth import deep_recursion
from openprose.diagnostics import Diagnostic
from openprose.parser import ParseResult, parse_text
from openprose.scanner import MAX_DIAGNOSTICS
from openprose.source import SourceFile

__all__ = ["check", "check_program", "diagnose"]


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
    **questions.HANDLERS,
}

# Statements that declare rather than run; an `input` may follow only these (E022).
_DECLARATIONS = (n.Use, n.Input, n.AgentDef, n.BlockDef, n.Invalid)


def check(
    result: ParseResult | str,
    *,
    project_dir: Path | None = None,
    contracts: ContractLookup | None = None,
    memory_on_disk: bool | None = None,
) -> list[Diagnostic]:
    """The parse diagnostics plus the checker's, sorted by (line, column). ``result`` may
    also be program text, which is parsed first. Agent memory is looked up on disk only when
    ``memory_on_disk`` (default: when ``project_dir`` is given, i.e. the user named the
    project); otherwise those checks are deferred to run time (I001)."""
    if isinstance(result, str):
        result = parse_text(result)
    found = list(result.diagnostics)
    # As in `parse`: the walk allocates scopes and diagnostics it keeps until it returns, so
    # cyclic-GC passes while it runs (over the whole tree, once it is in the old generation)
    # find nothing to free. Acyclic garbage is still freed by reference counting.
    collecting = gc.isenabled()
    gc.disable()
    try:
        found.extend(
            check_program(
                result.program,
                project_dir=project_dir,
                contracts=contracts,
                source=result.source,
                memory_on_disk=memory_on_disk,
            )
        )
    finally:
        if collecting:
            gc.enable()
    found.sort(key=lambda d: (d.line, d.column))
    return _capped(found)


def diagnose(parsed: ParseResult, project_dir: Path) -> list[Diagnostic]:
    """What gates a run (`prose run`, and every program it imports): the parser's and the
    checker's diagnostics in source order, with imported programs' contracts read from local
    files and the project's import cache (never the network)."""
    # Agent memory is checked where `resume:` runs (the run may create it before then), not
    # against what the disk holds before the run (docs/decisions.md, Issue 20 item 4).
    found = check(
        parsed, project_dir=project_dir, contracts=_cached(project_dir), memory_on_disk=False
    )
    return sorted(found, key=lambda d: (d.span.start, d.span.end))


_STOPPED = ("E117", "W155")


def _capped(found: list[Diagnostic]) -> list[Diagnostic]:
    """At most MAX_DIAGNOSTICS, the first by position, then one note that reporting stopped:
    E117 when an error was left out (or the parser or checker had already stopped on one),
    else W155 — so the exit status still says whether the program has errors. The parser and
    the checker each stop at the limit; together they may pass it."""
    stopped = [d for d in found if d.code in _STOPPED]
    if not stopped and len(found) <= MAX_DIAGNOSTICS:
        return found
    rest = [d for d in found if d.code not in _STOPPED]
    kept, left_out = rest[:MAX_DIAGNOSTICS], rest[MAX_DIAGNOSTICS:]
    error = any(d.code == "E117" for d in stopped) or any(d.is_error for d in left_out)
    last = kept[-1] if kept else stopped[-1]
    kept.append(_stopped(last, error=error))
    return kept


def _stopped(last: Diagnostic, *, error: bool) -> Diagnostic:
    """Reporting stopped after ``last``: E117 if an error was left out, else W155."""
    message = f"Too many diagnostics; stopped reporting after {MAX_DIAGNOSTICS}"
    return diagnostic("E117" if error else "W155", message, last.span, last.path)


def check_program(
    program: n.Program,
    *,
    project_dir: Path | None = None,
    contracts: ContractLookup | None = None,
    source: SourceFile | None = None,
    memory_on_disk: bool | None = None,
) -> list[Diagnostic]:
    """The checker's own diagnostics for a parsed program, in walk order. Without a
    ``contracts`` lookup, imported programs' contracts come from local ``.prose`` files and,
    when ``project_dir`` is given, from its import cache (``.prose/imports/``)."""
    if contracts is None:
        contracts = local_contracts if project_dir is None else _cached(project_dir)
    ck = Checker(program.path, project_dir, contracts, _DISPATCH)
    ck.source = source
    ck.check_imported = check
    ck.program = program
    ck.memory_on_disk = project_dir is not None if memory_on_disk is None else memory_on_disk
    body = program.body
    _register_hoisted(ck, body)
    with deep_recursion():
        visit = ck.visit
        for stmt in body:
            if not isinstance(stmt, _DECLARATIONS) and not ck.seen_executable:
                ck.seen_executable = True
                ck.first_executable = stmt
            visit(stmt)
        ck.finish()
        shapes.check_typed_fields(ck, program)
    if ck.dropped_errors or ck.dropped_others:
        ck.diagnostics.append(_stopped(ck.diagnostics[-1], error=bool(ck.dropped_errors)))
    return ck.diagnostics


def _cached(project_dir: Path) -> ContractLookup:
    from openprose.imports import cache_contracts  # reads files only; never the network

    return cache_contracts(project_dir)


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

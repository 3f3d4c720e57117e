"""The checker's state and its one tree walk; the concern modules register node handlers."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openprose import nodes as n
from openprose.checker.branches import (
    BranchGroup,
    enclosing_statements,
    find_groups,
    unbound_fix,
)
from openprose.checker.scope import Guard, Scope, Var
from openprose.codes import CODES, diagnostic
from openprose.contracts import ContractLookup, ProgramContract
from openprose.diagnostics import Diagnostic, Fix, Severity
from openprose.scanner import MAX_DIAGNOSTICS
from openprose.source import SourceFile, Span
from openprose.suggest import closest, is_misspelling
from openprose.vocabulary import Persist

Handler = Callable[["Checker", Any], None]


# Why a check that needs the project is deferred (`prose check` finds the project `prose run`
# would use only when it is one: a settings file, or a `.prose/` folder from a run).
NO_PROJECT = "no project was found (no prose.toml, no .prose/ from a run; or --project-dir DIR)"


@dataclass(slots=True)
class AgentInfo:
    node: n.AgentDef
    persist: Persist
    persist_path: str | None = None


@dataclass(slots=True)
class ImportInfo:
    node: n.Use
    name: str
    looked_up: bool = False
    contract: ProgramContract | None = None
    file_missing: bool = False


@dataclass(slots=True)
class PendingName:
    """A name used where it cannot be resolved in order (inside a block definition or an agent
    definition — both run wherever they are invoked); checked against every flat name at the end."""

    name: str
    span: Span
    code: str
    message: str
    fix: Fix | None = None


# Fields of nodes that declare names (flat or scoped).
_DECLARING = {
    n.Binding: ("target",),
    n.Assign: ("target",),
    n.Input: ("name",),
    n.Output: ("name",),
    n.ParallelBranch: ("name",),
    n.ForEach: ("item", "index"),
    n.Repeat: ("index",),
    n.Loop: ("index",),
    n.BlockDef: ("params",),
    n.CatchClause: ("error",),
    n.PipeOp: ("accumulator", "item"),
    n.Destructure: ("names",),
}


def declared_anywhere(program: n.Program) -> set[str]:
    """Every name the program declares anywhere, in any scope (``item`` when it pipes)."""
    found: set[str] = set()
    for node in n.walk(program):
        for name in _DECLARING.get(type(node), ()):
            value = getattr(node, name)
            for item in value if isinstance(value, tuple) else (value,):
                if isinstance(item, n.Name):
                    found.add(item.id)
        if isinstance(node, n.PipeOp) and node.op in ("map", "filter", "pmap"):
            found.add("item")
    return found


def _declaration_sites(program: n.Program) -> dict[str, tuple[str, int]]:
    """The first declaration of each name, said as a reader would: `the loop variable of the
    for` (and the line), ..., or "later" with the line of a `let`/`const`/`output`."""
    found: dict[str, tuple[str, int]] = {}

    def note(name: n.Name | None, what: str) -> None:
        if name is not None and name.id not in found:
            found[name.id] = (what, name.span.line)

    for node in n.walk(program):
        if isinstance(node, n.ForEach):
            note(node.item, "the loop variable of a `for`")
            note(node.index, "the index of a `for`")
        elif isinstance(node, n.Repeat | n.Loop):
            note(
                node.index, f"the index of a `{'repeat' if isinstance(node, n.Repeat) else 'loop'}`"
            )
        elif isinstance(node, n.CatchClause):
            note(node.error, "the error variable of a `catch`")
        elif isinstance(node, n.BlockDef):
            for param in node.params:
                note(param, f"a parameter of block '{node.name.id}'")
        elif isinstance(node, n.PipeOp):
            note(node.accumulator, "a name of a `reduce`")
            note(node.item, "a name of a `reduce`")
        elif isinstance(node, n.Binding) and isinstance(node.target, n.Name):
            note(node.target, "later")
        elif isinstance(node, n.Output | n.Input):
            note(node.name, "later")
    return found


def _flat_declarations(body: tuple[n.Stmt, ...]) -> list[tuple[str, int]]:
    """The `let`/`const`/`output` names a body declares, at any depth, with their lines."""
    found: list[tuple[str, int]] = []
    for node in (node for stmt in body for node in n.walk(stmt)):
        if isinstance(node, n.Binding) and isinstance(node.target, n.Name):
            found.append((node.target.id, node.target.span.line))
        elif isinstance(node, n.Output):
            found.append((node.name.id, node.name.span.line))
    return sorted(found, key=lambda item: item[1])


def span_of(node: n.Node | n.PermissionsBlock) -> Span:
    """The span of any node (every AST node has one)."""
    return node.span


def head(span: Span, length: int) -> Span:
    """The first ``length`` characters of ``span`` (a keyword at the start of a statement)."""
    return Span(
        span.start, span.start + length, span.line, span.column, span.line, span.column + length
    )


def tail(span: Span, length: int) -> Span:
    """The last ``length`` characters of ``span`` (the attribute of ``result.field``)."""
    return Span(
        span.end - length,
        span.end,
        span.end_line,
        span.end_column - length,
        span.end_line,
        span.end_column,
    )


_IDENT = r"[A-Za-z_][A-Za-z0-9_]*(?:-[A-Za-z0-9_]+)*"
# What a rejected statement would have declared, read from its text.
_DECLARED = re.compile(
    rf"(?:let|const|output|input|agent|block)\s+(?P<name>{_IDENT})"
    rf"|(?:let|const)\s*\{{(?P<names>[^}}]*)\}}"
    rf'|use\s+"(?:[^"\n]*/)?(?P<slug>[^"/\n]*?)(?:\.prose)?"(?:\s+as\s+(?P<alias>{_IDENT}))?'
    rf"|(?P<target>{_IDENT})\s*="
)


def broken_names(node: n.Invalid) -> list[str]:
    """The names a statement the parser rejected seems to declare (from its text)."""
    match = _DECLARED.match(node.text)
    if match is None:
        return []
    if match["names"] is not None:
        return re.findall(_IDENT, match["names"])
    found = match["name"] or match["alias"] or match["slug"] or match["target"]
    return [found] if found else []


@dataclass(slots=True)
class Checker:
    path: str
    project_dir: Path | None
    contracts: ContractLookup
    dispatch: dict[type, Handler]
    diagnostics: list[Diagnostic] = field(default_factory=list)
    scope: Scope = field(default_factory=Scope)
    agents: dict[str, AgentInfo] = field(default_factory=dict)
    blocks: dict[str, n.BlockDef] = field(default_factory=dict)
    imports: dict[str, ImportInfo] = field(default_factory=dict)  # by name (alias or slug)
    import_paths: dict[str, n.Use] = field(default_factory=dict)
    skill_names: set[str] = field(default_factory=set)  # what `skills: [...]` may name
    # Agents that a `session:`/`resume:` has run before the current point (their memory exists).
    started_agents: dict[str, Span] = field(default_factory=dict)
    started_in_blocks: set[str] = field(default_factory=set)
    pending_names: list[PendingName] = field(default_factory=list)
    # Names that a statement the parser rejected seems to declare (`let x = <broken>`): using
    # them is not reported again (the parse error already explains it).
    broken: set[str] = field(default_factory=set)
    # Callbacks run once the whole tree has been seen (order-independent checks).
    finishers: list[Callable[[], None]] = field(default_factory=list)
    depth: int = 0  # statement-list nesting; 0 is the program's top level
    seen_executable: bool = False
    first_executable: Any = None  # the top level's first executable statement
    in_agent: bool = False  # walking an agent definition's properties
    # Names of the parallel branches being walked: they exist only once their block joins.
    joining: frozenset[str] = frozenset()
    # Names a `let` in an earlier branch of the parallel block being walked binds: visible,
    # but bound concurrently with the branch that reads them.
    racing: frozenset[str] = frozenset()
    # Names declared again in another branch (E019/E024): their fix declares them once
    # before the statement, which also answers W156 for them, so W156 is not reported.
    branch_collided: set[str] = field(default_factory=set)
    # The bodies that may not run around the statement being walked (see `conditional`).
    guards: tuple[Guard, ...] = ()
    # Diagnostics not kept because MAX_DIAGNOSTICS were already (errors, warnings and notes).
    dropped_errors: int = 0
    dropped_others: int = 0
    # The program's text, when known: fixes are edits of it.
    source: SourceFile | None = None
    # `let` names declared in several exclusive branches, by where each declaration starts:
    # worked out on first need (a name declared twice), not for every program.
    _branch_groups: dict[int, BranchGroup] | None = None
    program: n.Program | None = None
    # Every name declared anywhere in the program (an interpolation of any other name is
    # literal text gone wrong, and may be escaped by a fix); walked on first need only.
    _declared: set[str] | None = None
    # How an imported local program is checked (the package's `check`, given by it: this
    # module cannot import it).
    check_imported: Callable[[Any], list[Diagnostic]] | None = None
    _block_locals: dict[str, tuple[str, int]] | None = None
    _outside_blocks: set[str] | None = None
    _block_params: tuple[int, set[str]] | None = None  # (blocks seen, their parameters)
    _sites: dict[str, tuple[str, int]] | None = None
    _around: dict[int, Any] | None = None

    @property
    def block_locals(self) -> dict[str, tuple[str, int]]:
        """Flat names declared in a top-level block's body: name → (block, line)."""
        if self._block_locals is None:
            self._block_locals = {}
            for stmt in self.program.body if self.program else ():
                if isinstance(stmt, n.BlockDef):
                    for name, line in _flat_declarations(stmt.body):
                        self._block_locals.setdefault(name, (stmt.name.id, line))
        return self._block_locals

    @property
    def branch_groups(self) -> dict[int, BranchGroup]:
        if self._branch_groups is None:
            program = self.program
            self._branch_groups = {} if program is None else find_groups(program, self.source)
        return self._branch_groups

    @property
    def declared_outside_blocks(self) -> set[str]:
        """Every name declared anywhere but in a top-level block: walked once, not per
        `context:` name that needs it (that made a long program's check quadratic)."""
        program = self.program
        if program is None:
            return set()
        if self._outside_blocks is None:
            outside = tuple(s for s in program.body if not isinstance(s, n.BlockDef))
            self._outside_blocks = declared_anywhere(n.Program(span=program.span, body=outside))
        return self._outside_blocks

    @property
    def block_params(self) -> set[str]:
        """The parameter names of every block registered so far (blocks are only ever
        added, so their count says whether the set is current)."""
        if self._block_params is None or self._block_params[0] != len(self.blocks):
            params = {p.id for block in self.blocks.values() for p in block.params}
            self._block_params = (len(self.blocks), params)
        return self._block_params[1]

    @property
    def declared(self) -> set[str]:
        if self._declared is None:
            self._declared = declared_anywhere(self.program) if self.program else set()
        return self._declared

    # Whether agent memory may be looked up on disk (only when the user names the project).
    memory_on_disk: bool = False
    # A shape was declared (`returns:`, `output x: shape =`): checker/shapes.py then checks
    # the fields read from typed names (a program without one costs no walk).
    typed: bool = False

    @property
    def source_text(self) -> str:
        return self.source.text if self.source is not None else ""

    def span_at(self, start: int, end: int) -> Span:
        assert self.source is not None
        return self.source.span(start, end)

    # --- reporting --------------------------------------------------------------------------

    def emit(
        self,
        code: str,
        span: Span,
        message: str,
        *,
        help: str | None = None,
        fix: Fix | None = None,
    ) -> None:
        """Report a diagnostic; past MAX_DIAGNOSTICS only count it (``check`` then says that
        reporting stopped), so a flood of them cannot exhaust memory. ``help`` replaces the
        code's default help line; ``fix`` is a mechanical rewrite that resolves it."""
        severity = CODES[code].severity
        if len(self.diagnostics) < MAX_DIAGNOSTICS:
            self.diagnostics.append(diagnostic(code, message, span, self.path, help=help, fix=fix))
        elif severity is Severity.ERROR:
            self.dropped_errors += 1
        else:
            self.dropped_others += 1

    # --- walking ----------------------------------------------------------------------------

    def visit(self, node: Any) -> None:
        handler = self.dispatch.get(type(node))
        if handler is not None:
            handler(self, node)

    def body(self, stmts: Iterable[Any]) -> None:
        self.depth += 1
        visit = self.visit
        for stmt in stmts:
            visit(stmt)
        self.depth -= 1

    # --- names ------------------------------------------------------------------------------

    @property
    def order_free(self) -> bool:
        """Inside a block or agent definition, which run wherever they are invoked."""
        return self.in_agent or self.scope.in_block

    def resolve(
        self, name: str, span: Span, code: str, message: str, fix: Fix | None = None
    ) -> Var | None:
        """The variable ``name`` names here; reports ``code`` (or defers it) when undefined,
        naming the closest visible name when one is close (a likely typo)."""
        var = self.scope.visible.get(name)
        if var is None and name not in self.broken:
            if name in self.joining:
                message += " (a parallel branch's result exists once the parallel block ends)"
            elif name == "item":
                message += " (`item` is the current element only inside a map, filter or pmap body)"
            elif name in self.declared:
                inside = None if self.scope.in_block else self.block_locals.get(name)
                if inside is not None:
                    block, line = inside
                    message += (
                        f" (it is declared in block '{block}', line {line}: a block's names "
                        f"end with the block; bind what it returns, "
                        f"`let {name} = do {block}(...)`)"
                    )
                else:
                    message += self._declared_elsewhere(name, span)
            if self.order_free:
                self.pending_names.append(PendingName(name, span, code, message, fix))
            else:
                guess = closest(name, self.scope.visible) if self.scope.visible else None
                if guess is None:
                    self.emit(code, span, message, fix=fix)
                else:
                    self._did_you_mean(code, span, message, name, guess, fix)
        elif var is not None and name in self.racing:
            self.emit(
                code,
                span,
                f"Variable '{name}' is not bound yet here: another branch of this parallel "
                "block binds it, at the same time (it exists once the block ends)",
                help="use it after the parallel block, or run the two steps in order",
            )
        elif var is not None and var.guards:
            self._check_bound(var, span)
        return var

    def _did_you_mean(
        self, code: str, span: Span, message: str, name: str, guess: str, escape: Fix | None
    ) -> None:
        """An undefined name close to a visible one. A near-miss spelling (`reserch`) gets the
        rename as its fix; a `{placeholder}` that is only alike (`{project_title}` beside
        `project_status`) more likely is template text, so its fix is the escape. Both are
        guesses (unsafe fixes), and the help names both ways."""
        text = self.source_text[span.start : span.end]
        inner: Span | None = span
        if text == "{" + name + "}" or text == "{" + name:
            inner = Span(span.start + 1, span.start + 1 + len(name), span.line,
                         span.column + 1, span.line, span.column + 1 + len(name))  # fmt: skip
        elif text != name:
            inner = None  # not the name as written (a destructured field, a synthetic node)
        rename = None if inner is None else Fix.nearest_word(inner, name, guess)
        help_ = f"write `{guess}`"
        fix = rename
        if escape is not None:
            help_ += f", or `\\{{{name}}}` if the braces are meant as literal text"
            if not is_misspelling(name, guess):
                fix = Fix(escape.title, escape.edits, safe=False)
        self.emit(code, span, f"{message} (did you mean `{guess}`?)", help=help_, fix=fix)

    def _declared_elsewhere(self, name: str, span: Span) -> str:
        """Where a name not visible here is declared: a loop, catch or block's own name that
        ended with its body, or a variable declared further down."""
        if self._sites is None:
            self._sites = _declaration_sites(self.program) if self.program else {}
        site = self._sites.get(name)
        if site is None:
            return ""
        what, line = site
        if what == "later":
            return f" (it is declared at line {line}, after this use)" if line > span.line else ""
        return f" ({what}, line {line}: it exists only inside that body)"

    @contextmanager
    def conditional(self, what: str, span: Span) -> Iterator[None]:
        """Walk a body that may not run: names first bound in it may be unbound after it."""
        outer = self.guards
        self.guards = (*outer, Guard(what, span.line))
        try:
            yield
        finally:
            self.guards = outer

    def _check_bound(self, var: Var, span: Span) -> None:
        """W156 when ``var`` was bound in a body that may not have run and has ended."""
        if var.name in self.branch_collided:
            return
        ended = next((g for g in var.guards if g not in self.guards), None)
        if ended is None:
            return
        self.emit(
            "W156",
            span,
            f"Variable '{var.name}' may be unbound here: it is bound only when the {ended.what} "
            f'at line {ended.line} runs (declare it before with let {var.name} = "" and '
            f"assign it there)",
            fix=self._unbound_fix(var, ended),
        )

    def _unbound_fix(self, var: Var, ended: Guard) -> Fix | None:
        """The W156 fix (branches.unbound_fix); the statements around each binding are
        indexed on first need only."""
        if self.program is None or var.kind != "let":
            return None
        if self._around is None:
            self._around = enclosing_statements(self.program)
        return unbound_fix(self._around, self.source, var.span.start, ended.line)

    def finish(self) -> None:
        flat = self.scope.flat
        for pending in self.pending_names:
            if pending.name not in flat and pending.name not in self.broken:
                guess = closest(pending.name, flat) if flat else None
                self.emit(
                    pending.code,
                    pending.span,
                    pending.message + (f" (did you mean `{guess}`?)" if guess else ""),
                    help=f"write `{guess}`" if guess else None,
                    fix=None if guess else pending.fix,
                )
        for finisher in self.finishers:
            finisher()

    # --- imports ----------------------------------------------------------------------------

    @property
    def base_dir(self) -> Path | None:
        """Where relative import paths and agent memory paths are resolved from."""
        if not self.path.startswith("<"):
            return Path(self.path).parent
        return self.project_dir

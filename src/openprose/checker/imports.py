"""`use` statements and invocations of imported programs (E010-E012, W006, E025-E028)."""

from __future__ import annotations

import re
from contextvars import ContextVar
from pathlib import Path

from openprose import nodes as n
from openprose.checker.state import NO_PROJECT, Checker, Handler, ImportInfo
from openprose.contracts import ProgramContract, is_local_path
from openprose.diagnostics import Edit, Fix
from openprose.source import Span
from openprose.suggest import closest

_SEGMENT = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_REGISTRY = re.compile(rf"@{_SEGMENT}/{_SEGMENT}")
_SHORTHAND = re.compile(rf"{_SEGMENT}/{_SEGMENT}")  # prose.md's `handle/slug`, no `@`
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S+")
# The legacy import statement's other source formats: `github:user/repo`, `npm:package`,
# `./local/path` (what W006 "Unknown import source format" was made for).
_LEGACY_SOURCE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:\S+|\.{1,2}/\S+")


def default_name(path: str) -> str:
    """The name an import goes by without ``as``: its slug or its file's stem."""
    last = path.rstrip("/").rsplit("/", 1)[-1]
    return last.removesuffix(".prose")


def register_use(ck: Checker, node: n.Use) -> None:
    path_node = node.path
    path = path_node.value
    span = path_node.span
    if not path:
        ck.emit("E011", span, "Use path cannot be empty")
        return
    local_folder = path.startswith(("./", "../", "/")) and not is_local_path(path)
    if local_folder:
        pass  # a skill folder on disk (Agent Skills format), resolved when an agent names it
    elif _REGISTRY.fullmatch(path) is None and not is_local_path(path):
        if _SHORTHAND.fullmatch(path) or _URL.fullmatch(path):
            ck.emit(
                "W006",
                span,
                f"Unknown import source format '{path}': expected @handle/slug "
                "(the VM still resolves registry shorthand and URLs)",
            )
        elif _LEGACY_SOURCE.fullmatch(path):
            ck.emit(
                "W006",
                span,
                f"Unknown import source format '{path}': expected @handle/slug (a legacy "
                "skill source: it names a skill for `skills:`; the VM cannot run it as a program)",
            )
        else:
            ck.emit("E012", span, f"Invalid use path '{path}': path must be @handle/slug format")
            return
    earlier = ck.import_paths.get(path)
    if earlier is not None:
        ck.emit(
            "E010",
            span,
            f"Program '{path}' already imported (line {earlier.span.line})",
            fix=_duplicate_use_fix(ck, node, earlier),
        )
        return
    ck.import_paths[path] = node
    slug = default_name(path)
    name = node.alias.id if node.alias is not None else slug
    ck.skill_names.update((name, slug))  # a skill may name the alias or the slug
    clash = ck.imports.get(name)
    if clash is not None:
        where = node.alias.span if node.alias is not None else span
        ck.emit(
            "E147",
            where,
            f"Alias required when importing multiple programs named '{name}' "
            f"(line {clash.node.span.line} already imports one)",
        )
        return
    info = ImportInfo(node, name)
    ck.imports[name] = info
    if is_local_path(path):
        _check_local_file(ck, info, path, span)


def _check_local_file(ck: Checker, info: ImportInfo, path: str, span: Span) -> None:
    file = Path(path)
    if not file.is_absolute():
        base = ck.base_dir
        if base is None:
            return  # reported as deferred when the program is invoked
        file = base / file
    if not file.is_file():
        info.file_missing = True
        ck.emit("E170", span, f"Imported program file not found: {file}")
        return
    _check_imported(ck, file, path, span)


# The local programs being checked on this thread, outermost first: a `use` of one of them
# is an import cycle (which `prose run` refuses too).
_CHECKING: ContextVar[tuple[Path, ...]] = ContextVar("_CHECKING", default=())


def _check_imported(ck: Checker, file: Path, path: str, span: Span) -> None:
    """A local program is checked with the one importing it, as `prose run` checks it
    before running: its first error, or the cycle, is one E171 at the `use` (the run would
    refuse with it), so `prose check main.prose` does not call a program clean that cannot
    run. Only when the importing file's own path is known (its imports resolve from it)."""
    from openprose.parser import parse, read_source

    check = ck.check_imported
    if check is None:
        return
    try:
        resolved = file.resolve()
    except (OSError, RuntimeError):
        return
    source, _ = read_source(resolved)  # bounded and decoded as a program file is
    if source is None:
        return  # unreadable: the contract lookup and the run report it
    outer = _CHECKING.get()
    here = Path(ck.path).resolve() if not ck.path.startswith("<") else None
    chain = (*outer, here) if here is not None and not outer else outer
    if resolved in chain:
        shown = " -> ".join(p.name for p in (*chain[chain.index(resolved) :], resolved))
        ck.emit("E171", span, f"Import cycle: {shown}")
        return
    token = _CHECKING.set((*chain, resolved))
    try:
        found = check(parse(source))
    finally:
        _CHECKING.reset(token)
    first = next((d for d in found if d.is_error), None)
    if first is None:
        return
    errors = sum(1 for d in found if d.is_error)
    more = f" (and {errors - 1} more)" if errors > 1 else ""
    if first.code == "E171" and first.message.startswith("Import cycle"):
        message = first.message
    elif first.code == "E171":
        message = f"Imported program '{path}' does not check: {first.message}"
    else:
        message = (
            f"Imported program '{path}' does not check: {path}:{first.line}:{first.column}: "
            f"{first.code} {first.message}{more}"
        )
    ck.emit("E171", span, message)


def _use(ck: Checker, node: n.Use) -> None:
    if ck.depth:  # top-level imports were registered before the walk
        register_use(ck, node)


def contract_for(ck: Checker, info: ImportInfo) -> ProgramContract | None:
    """The imported program's contract, looked up once; notes a deferral when unknown."""
    if info.looked_up:
        return info.contract
    info.looked_up = True
    path = info.node.path.value
    if ck.project_dir is None:
        reason = f"its cache is in the project, and {NO_PROJECT}"
    else:
        reason = "it is not in the project's import cache; `prose run` caches what it fetches"
    try:
        info.contract = ck.contracts(path, ck.base_dir)
    except Exception as error:  # noqa: BLE001 - a lookup supplied from outside must not crash a check
        reason = f"looking it up failed ({error})"
    if info.contract is not None:
        for problem in info.contract.ceiling_problems:
            ck.emit("W180", info.node.path.span, problem)
    if info.contract is None and not info.file_missing:
        if is_local_path(path) and ck.base_dir is None:
            reason = "the importing program's directory is unknown"
        ck.emit(
            "I002",
            info.node.path.span,
            f"the inputs and outputs of '{info.name}' are checked at run time: "
            f"the contract of '{path}' is unknown offline because {reason}",
        )
    return info.contract


def _program_call(ck: Checker, node: n.ProgramCall) -> None:
    given: dict[str, n.KeywordArg] = {}
    for arg in node.args:
        ck.visit(arg.value)
        earlier = given.get(arg.name.id)
        if earlier is not None:
            ck.emit(
                "E169",
                arg.name.span,
                f"Argument '{arg.name.id}' already given (column {earlier.span.column})",
            )
        else:
            given[arg.name.id] = arg
    callee = node.callee
    info = ck.imports.get(callee.id)
    if info is None:
        if callee.id in ck.broken:
            return
        guess = closest(callee.id, ck.imports) if ck.imports else None
        hint = (
            f"; to run block '{callee.id}' write `do {callee.id}(...)`"
            if callee.id in ck.blocks
            else f" (did you mean `{guess}`?)"
            if guess
            else ""
        )
        rename = guess is not None and callee.id not in ck.blocks
        ck.emit(
            "E025",
            callee.span,
            f"Program '{callee.id}' not imported{hint}",
            help=f"write `{guess}`" if rename else None,
            fix=Fix.nearest_word(callee.span, callee.id, guess) if rename and guess else None,
        )
        return
    contract = contract_for(ck, info)
    if contract is None:
        return
    inputs = contract.inputs
    unknown = [name for name in given if name not in inputs]
    missing = [name for name in inputs if name not in given]
    # One label that names no input while one input is not given: the value was likely
    # meant for it (`reader:` for `audience`); the unsafe fix renames the label, which
    # resolves both rows (E027 here, E026 below).
    lone = missing[0] if len(unknown) == 1 and len(missing) == 1 else None
    for name in unknown:
        arg = given[name]
        guess = closest(name, inputs)
        if guess is not None:
            hint = f" (did you mean `{guess}`?)"
        elif lone is not None:
            guess, hint = lone, f" (the input `{lone}` is not given: is this value for it?)"
        else:
            hint = ""
        ck.emit(
            "E027",
            arg.name.span,
            f"Input '{name}' not declared in program '{callee.id}'{_listing(inputs)}{hint}",
            help=f"write `{guess}`" if guess else None,
            fix=Fix.nearest_word(arg.name.span, name, guess) if guess else None,
        )
    for name in missing:
        ck.emit(
            "E026",
            callee.span,
            f"Required input '{name}' not provided to program '{callee.id}'",
        )


def _duplicate_use_fix(ck: Checker, node: n.Use, earlier: n.Use) -> Fix | None:
    """The same `use` line twice (same path, same alias): the second says nothing new, so
    the safe fix removes it (with its line). A second alias is left to the author."""
    text = ck.source_text
    if not text or (node.alias and node.alias.id) != (earlier.alias and earlier.alias.id):
        return None
    start = text.rfind("\n", 0, node.span.start) + 1
    end = text.find("\n", node.span.end)
    end = len(text) if end == -1 else end + 1
    if text[start : node.span.start].strip() or text[node.span.end : end].strip(" \t\r\n"):
        return None  # not alone on its line (a comment after it is kept by the author)
    return Fix("remove the repeated `use`", (Edit(ck.span_at(start, end), ""),))


def _listing(names: tuple[str, ...]) -> str:
    return f" (declared: {', '.join(names)})" if names else " (it declares none)"


def call_result(ck: Checker, value: object) -> tuple[str | None, ProgramContract | None]:
    """For a value produced by invoking an imported program: its name and contract."""
    if isinstance(value, n.ProgramCall):
        info = ck.imports.get(value.callee.id)
        if info is not None:
            return info.name, info.contract
    return None, None


def check_output_access(
    ck: Checker, program: str, contract: ProgramContract | None, field: str, span: Span
) -> None:
    """E028 when ``field`` is not an output of ``program`` (deferred when its contract is unknown)."""
    if contract is not None and field not in contract.outputs:
        ck.emit(
            "E028",
            span,
            f"Output '{field}' not declared in program '{program}'{_listing(contract.outputs)}",
        )


HANDLERS: dict[type, Handler] = {
    n.Use: _use,
    n.ProgramCall: _program_call,
}

"""Load the programs a program invokes, before the run starts: fetched (or read from the
import cache), parsed and checked, recursively. Fetching and caching are the front end's
(`openprose.imports`); turning a checked program into a `LoadedProgram` is the VM's."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from pathlib import Path

from openprose import nodes as n
from openprose.checker import diagnose
from openprose.imports import (
    ImportCache,
    ImportFailed,
    default_name,
    fetch,
    kind_of,
    namespace_of,
)
from openprose.parser import parse_text
from openprose.vm.runtime import LoadedProgram


def load_imports(
    program: n.Program,
    *,
    base_dir: Path | None,
    project_dir: Path,
    registry: str | None = None,
    pinned: Mapping[str, str] | None = None,
    offline: bool = False,
    _seen: tuple[str, ...] = (),
) -> dict[str, LoadedProgram]:
    """Every program `program` imports, parsed and checked, recursively: name -> LoadedProgram.

    `pinned` maps specs to content hashes (from a run being resumed)."""
    cache = ImportCache(project_dir)
    loaded: dict[str, LoadedProgram] = {}
    called = called_names(program)
    for stmt in program.body:
        if not isinstance(stmt, n.Use):
            continue
        spec = stmt.path.value
        name = stmt.alias.id if stmt.alias else default_name(spec)
        if name not in called:
            continue  # never invoked: a skill import (recorded on agents), nothing to run
        if spec in _seen:
            raise ImportFailed(f"{spec}: import cycle ({' -> '.join((*_seen, spec))})")
        fetched = fetch(
            spec,
            base_dir=base_dir,
            cache=cache,
            registry=registry,
            pinned=(pinned or {}).get(spec),
            offline=offline,
        )
        origin = fetched.origin if kind_of(spec) == "path" else spec
        parsed = parse_text(fetched.text, origin)
        errors = [d for d in diagnose(parsed, project_dir) if d.is_error]
        if errors:
            first = errors[0]
            raise ImportFailed(
                f"{spec}: {first.path}:{first.line}:{first.column}: {first.code} {first.message}"
            )
        child_base = Path(fetched.origin).parent if kind_of(spec) == "path" else None
        nested = load_imports(
            parsed.program,
            base_dir=child_base,
            project_dir=project_dir,
            registry=registry,
            pinned=pinned,
            offline=offline,
            _seen=(*_seen, spec),
        )
        loaded[name] = LoadedProgram(
            name=name,
            spec=spec,
            namespace=namespace_of(spec),
            program=parsed.program,
            text=fetched.text,
            content_hash=fetched.sha256,
            imports=nested,
        )
    return loaded


def called_names(program: n.Program) -> set[str]:
    """Names invoked as programs anywhere in `program` (`name(k: v)`)."""
    found: set[str] = set()
    stack: list[object] = [program]
    while stack:
        node = stack.pop()
        if isinstance(node, tuple):
            stack.extend(node)
        elif is_dataclass(node):
            if isinstance(node, n.ProgramCall):
                found.add(node.callee.id)
            stack.extend(getattr(node, f.name) for f in fields(node) if f.name != "span")
    return found

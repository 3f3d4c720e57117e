"""Load the programs a program invokes, before the run starts: fetched (or read from the
import cache), parsed and checked, recursively. Fetching and caching are the front end's
(`openprose.imports`); turning a checked program into a `LoadedProgram` is the VM's."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from openprose import nodes as n
from openprose.checker import diagnose
from openprose.imports import (
    FetchPolicy,
    ImportCache,
    ImportFailed,
    ImportPins,
    ceiling_of,
    confinement_problems,
    default_name,
    fetch,
    kind_of,
    namespace_of,
    warn_capped,
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
    policy: FetchPolicy | None = None,
    remote: bool = False,
    _seen: tuple[str, ...] = (),
    _ceilings: tuple[Mapping[str, Any], ...] = (),
) -> dict[str, LoadedProgram]:
    """Every program `program` imports, parsed and checked, recursively: name -> LoadedProgram.

    `pinned` maps specs to content hashes (from a run being resumed); `policy` bounds the
    downloads. A program from a URL or the registry, and everything it imports (`remote`),
    is confined (`confinement_problems`): refused before it runs, and its agents are capped
    (`ceiling_of`: no bash, network, write or outside reads unless prose.toml grants them);
    a program's cap holds for everything it imports too."""
    cache = ImportCache(project_dir)
    pins = ImportPins(project_dir)
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
            policy=policy,
            pins=pins,
        )
        origin = fetched.origin if kind_of(spec) == "path" else spec
        parsed = parse_text(fetched.text, origin)
        from_afar = remote or kind_of(spec) != "path"
        if from_afar:
            problems = confinement_problems(parsed.program)
            if problems:
                raise ImportFailed(f"{spec}: {problems[0]}")
        errors = [d for d in diagnose(parsed, project_dir) if d.is_error]
        if errors:
            first = errors[0]
            raise ImportFailed(
                f"{spec}: {first.path}:{first.line}:{first.column}: {first.code} {first.message}"
            )
        ceiling = ceiling_of(spec, from_afar, policy.grants if policy else {})
        if from_afar:
            warn_capped(parsed.program, spec, ceiling)
        ceilings = (*_ceilings, ceiling) if ceiling else _ceilings
        child_base = Path(fetched.origin).parent if kind_of(spec) == "path" else None
        nested = load_imports(
            parsed.program,
            base_dir=child_base,
            project_dir=project_dir,
            registry=registry,
            pinned=pinned,
            offline=offline,
            policy=policy,
            remote=from_afar,
            _seen=(*_seen, spec),
            _ceilings=ceilings,
        )
        loaded[name] = LoadedProgram(
            name=name,
            spec=spec,
            namespace=namespace_of(spec),
            program=parsed.program,
            text=fetched.text,
            content_hash=fetched.sha256,
            imports=nested,
            ceilings=ceilings,
        )
    return loaded


def called_names(program: n.Program) -> set[str]:
    """Names invoked as programs anywhere in `program` (`name(k: v)`)."""
    return {node.callee.id for node in n.walk(program) if isinstance(node, n.ProgramCall)}

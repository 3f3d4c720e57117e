"""``prose install PROGRAM... [--update] [--offline]``: fetch ahead of a run what programs
import — remote programs and registry or URL skills — verify it, cache it and pin it in
``prose.lock``, so a later ``prose run`` (also ``--offline``, also on another machine with
the same ``prose.lock``) uses exactly those bytes."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from openprose.cli.run import add_offline_argument
from openprose.session.opening import (
    UsageError,
    fetch_policy,
    install_skills_or_fail,
    offline_wanted,
    parse_and_check,
    registry_base,
)

USAGE_ERROR = 2
OUTCOMES = {
    "installed": "downloaded, verified and pinned",
    "restored": "restored from the pinned archive",
    "current": "up to date with prose.lock",
    "vendored": "a folder put there by hand: used as is, not pinned",
    "pinned": "fetched or read from the cache, as pinned in prose.lock",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("programs", metavar="PROGRAM", nargs="+", help=".prose files")
    parser.add_argument(
        "--update",
        action="store_true",
        help="fetch everything again and pin what it is now (review the changes first)",
    )
    add_offline_argument(parser)
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")


def run(args: argparse.Namespace) -> int:
    from openprose.imports import ImportFailed

    done: list[dict[str, Any]] = []
    try:
        for program in args.programs:
            done.extend(_install(Path(program), args, done))
    except UsageError as error:
        return _failed(str(error), args.json, done)
    except ImportFailed as error:
        return _failed(f"use: {error}", args.json, done)
    if args.json:
        print(json.dumps({"status": "ok", "installed": done}, indent=2))
    elif not done and not args.quiet:
        print("nothing to install: no remote program or skill is imported")
    return 0


def _install(path: Path, args: argparse.Namespace, done: list[dict[str, Any]]) -> list[Any]:
    from openprose.project import find_project
    from openprose.vm.loader import load_imports

    project = find_project(path.parent).root
    parsed = parse_and_check(path, project, sys.stderr)
    offline = offline_wanted(args.offline)
    policy = fetch_policy(project, update_pins=args.update)
    imports = load_imports(
        parsed.program,
        base_dir=path.parent,
        project_dir=project,
        registry=registry_base(project),
        offline=offline,
        policy=policy,
    )
    found: list[dict[str, Any]] = []
    seen = {(d["kind"], d["spec"]) for d in done}
    for loaded in _programs(imports):
        if loaded.spec.startswith((".", "/")) or ("program", loaded.spec) in seen:
            continue
        seen.add(("program", loaded.spec))
        found.append(_line(args, "program", loaded.spec, "pinned", loaded.content_hash, None))

    def report(install: Any) -> None:
        if ("skill", install.spec) in seen:
            return
        seen.add(("skill", install.spec))
        folder = (
            install.folder.relative_to(project)
            if install.folder.is_relative_to(project)
            else install.folder
        )
        found.append(_line(args, "skill", install.spec, install.outcome, install.sha256, folder))

    install_skills_or_fail(
        parsed.program,
        imports,
        project,
        policy,
        offline=offline,
        update=args.update,
        report=report,
    )
    return found


def _programs(imports: dict[str, Any]) -> list[Any]:
    found = []
    stack = list(imports.values())
    while stack:
        loaded = stack.pop(0)
        found.append(loaded)
        stack.extend(loaded.imports.values())
    return found


def _line(
    args: argparse.Namespace, kind: str, spec: str, outcome: str, sha256: str, folder: Any
) -> dict[str, Any]:
    entry = {"kind": kind, "spec": spec, "outcome": outcome, "sha256": sha256}
    if folder is not None:
        entry["folder"] = str(folder)
    if not args.json and not args.quiet:
        said = OUTCOMES.get(outcome, "fetched and pinned in prose.lock")
        where = f" -> {folder}" if folder is not None else ""
        digest = f" (sha256 {sha256[:12]})" if sha256 else ""
        print(f"{kind} {spec}{where}: {said}{digest}")
    return entry


def _failed(message: str, as_json: bool, done: list[dict[str, Any]]) -> int:
    print(f"prose: {message}", file=sys.stderr)
    if as_json:
        print(json.dumps({"status": "error", "error": message, "installed": done}, indent=2))
    return USAGE_ERROR

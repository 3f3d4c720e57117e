"""OpenProse: a language for AI sessions — front end, VM and providers.

The front end's functions are importable from here; each loads its module on first use, so
``import openprose`` stays cheap::

    import openprose
    result = openprose.parse_text('session "Hello"')
    diagnostics = openprose.check(result)
    print(openprose.compile_program(result.program))

and runs programs (docs/api.md)::

    run = openprose.run("examples/hello.prose", provider="openai")
    print(run.run_id, run.status, run.outputs)
"""

TYPE_CHECKING = False  # `typing` and `pathlib` cost more to import than all of this module
if TYPE_CHECKING:
    import os
    from collections.abc import Iterable
    from pathlib import Path
    from typing import Any

    from openprose.diagnostics import Diagnostic
    from openprose.parser import ParseResult
    from openprose.source import SourceFile

# name -> module that defines it
_LAZY = {
    "parse": "openprose.parser",
    "parse_text": "openprose.parser",
    "read_source": "openprose.parser",
    "ParseResult": "openprose.parser",
    "check": "openprose.checker",
    "compile_program": "openprose.compiler",
    "canonicalize": "openprose.compiler",
    "format_source": "openprose.formatter",
    "Diagnostic": "openprose.diagnostics",
    "Severity": "openprose.diagnostics",
    "SourceFile": "openprose.source",
    "find_programs": "openprose.walk",
    "run": "openprose.api",
    "estimate": "openprose.api",
    "arun": "openprose.api",
    "resume": "openprose.api",
    "aresume": "openprose.api",
    "fork": "openprose.api",
    "afork": "openprose.api",
    "approve": "openprose.api",
    "deny": "openprose.api",
    "answer": "openprose.api",
    "events": "openprose.api",
    "batch": "openprose.api",
    "abatch": "openprose.api",
    "RunError": "openprose.api",
    "RunEvent": "openprose.api",
    "RunResult": "openprose.api",
    "serve_ui": "openprose.api",
    "test": "openprose.api",
    "atest": "openprose.api",
    "__version__": "cliconventions",  # the distribution's version is written there, once
}

__all__ = [
    "Diagnostic",
    "ParseResult",
    "RunError",
    "RunEvent",
    "RunResult",
    "Severity",
    "SourceFile",
    "abatch",
    "afork",
    "answer",
    "approve",
    "aresume",
    "arun",
    "atest",
    "batch",
    "canonicalize",
    "check",
    "check_file",
    "check_parsed",
    "check_paths",
    "check_source",
    "compile_program",
    "deny",
    "estimate",
    "events",
    "find_programs",
    "fork",
    "format_source",
    "parse",
    "parse_text",
    "read_source",
    "resume",
    "run",
    "serve_ui",
    "test",
]


def __getattr__(name: str) -> "Any":
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'openprose' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def check_source(source: "SourceFile", *, project_dir: "Path | None" = None) -> "list[Diagnostic]":
    """Parse and check decoded source: every diagnostic, in source order. ``project_dir``
    (where ``.prose/`` lives) lets the agent-memory checks run instead of being deferred."""
    from openprose.parser import parse

    return check_parsed(parse(source), project_dir=project_dir)


def check_parsed(result: "ParseResult", *, project_dir: "Path | None" = None) -> "list[Diagnostic]":
    """The parser's diagnostics and the checker's, in source order."""
    from openprose.checker import check

    return check(result, project_dir=project_dir)


def check_file(
    path: "str | os.PathLike[str]", *, project_dir: "Path | None" = None
) -> "list[Diagnostic]":
    """Read, parse and check one file. An unreadable or non-UTF-8 file yields a diagnostic
    (E118 / E100) rather than an exception."""
    from pathlib import Path

    from openprose.parser import read_source

    source, diagnostics = read_source(Path(path))
    if source is None:
        return list(diagnostics)
    return check_source(source, project_dir=project_dir)


def check_paths(
    paths: "Iterable[str | os.PathLike[str]]", *, project_dir: "Path | None" = None
) -> "list[Diagnostic]":
    """``check_file`` over files and directories (recursively, ``*.prose``, sorted). A
    single path may be passed as it is; a missing path yields its E118 diagnostic. Hidden
    folders and `.gitignore`d paths below a directory are skipped (see `find_programs`)."""
    import os

    from openprose.walk import find_programs

    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]  # not the characters of one path
    return [
        d
        for path in paths
        for program in (find_programs(path) if os.path.lexists(path) else [path])
        for d in check_file(program, project_dir=project_dir)
    ]

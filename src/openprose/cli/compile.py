"""``prose compile FILE``: print the program in canonical compiled form.

The compiled text goes to stdout; diagnostics go to stderr in ``prose check``'s format. A
program with errors is not compiled (exit 1); a missing or unreadable file exits 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from openprose.cli.check import (
    FAILED,
    OK,
    STDIN,
    USAGE_ERROR,
    Projects,
    add_project_dir,
    is_unreadable,
    missing_reason,
    read,
    stdout_guard,
)
from openprose.diagnostic_text import print_diagnostics, write


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="the .prose program to compile; - reads stdin")
    add_project_dir(parser)


def run(args: argparse.Namespace) -> int:
    from openprose import check_parsed
    from openprose.compiler import compile_program
    from openprose.diagnostics import has_errors
    from openprose.parser import parse

    path = Path(args.file)
    if args.file != STDIN and (path.is_dir() or not path.exists()):
        what = "is a directory" if path.is_dir() else missing_reason(path)
        write(sys.stderr, f"prose: {path}: {what}\n")
        return USAGE_ERROR
    source, problems = read(path)
    if source is None:
        if is_unreadable(problems):
            return USAGE_ERROR
        print_diagnostics(problems, None, sys.stderr)
        return FAILED
    result = parse(source)
    diagnostics = check_parsed(result, project_dir=Projects(args.project_dir).of(path))
    print_diagnostics(diagnostics, source, sys.stderr)
    if has_errors(diagnostics):
        return FAILED
    with stdout_guard():
        write(sys.stdout, compile_program(result.program))
        return OK
    return FAILED

"""``prose fmt PATH...``: rewrite programs in canonical layout, keeping comments.

Files are rewritten in place (UTF-8, LF line endings). ``--check`` rewrites nothing and exits
1 when any file would change. A file with syntax errors is left untouched: its diagnostics go
to stderr and the exit status is 1. Missing or unreadable paths exit 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from openprose.cli.check import (
    FAILED,
    OK,
    USAGE_ERROR,
    expand,
    is_unreadable,
    print_diagnostics,
    read,
    stdout_guard,
    write,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files or directories")
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if any file is not already formatted",
    )


def run(args: argparse.Namespace) -> int:
    from openprose.formatter import format_source
    from openprose.parser import parse

    status = OK
    changed = unchanged = 0
    with stdout_guard():
        for program in expand(args.paths):
            if isinstance(program, str):
                status = USAGE_ERROR
                continue
            source, problems = read(program)
            if source is None:
                if is_unreadable(problems):
                    status = USAGE_ERROR
                else:
                    print_diagnostics(problems, None, sys.stderr)
                    status = max(status, FAILED)
                continue
            result = parse(source)
            if not result.ok:
                print_diagnostics(list(result.diagnostics), source, sys.stderr)
                status = max(status, FAILED)
                continue
            formatted = format_source(result)
            if formatted == source.text and not _has_bom(program):
                unchanged += 1
                continue
            if args.check:
                write(sys.stdout, f"would reformat {program}\n")
                status = max(status, FAILED)
            elif not _rewrite(program, formatted):
                status = USAGE_ERROR
                continue  # not rewritten: counted neither as reformatted nor as unchanged
            else:
                write(sys.stdout, f"reformatted {program}\n")
            changed += 1
        verb = "would be reformatted" if args.check else "reformatted"
        files = "file" if changed == 1 else "files"
        write(sys.stdout, f"{changed} {files} {verb}, {unchanged} unchanged\n")
        return status
    return FAILED


def _has_bom(path: Path) -> bool:
    """A byte-order mark is not canonical (the decoded text no longer shows it). A FIFO is
    not opened again: it was read once already, and a second open would block."""
    if not path.is_file():
        return False
    try:
        with open(path, "rb") as data:
            return data.read(3) == b"\xef\xbb\xbf"
    except OSError:
        return False


def _rewrite(path: Path, text: str) -> bool:
    if not path.is_file():  # a FIFO named on the command line: writing back would block
        write(sys.stderr, f"prose: {path}: cannot write: not a regular file\n")
        return False
    try:
        with open(path, "w", encoding="utf-8", newline="") as out:
            out.write(text)
    except OSError as error:
        write(sys.stderr, f"prose: {path}: cannot write: {error.strerror or error}\n")
        return False
    return True

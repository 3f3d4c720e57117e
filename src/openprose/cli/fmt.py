"""``prose fmt PATH...``: rewrite programs in canonical layout, keeping comments.

Files are rewritten in place (UTF-8, LF line endings), atomically: the new text goes to a
temporary file beside the program, which then replaces it, so a crash or a full disk never
leaves a half-written program. ``--check`` rewrites nothing and exits 1 when any file would
change; ``--diff`` prints a unified diff instead of rewriting (exit 1 when there is one).
``-`` formats standard input to standard output. A file with syntax errors is left untouched:
its diagnostics go to stderr and the exit status is 1. Missing or unreadable paths exit 2.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from openprose.cli.check import (
    FAILED,
    OK,
    STDIN,
    USAGE_ERROR,
    expand,
    is_unreadable,
    read,
    stdout_guard,
)
from openprose.diagnostic_text import print_diagnostics, write


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths", nargs="+", metavar="PATH", help="files or directories; - formats stdin to stdout"
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if any file is not already formatted",
    )
    parser.add_argument(
        "--diff",
        action="store_true",
        help="write nothing; print a unified diff of what would change (exit 1 if any)",
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
            if str(program) == STDIN:
                write(sys.stdout, formatted)
                continue
            if formatted == source.text and not _has_bom(program):
                unchanged += 1
                continue
            if args.diff:
                write(sys.stdout, _diff(program, source.text, formatted))
                status = max(status, FAILED)
            elif args.check:
                write(sys.stdout, f"would reformat {program}\n")
                status = max(status, FAILED)
            elif not _rewrite(program, formatted):
                status = USAGE_ERROR
                continue  # not rewritten: counted neither as reformatted nor as unchanged
            elif not args.quiet:
                write(sys.stdout, f"reformatted {program}\n")
            changed += 1
        dry = args.check or args.diff
        if not args.quiet and args.paths != [STDIN]:
            verb = "would be reformatted" if dry else "reformatted"
            files = "file" if changed == 1 else "files"
            summary = f"{changed} {files} {verb}, {unchanged} unchanged\n"
            write(sys.stderr if args.diff else sys.stdout, summary)
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


def _diff(path: Path, before: str, after: str) -> str:
    """A unified diff; CRLF line ends are compared as LF (a diff of `\r` characters helps no
    one), and a change of line ends or byte-order mark alone is said in words."""
    from difflib import unified_diff

    before = before.replace("\r\n", "\n")
    if before == after:
        return f"{path}: only the line endings or the byte-order mark would change\n"
    lines = unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"{path}",
        tofile=f"{path} (formatted)",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _rewrite(path: Path, text: str) -> bool:
    """Replace ``path`` with ``text`` atomically, keeping its permission bits. A symlink is
    followed: its target is replaced, the link stays."""
    if not path.is_file():  # a FIFO named on the command line: writing back would block
        write(sys.stderr, f"prose: {path}: cannot write: not a regular file\n")
        return False
    import os
    import tempfile

    target = path.resolve()
    try:
        mode = target.stat().st_mode & 0o7777
        handle, temporary = tempfile.mkstemp(
            prefix=f".{target.name}.", suffix=".tmp", dir=target.parent
        )
    except OSError as error:
        write(sys.stderr, f"prose: {path}: cannot write: {error.strerror or error}\n")
        return False
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except OSError as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        write(sys.stderr, f"prose: {path}: cannot write: {error.strerror or error}\n")
        return False
    return True

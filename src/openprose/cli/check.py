"""``prose check PATH...``: validate programs and print their diagnostics.

Exit status: 0 when no diagnostic is an error (warnings and notes allowed), 1 when any is,
2 when a path is missing or unreadable (reported on stderr; the other paths are still
checked). ``--format json`` (or ``--json``) prints exactly one JSON array on stdout (each
diagnostic with its rule, help line and fix, if any). ``-`` reads a program from standard
input; ``-q`` leaves out the summary line.

``--fix`` rewrites each file with the mechanical fixes its diagnostics carry (then reports
what is left); ``--diff`` prints those rewrites as a unified diff and writes nothing (exit 1
when any file would change). ``--unsafe-fixes`` also applies likely-but-unproven ones (a
misspelled keyword's nearest word, a renamed second binding). ``--statistics`` counts the
diagnostics per code instead of printing them, with how many each kind of fix resolves.

The helpers here (reading files, printing diagnostics) are shared with ``compile`` and ``fmt``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from openprose.diagnostic_text import STDIN_NAME, print_diagnostics, write

if TYPE_CHECKING:
    from openprose.diagnostics import Diagnostic
    from openprose.source import SourceFile
    from openprose.vm.estimates import Estimate

OK, FAILED, USAGE_ERROR = 0, 1, 2
# read_source's code for a file that could not be read at all (a usage error, not a finding).
UNREADABLE = "E118"
STDIN = "-"  # the path argument that reads stdin (shown as STDIN_NAME)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths", nargs="+", metavar="PATH", help="files or directories; - reads stdin"
    )
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text (default): path:line:col: CODE message and a caret excerpt; json: one array",
    )
    parser.add_argument(
        "--fix",
        action="store_true",
        help="apply the mechanical fixes in place, then report what is left",
    )
    parser.add_argument(
        "--diff",
        action="store_true",
        help="print the fixes as a unified diff; write nothing (exit 1 if any file would change)",
    )
    parser.add_argument(
        "--unsafe-fixes",
        action="store_true",
        help="with --fix/--diff, also apply fixes that change more than the form (a misspelled "
        "keyword's guess, a second binding renamed, data built by a session)",
    )
    parser.add_argument(
        "--statistics",
        action="store_true",
        help="instead of each diagnostic, count them per code: how many, and how many "
        "--fix (safe) or --unsafe-fixes would resolve",
    )
    parser.add_argument(
        "--estimate",
        action="store_true",
        help="also print the lowest and highest sessions, tokens and cost of a run of each "
        "program without errors (with --format json: an object of diagnostics and estimates)",
    )
    add_project_dir(parser)


def add_project_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--project-dir",
        type=_directory,
        metavar="DIR",
        help=(
            "the project holding .prose/ (agent memory, cached imports); default: the one "
            "`prose run` would use, when it has a settings file or a .prose/ folder; without "
            "one those checks are deferred (notes)"
        ),
    )


class Projects:
    """The project each program is checked in: `--project-dir` when given, else the one
    `prose run` would use for it (`openprose.project.find_project`) when that project is
    real — it has a settings file, or a `.prose/` folder from a run. A working directory
    that is neither says nothing about where the program will run, so the checks that need
    a project stay deferred (notes) rather than read a place the user never chose."""

    def __init__(self, named: Path | None) -> None:
        self.named = named
        self._found: dict[Path, Path | None] = {}  # a program's folder -> its project

    def of(self, program: Path) -> Path | None:
        if self.named is not None:
            return self.named
        folder = Path.cwd() if str(program) == STDIN else program.parent
        if folder not in self._found:
            from openprose.project import find_project

            project = find_project(folder)
            real = project.settings_file is not None or (project.root / ".prose").is_dir()
            self._found[folder] = project.root if real else None
        return self._found[folder]


def _directory(text: str) -> Path:
    """A ``--project-dir`` that is not a directory is a usage error (exit 2): taken as a
    project without memory, a typo would turn every ``resume:`` into a false E018."""
    path = Path(text)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: not a directory")
    return path


@dataclass(slots=True)
class Checked:
    path: str
    source: SourceFile | None
    diagnostics: list[Diagnostic]


def run(args: argparse.Namespace) -> int:
    with stdout_guard():
        usage_error = False
        fixed_files = fix_count = 0
        checked: list[Checked] = []
        projects = Projects(args.project_dir)
        for program in expand(args.paths):
            if isinstance(program, str):
                usage_error = True
                continue
            source, problems = read(program)
            if source is None and is_unreadable(problems):
                usage_error = True
                continue
            if source is not None and (args.fix or args.diff):
                source, diagnostics, changed = _fix(program, source, args, projects.of(program))
                if changed is None:
                    usage_error = True
                fixed_files += bool(changed)
                fix_count += changed or 0
            else:
                diagnostics = problems if source is None else _check(source, projects.of(program))
            checked.append(Checked(str(program), source, diagnostics))
        hidden = _hidden_fixes(checked, args)
        if args.diff:
            fixes = "1 fix" if fix_count == 1 else f"{fix_count} fixes"
            write(
                sys.stderr, f"{fixes} would be applied in {_plural(fixed_files, 'file')}{hidden}\n"
            )
            if usage_error:
                return USAGE_ERROR
            return FAILED if fixed_files else OK
        if args.statistics:
            write(sys.stdout, statistics(checked, args.format))
            if args.fix and args.format != "json":
                write(
                    sys.stdout,
                    f"fixed {_plural(fix_count, 'problem')} in "
                    f"{_plural(fixed_files, 'file')}{hidden}\n",
                )
        elif args.format == "json":
            found = [d.to_dict() for c in checked for d in c.diagnostics]
            if getattr(args, "estimate", False):
                estimated = [e.to_json() for e in _estimates(checked, projects)]
                shown: object = {"diagnostics": found, "estimates": estimated}
                write(sys.stdout, json.dumps(shown, indent=2, ensure_ascii=False) + "\n")
            else:
                write(sys.stdout, json.dumps(found, indent=2) + "\n")
        else:
            for c in checked:
                print_diagnostics(c.diagnostics, c.source, sys.stdout)
            if args.fix:
                write(
                    sys.stdout,
                    f"fixed {_plural(fix_count, 'problem')} in {_plural(fixed_files, 'file')}"
                    f"{hidden}\n",
                )
            if getattr(args, "estimate", False):
                for estimate in _estimates(checked, projects):
                    write(sys.stdout, estimate.table() + "\n\n")
            if not getattr(args, "quiet", False):
                write(sys.stdout, summary(checked) + "\n")
        if usage_error:
            return USAGE_ERROR
        return FAILED if any(d.is_error for c in checked for d in c.diagnostics) else OK
    return FAILED  # stdout was closed early (e.g. piped into `head`)


def _estimates(checked: list[Checked], projects: Projects) -> list[Estimate]:
    """The estimate of each program that has no errors (`--estimate`)."""
    from openprose.parser import parse
    from openprose.project import find_project
    from openprose.vm.estimates.project import estimate_in_project

    found = []
    for c in checked:
        if c.source is None or any(d.is_error for d in c.diagnostics):
            continue
        folder = Path.cwd() if c.path == STDIN else Path(c.path).parent
        project = projects.of(Path(c.path)) or find_project(folder).root
        program = parse(c.source).program
        found.append(estimate_in_project(program, None, project=project, program_dir=folder))
    return found


@dataclass(slots=True)
class CodeCount:
    """One row of ``--statistics``: a code, how often it was found, and how many of those
    carry a safe fix (``--fix``) or an unsafe one (``--fix --unsafe-fixes``)."""

    code: str
    meaning: str
    count: int = 0
    safe: int = 0
    unsafe: int = 0


def count_codes(checked: list[Checked]) -> list[CodeCount]:
    """The rows, most frequent first (then by code), as ruff orders them."""
    from openprose.codes import CODES

    rows: dict[str, CodeCount] = {}
    for c in checked:
        for d in c.diagnostics:
            known = CODES.get(d.code)
            row = rows.setdefault(d.code, CodeCount(d.code, known.meaning if known else ""))
            row.count += 1
            if d.fix is not None:
                if d.fix.safe:
                    row.safe += 1
                else:
                    row.unsafe += 1
    return sorted(rows.values(), key=lambda r: (-r.count, r.code))


def statistics(checked: list[Checked], form: str) -> str:
    """``--statistics``: one line a code (count, code, fixes, meaning) and a total line
    saying how many problems each kind of ``--fix`` would resolve; or one JSON array."""
    rows = count_codes(checked)
    if form == "json":
        found = [
            {"code": r.code, "meaning": r.meaning, "count": r.count, "safe_fixes": r.safe,
             "unsafe_fixes": r.unsafe}
            for r in rows
        ]  # fmt: skip
        return json.dumps(found, indent=2) + "\n"
    width = max((len(str(r.count)) for r in rows), default=1)
    lines: list[str] = []
    for r in rows:
        kinds = [f"{r.safe} safe" if r.safe else "", f"{r.unsafe} unsafe" if r.unsafe else ""]
        fixes = ", ".join(kind for kind in kinds if kind)
        if fixes:
            fixes = f" ({fixes} {'fix' if r.safe + r.unsafe == 1 else 'fixes'})"
        marker = "[*]" if r.safe else "[-]" if r.unsafe else "[ ]"
        lines.append(f"{r.count:>{width}}  {r.code}  {marker} {r.meaning}{fixes}")
    total = sum(r.count for r in rows)
    safe, unsafe = sum(r.safe for r in rows), sum(r.unsafe for r in rows)
    lines.append(
        f"{_plural(total, 'problem')} in {_plural(len(checked), 'file')}: {safe} fixable with "
        f"--fix, {unsafe} more with --fix --unsafe-fixes"
    )
    return "\n".join(lines) + "\n"


def _hidden_fixes(checked: list[Checked], args: argparse.Namespace) -> str:
    """` (N more with --unsafe-fixes)` when likely fixes were left out (as ruff says it)."""
    if not (args.fix or args.diff) or args.unsafe_fixes:
        return ""
    count = sum(1 for c in checked for d in c.diagnostics if d.fix is not None and not d.fix.safe)
    return f" ({count} more with --unsafe-fixes)" if count else ""


def _fix(
    path: Path, source: SourceFile, args: argparse.Namespace, project_dir: Path | None
) -> tuple[SourceFile, list[Diagnostic], int | None]:
    """Fix one file: its (new) source, the diagnostics left and how many fixes were applied
    (None when the fixed text could not be written)."""
    from openprose.fixes import fix_source
    from openprose.source import SourceFile

    result = fix_source(source, project_dir=project_dir, unsafe=args.unsafe_fixes)
    if not result.changed:
        return source, result.remaining, 0
    if args.diff:
        import difflib

        diff = difflib.unified_diff(
            source.text.splitlines(keepends=True),
            result.text.splitlines(keepends=True),
            fromfile=str(path),
            tofile=str(path),
        )
        write(sys.stdout, "".join(line if line.endswith("\n") else line + "\n" for line in diff))
        return source, [], len(result.applied)
    if not write_atomically(path, result.text):
        return source, result.remaining, None
    return SourceFile.from_text(result.text, source.path), result.remaining, len(result.applied)


def write_atomically(path: Path, text: str) -> bool:
    """Replace ``path``'s content through a temporary file and a rename, so a crash or a full
    disk mid-write never leaves the user's source cut short; the file keeps its permissions.
    Refuses what is not a regular file (a FIFO would block)."""
    from openprose.files import write_atomically as replace

    if not path.is_file():
        write(sys.stderr, f"prose: {path}: cannot write: not a regular file\n")
        return False
    try:
        mode = path.stat().st_mode & 0o7777
        replace(path, text)
        os.chmod(path, mode)
    except OSError as error:
        write(sys.stderr, f"prose: {path}: cannot write: {error.strerror or error}\n")
        return False
    return True


def _check(source: SourceFile, project_dir: Path | None) -> list[Diagnostic]:
    from openprose import check_source

    return check_source(source, project_dir=project_dir)


# --- shared with compile and fmt -------------------------------------------------------------


def expand(paths: list[str]) -> Iterator[Path | str]:
    """Each program file named or found under a directory; a path that does not exist is
    reported on stderr and yielded as its ``str`` so the caller can note the usage error."""
    from openprose import find_programs

    seen: set[Path] = set()  # `prose check dir dir/a.prose` checks a.prose once
    for path in paths:
        if path == STDIN:
            yield Path(STDIN)
            continue
        if not os.path.exists(path):
            write(sys.stderr, f"prose: {path}: {missing_reason(path)}\n")
            yield path
            continue
        found = False
        for program in find_programs(path):
            found = True
            if program not in seen:
                seen.add(program)
                yield program
        if not found and os.path.isdir(path):  # as ruff says it: a typo'd or empty folder
            write(sys.stderr, f"prose: warning: no .prose files under {path}\n")


def missing_reason(path: str | Path) -> str:
    """Why a path that does not exist as far as `os.path.exists` goes cannot be used: a
    symlink loop and a broken link are named as such."""
    from openprose.files import unreadable_reason

    reason = unreadable_reason(Path(path)) or "no such file"
    return "no such file or directory" if reason == "no such file" else reason


def read(path: Path) -> tuple[SourceFile | None, list[Diagnostic]]:
    """``read_source``, reporting a file that cannot be read at all on stderr."""
    from openprose.parser import PROGRAM_LIMIT, decode_source, read_source

    if str(path) == STDIN:
        source, problems = decode_source(sys.stdin.buffer.read(PROGRAM_LIMIT + 1), STDIN_NAME)
    else:
        source, problems = read_source(path)
    if source is None and is_unreadable(problems):
        message = problems[0].message
        write(sys.stderr, f"prose: {path}: {message[:1].lower()}{message[1:]}\n")
    return source, list(problems)


def is_unreadable(problems: list[Diagnostic]) -> bool:
    return any(d.code == UNREADABLE for d in problems)


def summary(checked: list[Checked]) -> str:
    """``3 files checked: 2 errors, 1 warning`` (plus ``, N notes`` when there are any)."""
    counts = {"error": 0, "warning": 0, "info": 0}
    for c in checked:
        for d in c.diagnostics:
            counts[str(d.severity)] += 1
    text = (
        f"{_plural(len(checked), 'file')} checked: "
        f"{_plural(counts['error'], 'error')}, {_plural(counts['warning'], 'warning')}"
    )
    if counts["info"]:
        text += f", {_plural(counts['info'], 'note')}"
    return text


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


@contextmanager
def stdout_guard() -> Iterator[None]:
    """Turns a closed stdout (``prose check | head``) into a quiet exit: the rest of the body
    is skipped, and stdout is pointed at devnull so the interpreter's final flush succeeds."""
    try:
        yield
    except BrokenPipeError:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass

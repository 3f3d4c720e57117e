"""``prose test [PATHS]``: run the cases of the test files (`*.test.toml`) found under PATHS.

Exit status: 0 when every case passed; 1 when a case failed or could not run; 2 for usage
errors (a bad option, a path that is no test file, a test file that cannot be read, no case).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

OK, FAILED, USAGE_ERROR = 0, 1, 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from openprose.cli.run import _provider_name
    from openprose.testing.suite import DEFAULT_JOBS

    parser.add_argument(
        "paths",
        metavar="PATH",
        nargs="*",
        help="test files or folders to search (default: [test] paths of prose.toml, else .)",
    )
    parser.add_argument(
        "-k",
        dest="keyword",
        metavar="EXPRESSION",
        help="only cases whose FILE::NAME holds these words (and, or, not, parentheses)",
    )
    parser.add_argument(
        "--record",
        action="store_true",
        help="run the cassette cases live and save their cassettes",
    )
    parser.add_argument(
        "--update",
        action="store_true",
        help="record again only the cassettes that no longer match their program",
    )
    parser.add_argument(
        "--provider",
        type=_provider_name,
        metavar="NAME",
        help="the live provider of --record, --update and `live = true` cases",
    )
    parser.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="ALIAS=PROVIDER:MODEL",
        help="route a model alias in live runs; repeat for several",
    )
    parser.add_argument(
        "-j",
        "--jobs",
        type=_positive,
        default=DEFAULT_JOBS,
        metavar="N",
        help=f"cases run at once (default {DEFAULT_JOBS})",
    )
    parser.add_argument("--junit-xml", metavar="FILE", help="write a JUnit XML report")
    parser.add_argument(
        "--json",
        metavar="FILE",
        help="write a JSON report to FILE (`-`: print it instead of the summary)",
    )


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, got {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    from cliconventions import run_async
    from openprose.testing.case import Mode
    from openprose.testing.report import FileLine, json_text, junit_xml, summary
    from openprose.testing.suite import SuiteError, TestFileError, discover, load_files, run_suite

    try:
        files = load_files(discover(args.paths))
        if args.keyword:
            from openprose.testing.suite import keyword_filter

            keyword_filter(args.keyword)  # a bad expression is a usage error before any run
    except (SuiteError, TestFileError) as error:
        print(f"prose test: {error}", file=sys.stderr)
        return USAGE_ERROR
    if not files:
        where = " ".join(args.paths) or "this project"
        print(f"prose test: no test files (NAME.test.toml) in {where}", file=sys.stderr)
        return USAGE_ERROR
    json_out = args.json == "-"
    verbosity = -1 if args.quiet or json_out else min(args.verbose, 1)
    mode = Mode(record=args.record, provider=args.provider, models=tuple(args.model))
    result = run_async(
        run_suite(
            files,
            mode,
            keyword=args.keyword,
            update=args.update,
            jobs=args.jobs,
            on_file_done=FileLine(sys.stdout, verbosity),
        )
    )
    if not result.outcomes:
        print(f"prose test: -k {args.keyword!r} selects no case", file=sys.stderr)
        return USAGE_ERROR
    try:
        if args.junit_xml:
            _write(Path(args.junit_xml), junit_xml(result))
        if args.json and not json_out:
            _write(Path(args.json), json_text(result).encode("utf-8"))
    except OSError as error:
        from cliconventions import os_error_text

        print(f"prose test: cannot write the report: {os_error_text(error)}", file=sys.stderr)
        return USAGE_ERROR
    if json_out:
        sys.stdout.write(json_text(result))
    else:
        summary(result, sys.stdout)
    return OK if result.passed else FAILED


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)

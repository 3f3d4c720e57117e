"""The ``vlp`` command: validate, show, gate and new.

Exit codes: validate 0 valid / 1 problems found / 2 usage error, unreadable input or a
failed worker process (no complete report); gate 0 proceed /
3 hold for review / 4 halt / 2 usage error; new 0 / 1 invalid message / 2 usage error;
130 when interrupted (Ctrl-C), 143 when terminated (SIGTERM).
"""

from __future__ import annotations

import argparse
import sys

from cliconventions import OUTPUT_ERRNOS, ConventionalParser, guard_output, version_line
from cliconventions import apply as apply_conventions
from cliconventions.terminal import neutralise as visible

# Each command imports what it runs, when it runs: `vlp --version` loads neither msgspec
# nor the thread checks (tests/cliconventions/test_startup.py keeps it so).
TYPE_CHECKING = False  # `typing` costs start-up time too
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import IO, Any, NoReturn

    from vlp.duplicates import DuplicateKey
    from vlp.errors import Problem
    from vlp.thread import Thread

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2
_SPOOL_BYTES = 8 * 1024 * 1024
# The cyclic GC collects its young generation every 700 container allocations: while a
# slice's thread columns (lists of 256 strings) are alive, every collection visits their
# items, missing the caches (~15 % of a validate's L2 data misses, docs/decisions.md
# vlp35f). What validating leaves in cycles is small (an unparsable line's error and its
# traceback), so collecting every 100,000 allocations still bounds it.
VALIDATE_GC_THRESHOLD = 100_000


class UsageError(Exception):
    """Bad arguments or an input that cannot be opened: exit code 2."""


def _display(path: str) -> str:
    return "<stdin>" if path == "-" else path


def _out(text: str) -> None:
    """A line for the user: terminal control sequences from the input are made inert."""
    sys.stdout.write(visible(text) + "\n")


def _out_bytes(data: bytes) -> None:
    """JSON is UTF-8 whatever the terminal's encoding, so it goes out as bytes."""
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # a text-only stdout (tests, embedding)
        sys.stdout.write(data.decode())
        return
    sys.stdout.flush()
    buffer.write(data)
    buffer.flush()


def _out_json(value: Any, option: int = 0) -> None:
    import orjson

    _out_bytes(orjson.dumps(value, option=option) + b"\n")


class _ProblemSpool:
    """The problems of a ``--format json`` report, as JSON text in a file kept in memory up
    to 8 MiB and on disk beyond: memory stays bounded however many problems a file has."""

    def __init__(self, spool: IO[bytes]) -> None:
        self._spool = spool
        self._count = 0

    def add(self, problem: dict[str, Any]) -> None:
        import orjson

        self._spool.write((b"," if self._count else b"") + orjson.dumps(problem))
        self._count += 1

    def report(self, ok: bool, messages: int, valid: int) -> None:
        """Print ``{"ok", "messages", "valid", "problems": [...]}``."""
        import orjson

        head = orjson.dumps({"ok": ok, "messages": messages, "valid": valid})
        _out_bytes(head[:-1] + b',"problems":[')
        self._spool.seek(0)
        while piece := self._spool.read(_SPOOL_BYTES):
            _out_bytes(piece)
        _out_bytes(b"]}\n")


def _problem_dict(path: str, problem: Problem) -> dict[str, Any]:
    return {
        "path": _display(path),
        "line": problem.line,
        "id": problem.id,
        "code": problem.code,
        "message": problem.message,
    }


def _problem_text(path: str, problem: Problem) -> str:
    where = f"{_display(path)}:{problem.line}" if problem.line is not None else _display(path)
    return f"{where}: {problem.code} {problem.message}"


def _cmd_validate(args: argparse.Namespace) -> int:
    import gc

    thresholds = gc.get_threshold()
    gc.set_threshold(VALIDATE_GC_THRESHOLD, *thresholds[1:])  # worker processes inherit it
    try:
        if args.format != "json":
            return _validate(args, None)
        import tempfile  # only a JSON report needs a spool

        with tempfile.SpooledTemporaryFile(max_size=_SPOOL_BYTES) as spool:
            return _validate(args, _ProblemSpool(spool))
    finally:
        gc.set_threshold(*thresholds)


def _validate(args: argparse.Namespace, problems: _ProblemSpool | None) -> int:
    from vlp.errors import Problem
    from vlp.jobs import WorkerFailed
    from vlp.ndjson import scan
    from vlp.thread import ThreadChecker

    totals = {"messages": 0, "valid": 0, "problems": 0}
    usage_errors = 0
    for path in args.files:
        checker = None if args.no_thread else ThreadChecker()

        def on_problem(problem: Problem, path: str = path) -> None:
            totals["problems"] += 1
            if problems is not None:
                problems.add(_problem_dict(path, problem))
            else:
                _out(_problem_text(path, problem))

        try:
            summary = scan(
                path,
                on_problem,
                thread=checker,
                max_line_bytes=args.max_line_bytes,
                jobs=args.jobs,
            )
        except WorkerFailed as error:  # never a partial report presented as complete
            raise UsageError(
                f"cannot validate {_display(path)}: {error}; no complete report "
                "(--jobs 1 validates in this process only)"
            ) from None
        except OSError as error:
            if isinstance(error, BrokenPipeError) or error.errno in OUTPUT_ERRNOS:
                raise  # writing the report failed, not reading the file
            usage_errors += 1
            reason = f"cannot read {_display(path)}: {error.strerror or error}"
            sys.stderr.write(visible(f"vlp: {reason}") + "\n")
            if problems is not None:
                problems.add(_problem_dict(path, Problem("VLP004", reason)))
            continue
        if checker is not None:
            for problem in checker.finish():
                on_problem(problem)
        totals["messages"] += summary.messages
        totals["valid"] += summary.valid
    ok = totals["problems"] == 0 and usage_errors == 0
    if problems is not None:
        problems.report(ok, totals["messages"], totals["valid"])
    elif not args.quiet:  # -q: the problems only
        verdict = "ok" if ok else "INVALID"
        _out(
            f"{verdict}: {totals['messages']} message(s), {totals['valid']} valid, "
            f"{totals['problems']} problem(s) in {len(args.files)} file(s)"
        )
    if usage_errors:
        return EXIT_USAGE
    return EXIT_OK if ok else EXIT_INVALID


def _load_thread(
    path: str, max_line_bytes: int
) -> tuple[Thread, list[Problem], dict[int, list[DuplicateKey]]]:
    """The thread of a file, the problems of its unreadable lines, and the keys each
    message repeats (by position in the thread)."""
    from vlp.ndjson import read_records
    from vlp.thread import Thread

    messages: list[Any] = []
    lines: list[int | None] = []
    unreadable: list[Problem] = []
    duplicates: dict[int, list[DuplicateKey]] = {}
    try:
        for record in read_records(path, max_line_bytes=max_line_bytes):
            if record.message is None:
                unreadable.extend(record.problems)
                continue
            if record.duplicates:
                duplicates[len(messages)] = record.duplicates
            messages.append(record.message)
            lines.append(record.line)
    except OSError as error:
        raise UsageError(f"cannot read {_display(path)}: {error.strerror or error}") from error
    return Thread(messages, lines), unreadable, duplicates


def _cmd_show(args: argparse.Namespace) -> int:
    from vlp.render import render_thread

    thread, unreadable, duplicates = _load_thread(args.file, args.max_line_bytes)
    sys.stdout.write(visible(render_thread(thread)))
    for problem in unreadable:
        _out(_problem_text(args.file, problem))
    for index in duplicates:
        where = f"{_display(args.file)}:{thread.lines[index]}"
        for duplicate in duplicates[index]:
            _out(f"{where}: VLP005 key '{duplicate.path}' is given twice; shown: the last value")
    return EXIT_OK


def _cmd_gate(args: argparse.Namespace) -> int:
    from vlp.gate import gate

    thread, unreadable, duplicates = _load_thread(args.file, args.max_line_bytes)
    result = gate(thread, unreadable=unreadable, duplicates=duplicates)
    if args.format == "json":
        _out_json(
            {
                "verdict": result.verdict.value,
                "causes": [
                    {"verdict": c.verdict.value, "id": c.id, "line": c.line, "reason": c.reason}
                    for c in result.causes
                ],
                "halted": result.halted,
                "held": result.held,
            }
        )
        return result.verdict.exit_code
    labels = {"proceed": "PROCEED", "hold": "HOLD for review", "halt": "HALT"}
    _out(f"{labels[result.verdict.value]} ({len(thread.messages)} message(s))")
    for cause in result.causes:
        line = f" (line {cause.line})" if cause.line is not None and cause.id is not None else ""
        _out(f"  {cause.verdict.value}: {cause.where}{line}: {cause.reason}")
    if result.halted:
        _out("  halted: " + ", ".join(result.halted))
    if result.held:
        _out("  held: " + ", ".join(result.held))
    return result.verdict.exit_code


def _json_object(text: str, option: str) -> dict[str, Any]:
    import orjson

    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as error:
        raise UsageError(f"{option} is not valid JSON: {error}") from error
    if not isinstance(value, dict):
        raise UsageError(f"{option} must be a JSON object")
    return value


def _require_utf8(args: argparse.Namespace) -> None:
    """Undecodable argv bytes reach Python as lone surrogates, which no JSON output can hold:
    refuse them as a usage error naming the option (never echoing the bytes)."""
    for name, value in vars(args).items():
        for text in value if isinstance(value, list) else [value]:
            if not isinstance(text, str):
                continue
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as error:
                option = "--" + name.replace("_", "-")
                raise UsageError(
                    f"{option} is not UTF-8 text (character {error.start + 1} is invalid)"
                ) from None


def _cmd_new(args: argparse.Namespace) -> int:
    import orjson

    from vlp.errors import VLPError
    from vlp.message import make_message

    _require_utf8(args)
    content: Any = _json_object(args.content, "--content") if args.content_json else args.content
    safety: dict[str, Any] | None = None
    if args.safety or args.issue or args.requires_human:
        issues = []
        for spec in args.issue or []:
            code, _, detail = spec.partition(":")
            issues.append({"code": code, "detail": detail} if detail else {"code": code})
        safety = {"level": args.safety or "safe", "issues": issues}
        if args.requires_human:
            safety["requires_human"] = True
    refers_to = args.refers_to[0] if args.refers_to and len(args.refers_to) == 1 else args.refers_to
    try:
        msg = make_message(
            args.type,
            sender=args.sender,
            content=content,
            confidence=args.confidence,
            provenance=args.provenance,
            keywords=args.keyword,
            refers_to=refers_to,
            receiver=args.receiver,
            topic=args.topic,
            session_id=args.session_id,
            seq=args.seq,
            constraints=args.constraint,
            safety=safety,
            payload=_json_object(args.payload, "--payload") if args.payload else None,
            extras=_json_object(args.extras, "--extras") if args.extras else None,
            id=args.id,
            timestamp=args.timestamp,
        )
    except VLPError as error:
        for problem in error.problems:
            sys.stderr.write(visible(f"vlp new: {problem.code} {problem.message}") + "\n")
        return EXIT_INVALID
    _out_json(msg, orjson.OPT_INDENT_2 if args.pretty else 0)
    return EXIT_OK


def _cmd_codes(args: argparse.Namespace) -> int:
    from vlp.errors import CODES

    for code, meaning in CODES.items():
        _out(f"{code}  {meaning}")
    return EXIT_OK


class _Parser(ConventionalParser):
    def usage_error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"vlp: error: {message}\n")


def _max_line(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of bytes: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be a positive number of bytes")
    return value


def _jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of processes: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def build_parser() -> argparse.ArgumentParser:
    from vlp import ask_cli
    from vlp.ndjson import DEFAULT_MAX_LINE_BYTES, SPLIT_MIN_BYTES
    from vlp.schema import MESSAGE_TYPES, SAFETY_LEVELS

    parser = _Parser(prog="vlp", description="Validate, inspect, gate and create VLP/1.1 messages.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    validate = commands.add_parser("validate", help="check JSON or NDJSON files ('-' for stdin)")
    validate.add_argument("files", nargs="+", metavar="FILE")
    validate.add_argument("--format", choices=("text", "json"), default="text")
    validate.add_argument(
        "--no-thread",
        action="store_true",
        help="skip checks across messages (duplicate ids, refs, seq): constant memory",
    )
    validate.add_argument(
        "-j",
        "--jobs",
        type=_jobs,
        default=None,
        metavar="N",
        help="processes sharing a large file (default: one per usable CPU; 1: this process "
        f"only); stdin and files under {SPLIT_MIN_BYTES >> 20} MiB always use one",
    )
    validate.set_defaults(run=_cmd_validate)

    show = commands.add_parser("show", help="print a thread as a tree, corrections applied")
    show.add_argument("file", metavar="FILE")
    show.set_defaults(run=_cmd_show)

    gate_cmd = commands.add_parser(
        "gate", help="verdict: exit 0 proceed, 3 hold for review, 4 halt"
    )
    gate_cmd.add_argument("file", metavar="FILE")
    gate_cmd.add_argument("--format", choices=("text", "json"), default="text")
    gate_cmd.set_defaults(run=_cmd_gate)

    for sub in (validate, show, gate_cmd):
        sub.add_argument(
            "--max-line-bytes",
            type=_max_line,
            default=DEFAULT_MAX_LINE_BYTES,
            help=f"longer lines are reported and skipped (default {DEFAULT_MAX_LINE_BYTES})",
        )

    new = commands.add_parser("new", help="print a new valid message as one JSON line")
    new.add_argument("type", choices=MESSAGE_TYPES)
    new.add_argument("--sender", required=True)
    new.add_argument("--content", required=True)
    new.add_argument("--content-json", action="store_true", help="parse --content as a JSON object")
    new.add_argument("--confidence", type=float)
    new.add_argument("--provenance", action="append", metavar="SOURCE")
    new.add_argument("--keyword", action="append")
    new.add_argument("--refers-to", action="append", metavar="ID")
    new.add_argument("--receiver")
    new.add_argument("--topic")
    new.add_argument("--session-id")
    new.add_argument("--seq", type=int)
    new.add_argument("--constraint", action="append")
    new.add_argument("--safety", choices=SAFETY_LEVELS)
    new.add_argument("--issue", action="append", metavar="CODE[:DETAIL]")
    new.add_argument("--requires-human", action="store_true")
    new.add_argument("--payload", metavar="JSON")
    new.add_argument("--extras", metavar="JSON")
    new.add_argument("--id")
    new.add_argument("--timestamp")
    new.add_argument("--pretty", action="store_true")
    new.set_defaults(run=_cmd_new)

    codes = commands.add_parser("codes", help="list every problem code")
    codes.set_defaults(run=_cmd_codes)
    ask_cli.add_command(commands)  # `vlp ask`: its own module
    apply_conventions(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:  # a terminal that cannot show a character gets an escape
        reconfigure(errors="backslashreplace")
    if (sys.argv[1:] if argv is None else list(argv))[:1] == ["--version"]:
        print(version_line("vlp"))  # before the parser: building it loads every command
        return EXIT_OK
    args = build_parser().parse_args(argv)
    return guard_output("vlp", lambda: _run(args))


def run() -> NoReturn:
    """``vlp`` as a process (the script, ``python -m vlp.cli``): :func:`main`, then exit.
    Once the output is flushed and nothing waits for the interpreter's end (no atexit
    handler, no other thread), the process ends without tearing the interpreter down
    module by module: ~25 M instructions, most of a `vlp validate`'s teardown
    (docs/decisions.md, vlp35h). Otherwise, or if flushing fails, the usual exit."""
    import atexit
    import os

    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # the usual exit reports it, as without this shortcut
        raise SystemExit(code) from None
    threading = sys.modules.get("threading")
    if atexit._ncallbacks() or (threading is not None and threading.active_count() > 1):
        raise SystemExit(code)
    os._exit(code)


def _run(args: argparse.Namespace) -> int:
    try:
        code: int = args.run(args)
    except UsageError as error:
        sys.stderr.write(visible(f"vlp: {error}") + "\n")
        return EXIT_USAGE
    return code


if __name__ == "__main__":
    run()

"""The `plsp` command: parse, check and run."""

from __future__ import annotations

import argparse
import json
import sys

from cliconventions import (
    ConventionalParser,
    guard_output,
    interrupt_status,
    interrupt_word,
    run_async,
    version_line,
)
from cliconventions import apply as apply_conventions
from cliconventions.terminal import neutralise as visible

# Each command imports what it runs, when it runs: `plsp --version` and `plsp --help` load
# neither aiohttp nor the loop (tests/cliconventions/test_startup.py keeps it so).
TYPE_CHECKING = False  # `typing` costs start-up time too
if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path
    from typing import Any

    from plsp.instr import Instruction
    from plsp.loopfile import LoopSpec
    from plsp.middleware import CycleRecord, LoopResult, Model
    from plsp.syntax import StateBlock, Value


def _say(*parts: object, **options: Any) -> None:
    """print() for the user: terminal control sequences from blocks, replies and files
    are shown as visible escapes, never acted on (JSON output is data and unchanged)."""
    print(*(visible(str(part)) for part in parts), **options)


def _value_json(value: Value) -> dict[str, Any]:
    from plsp.syntax import Num, Str

    if isinstance(value, Str):
        return {"type": "string", "text": value.text}
    if isinstance(value, Num):
        return {"type": "number", "text": value.text}
    return {"type": "ref", "name": value.name}


def block_json(block: StateBlock) -> dict[str, Any]:
    from plsp.syntax import Action, Assign, Log

    statements: list[dict[str, Any]] = []
    for statement in block.statements:
        if isinstance(statement, Assign):
            statements.append(
                {"type": "assign", "name": statement.name, "value": _value_json(statement.value)}
            )
        elif isinstance(statement, Log):
            statements.append({"type": "log", "values": [_value_json(v) for v in statement.values]})
        elif isinstance(statement, Action):
            statements.append(
                {
                    "type": "action",
                    "name": statement.name,
                    "params": [_value_json(v) for v in statement.params],
                }
            )
    return {
        "canonical": block.dumps(),
        "statements": statements,
        "warnings": [str(w) for w in block.warnings],
    }


def _starts_instruction(text: str) -> bool:
    from plsp.instr import PREFIX
    from plsp.syntax import Scanner

    scanner = Scanner(text)
    scanner.skip_framing()
    head = scanner.text[scanner.pos : scanner.pos + len(PREFIX)]
    return head.upper() == PREFIX or scanner.peek() == "@"


def _cmd_parse(args: argparse.Namespace) -> int:
    from plsp.diagnostics import ParseError
    from plsp.instr import parse_instr
    from plsp.syntax import StateBlock, parse

    if args.text == "-":
        data = sys.stdin.buffer.read()
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as error:
            _say(
                f"plsp: error: stdin is not UTF-8 text (byte {error.start} is invalid)",
                file=sys.stderr,
            )
            return 1
    else:
        text = args.text
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as error:  # undecodable argv bytes arrive as surrogates
            _say(
                f"plsp: error: the argument is not UTF-8 text (character {error.start + 1} is "
                "invalid)",
                file=sys.stderr,
            )
            return 1
    parsed: StateBlock | Instruction
    try:
        # An instruction, with its prefix or (as the seed lists directives) without.
        if _starts_instruction(text):
            parsed = parse_instr(text, passthrough=not args.strict, require_prefix=False)
        else:
            parsed = parse(text)
    except ParseError as error:
        _say(f"plsp: error: {error}\n{error.excerpt()}", file=sys.stderr)
        return 1
    for warning in parsed.warnings:
        _say(f"warning: {warning}", file=sys.stderr)
    if not args.json:
        _say(parsed.dumps())
    elif isinstance(parsed, StateBlock):
        print(json.dumps(block_json(parsed), indent=2, ensure_ascii=False))
    else:
        _say(
            json.dumps(
                {
                    "canonical": parsed.dumps(),
                    "directives": [d.dumps() for d in parsed.directives],
                    "warnings": [str(w) for w in parsed.warnings],
                },
                indent=2,
            )
        )
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    from plsp.trace import TraceError, check_trace

    try:
        checks = check_trace(args.trace)
    except TraceError as error:
        _say(f"plsp: error: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        _say(f"plsp: error: {args.trace}: {error.strerror or error}", file=sys.stderr)
        return 2
    for check in checks:
        status = "ok" if check.ok else "FAIL"
        _say(f"line {check.line} cycle {check.cycle}: {status}")
        for problem in check.problems:
            _say(f"  - {problem}")
        for violation in check.violations:
            _say(f"  {'!' if violation.blocking else '~'} {violation}")
    failed = sum(not c.ok for c in checks)
    _say(f"{len(checks)} cycles, {failed} failing")
    return 1 if failed else 0


def _show(record: CycleRecord) -> None:
    mark = "accepted" if record.accepted else "REJECTED"
    _say(
        f"── cycle {record.cycle} ── {mark}"
        + (f" after {len(record.attempts)} attempts" if len(record.attempts) > 1 else "")
    )
    _say(f"  {record.instr}\n  prev  {record.previous}")
    for number, attempt in enumerate(record.attempts[:-1], start=1):
        _say(f"  re-asked after attempt {number}: {attempt.reply!r}")
        for violation in attempt.violations:
            _say(f"    {'!' if violation.blocking else '~'} {violation}")
    _say(f"  next  {record.next or '-'}")
    for result in record.actions:
        outcome = f"ok {result.value!r}" if result.ok else f"failed: {result.error}"
        _say(f"  !{result.name} {list(result.args)} -> {outcome}")
    for data in record.logs:
        _say(f"  > {json.dumps(data, ensure_ascii=False)}")
    for violation in record.violations:
        _say(f"  {'!' if violation.blocking else '~'} {violation}")
    sys.stdout.flush()


def _model(args: argparse.Namespace, spec: LoopSpec) -> tuple[Model, Any]:
    from pathlib import Path

    from plsp.providers import dry_run_model, provider_model, replies_model

    if args.dry_run:
        return dry_run_model(), None
    replies = Path(args.replies) if args.replies else spec.replies
    if replies is not None and not args.provider:
        return replies_model(replies), None
    return provider_model(
        args.provider or spec.provider,
        args.model or spec.model,
        max_tokens=args.max_tokens,
        grammar=args.grammar,
    )


def _with_status(model: Model) -> Model:
    """On a terminal, say that the model is being asked (a local model may take
    seconds); the status line is erased before the cycle is printed."""
    import inspect

    calls = 0

    async def ask(system: str, prompt: str) -> str:
        nonlocal calls
        calls += 1
        print(f"  ... asking the model (request {calls})", end="\r", flush=True)
        try:
            answer = model(system, prompt)
            return await answer if inspect.isawaitable(answer) else answer
        finally:
            print("\x1b[2K", end="", flush=True)

    return ask


async def _run(args: argparse.Namespace, spec: LoopSpec) -> LoopResult:
    import contextlib

    from plsp.middleware import Loop
    from plsp.trace import TraceWriter

    model, close = _model(args, spec)
    if not args.quiet and sys.stdout.isatty():
        model = _with_status(model)
    trace_path = _trace_path(args, spec)
    with TraceWriter(trace_path) if trace_path else contextlib.nullcontext() as trace:

        def on_cycle(record: CycleRecord) -> None:
            if trace is not None:
                trace.write(record)
            if not args.quiet:
                _show(record)

        loop = Loop(
            model,
            spec,
            actions=spec.build_actions(),
            logs=spec.build_log_sink(),
            on_cycle=on_cycle,
            strict=spec.strict,
            retries=spec.retries,
            goal=spec.goal,
            max_cycles=args.max_cycles if args.max_cycles is not None else spec.max_cycles,
        )
        try:
            result = await loop.run()
        finally:
            if close is not None:
                await close()
    reason: str = result.stop_reason
    if reason == "policy" and spec.stopped_by:
        reason += f": {spec.stopped_by}"
    trace_note = (
        f"trace {trace_path}" if trace_path else "no trace (a dry run: --trace PATH keeps one)"
    )
    _say(
        f"stopped ({reason}) after {len(result.cycles)} cycles; state {result.state.dumps()}; {trace_note}"
    )
    return result


def _trace_path(args: argparse.Namespace, spec: LoopSpec) -> Path | None:
    """Where the trace goes: `--trace`, else `STEM.trace.ndjson` in the working
    directory — except for a dry run, which writes one only when asked (trying a
    loop file, as the README does, leaves nothing in the checkout)."""
    from pathlib import Path

    if args.trace:
        return Path(args.trace)
    if args.dry_run:
        return None
    stem = "stdin" if args.loopfile == "-" else spec.path.stem
    return Path(f"{stem}.trace.ndjson")


def _cmd_run(args: argparse.Namespace) -> int:
    from plsp.diagnostics import ParseError
    from plsp.loopfile import LoopFileError, load_loop
    from plsp.providers import ModelSetupError

    try:
        spec = load_loop(args.loopfile)
        result = run_async(_run(args, spec))  # SIGTERM stops it as Ctrl-C does
    except OSError as error:  # e.g. --trace names a directory or a missing folder
        where = f"{error.filename}: " if error.filename else ""
        _say(f"plsp: error: {where}{error.strerror or error}", file=sys.stderr)
        return 2
    except (LoopFileError, ModelSetupError, ParseError) as error:
        _say(f"plsp: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as interrupt:
        _say(f"{interrupt_word(interrupt)}; the trace holds every completed cycle", file=sys.stderr)
        return interrupt_status(interrupt)
    except Exception as error:  # noqa: BLE001 - provider failures: report, no traceback
        _say(f"plsp: error: {type(error).__name__}: {error}", file=sys.stderr)
        return 2
    # A "rejected" stop always ends on a rejected cycle, so this covers it too.
    last_rejected = bool(result.cycles) and not result.cycles[-1].accepted
    return 1 if last_rejected else 0


def _positive(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {number}")
    return number


def build_parser() -> argparse.ArgumentParser:
    parser = ConventionalParser(prog="plsp", description="Prompt Loop State Protocol 0.5")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=ConventionalParser)

    parse_cmd = commands.add_parser(
        "parse", help="print the canonical form of a block or an INSTR: line, or a positioned error"
    )
    parse_cmd.add_argument("text", help="S{...}S or INSTR:... text; '-' reads stdin")
    parse_cmd.add_argument("--json", action="store_true", help="print the structure")
    parse_cmd.add_argument(
        "--strict",
        action="store_true",
        help="a known INSTR: directive this middleware cannot read is an error, not a "
        "warning with the directive passed through verbatim",
    )
    parse_cmd.set_defaults(handler=_cmd_parse)

    check_cmd = commands.add_parser("check", help="verify every cycle of a trace offline")
    check_cmd.add_argument(
        "trace",
        help="an NDJSON trace written by `plsp run`, or a text transcript (INSTR: lines, "
        "each followed by the reply's block); '-' reads stdin",
    )
    check_cmd.set_defaults(handler=_cmd_check)

    run_cmd = commands.add_parser("run", help="run a loop file with a live cycle view")
    run_cmd.add_argument("loopfile", help="a .yaml/.toml loop file; '-' reads YAML from stdin")
    source = run_cmd.add_mutually_exclusive_group()
    source.add_argument(
        "--provider",
        help="anthropic, openai, local, replay:FILE ... (the project's provider layer)",
    )
    source.add_argument("--replies", help="answer with the replies of a JSON/NDJSON file")
    source.add_argument(
        "--dry-run", action="store_true", help="answer with the reference engine's expected state"
    )
    run_cmd.add_argument("--model", help="model id or alias for the provider")
    run_cmd.add_argument(
        "--max-cycles",
        type=_positive,
        metavar="N",
        help="stop after N cycles (N >= 1; default: the loop file's)",
    )
    run_cmd.add_argument(
        "--max-tokens",
        type=_positive,
        default=256,
        metavar="N",
        help="reply length limit for provider models (default 256)",
    )
    run_cmd.add_argument(
        "--grammar",
        choices=("cycle", "guided", "block", "none"),
        help="what a grammar-decoding provider (local) may answer: cycle = the blocks the "
        "verifier accepts for the cycle (default on local), guided = the block's shape with "
        "the model's own values, block = any well-formed block, none = free text",
    )
    run_cmd.add_argument("--trace", help="trace path (default: LOOPFILE stem + .trace.ndjson)")
    run_cmd.add_argument("--quiet", action="store_true", help="no live cycle view")
    run_cmd.set_defaults(handler=_cmd_run)
    apply_conventions(parser)  # -q is --quiet on `run`
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):  # a terminal that cannot show a character
        reconfigure = getattr(stream, "reconfigure", None)  # gets an escape, not a crash
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    if (sys.argv[1:] if argv is None else list(argv))[:1] == ["--version"]:
        print(version_line("plsp"))  # as the parser would, without building it
        return 0
    args = build_parser().parse_args(argv)
    return guard_output("plsp", lambda: int(args.handler(args)))


if __name__ == "__main__":
    sys.exit(main())

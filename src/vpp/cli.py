"""`vpp` command line: check, parse and repair VPP conversations.

Exit codes: 0 compliant / valid, 1 violations / invalid command, 2 usage or input error.
"""

from __future__ import annotations

import argparse
import errno
import io
import json
import os
import stat
import sys

from cliconventions import ConventionalParser, guard_output, version_line
from cliconventions import apply as apply_conventions
from cliconventions.terminal import neutralise

# Each command imports what it runs, when it runs: `vpp --version` loads none of them
# (tests/cliconventions/test_startup.py keeps it so).
TYPE_CHECKING = False  # `typing` costs start-up time too
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, TextIO

    from vpp.audit import TranscriptResult
    from vpp.grammar import Command
    from vpp.state import ConversationState
    from vpp.versions import Version

OK, VIOLATIONS, USAGE = 0, 1, 2


class _InputError(Exception):
    """A file could not be read; the message already names it."""


def main(argv: Sequence[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):
        # Message text may hold characters the output encoding lacks (or lone surrogates
        # from JSON escapes): escape them rather than fail mid-report.
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    if (sys.argv[1:] if argv is None else list(argv))[:1] == ["--version"]:
        print(version_line("vpp"))  # before the parser: building it loads the chat command
        return OK
    args = _parser().parse_args(argv)
    return guard_output("vpp", lambda: _run(args))


def _run(args: argparse.Namespace) -> int:
    from vpp import chat
    from vpp.snippets import header_snippet
    from vpp.versions import DEFAULT_VERSION

    given: Version | None = args.version
    version: Version = given or DEFAULT_VERSION
    try:
        if args.command == "check":
            return _check(
                args.transcripts,
                given,
                args.format,
                not args.lenient,
                args.quiet,
                args.from_start,
            )
        if args.command == "parse":
            return _parse(args.message, version, args.json)
        if args.command == "repair":
            return _repair(args.transcript, given, not args.lenient, args.from_start)
        if args.command == "chat":
            args.version = version
            return chat.run(args)
        print(header_snippet(version), end="")
        return OK
    except _InputError as error:
        _say(f"vpp: error: {error}", file=sys.stderr)
        return USAGE


def _parser() -> argparse.ArgumentParser:
    from vpp import chat

    parser = ConventionalParser(prog="vpp", description="Viable Prompt Protocol tools.")
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=ConventionalParser
    )

    def add(name: str, help_text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.add_argument(
            "--version",
            type=_version_argument,
            default=None,
            metavar="{1.4,1.5}",
            help="VPP version (a leading 'v' is accepted). Default: check and repair take the"
            " version every footer of the transcript names, else 1.4; other commands 1.4",
        )
        return sub

    check = add("check", "Check transcripts and report violations per turn.")
    check.add_argument("transcripts", nargs="+", metavar="TRANSCRIPT", help="file, or - for stdin")
    check.add_argument("--format", choices=("text", "json"), default="text")
    check.add_argument("--lenient", action="store_true", help="tolerate cosmetic footer variants")
    _add_start_options(check)
    parse = add("parse", "Parse the command on line 1 of a user message.")
    parse.add_argument("message", metavar="MESSAGE", help="the message, or - for stdin")
    parse.add_argument("--json", action="store_true", help="print JSON")
    repair = add("repair", "Print the transcript with assistant turns repaired.")
    repair.add_argument("transcript", metavar="TRANSCRIPT", help="file, or - for stdin")
    repair.add_argument("--lenient", action="store_true", help="keep cosmetic footer variants")
    _add_start_options(repair)
    add("snippet", "Print the header snippet (system prompt) for a version.")
    chat.add_command(add)
    apply_conventions(parser)  # top-level --version is the tool's; a command's is VPP's
    return parser


def _add_start_options(command: argparse.ArgumentParser) -> None:
    start = command.add_mutually_exclusive_group()
    start.add_argument(
        "--from-start",
        dest="from_start",
        action="store_const",
        const=True,
        default=None,
        help="the transcript is a whole conversation: check its first reply against the"
        " starting state",
    )
    start.add_argument(
        "--excerpt",
        dest="from_start",
        action="store_const",
        const=False,
        help="the transcript is cut from a conversation: check it from the state its first"
        " footer shows. Default: a whole conversation when it shows its start (a system"
        " turn or the VPP header before the first exchange, a ChatGPT or Claude export),"
        " else an excerpt (in 1.5 a single exchange is a whole conversation)",
    )
    start.add_argument(
        "--after",
        dest="from_start",
        metavar="FOOTER",
        help="the transcript continues a conversation whose last reply ended with FOOTER"
        " (e.g. '[Version=v1.5 | Tag=q_2 | Sources=none | Assumptions=0 | Cycle=2/3 |"
        " Locus=default]'): check it from the state that reply left",
    )


def _version_argument(text: str) -> Version:
    from vpp.versions import check_version

    try:
        return check_version(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


MAX_INPUT_BYTES = 64 * 1024 * 1024  # a transcript larger than this is not one


def _read_raw(path: str) -> str:
    """The file's text with its line ends as written (no newline translation). Only a
    regular file (or stdin) of at most MAX_INPUT_BYTES is read: a device or FIFO given
    by mistake never fills memory or blocks."""
    try:
        if path == "-" and getattr(sys.stdin, "buffer", None) is None:  # a text-only stdin
            text = sys.stdin.read(MAX_INPUT_BYTES + 1)
            if len(text) > MAX_INPUT_BYTES:
                raise _InputError(f"{path}: larger than {MAX_INPUT_BYTES >> 20} MiB; not read")
            return text
        if path == "-":
            data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
        else:
            with open(path, "rb", opener=_regular_file_opener) as handle:
                data = handle.read(MAX_INPUT_BYTES + 1)
        if len(data) > MAX_INPUT_BYTES:
            raise _InputError(f"{path}: larger than {MAX_INPUT_BYTES >> 20} MiB; not read")
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:  # where, as the other tools say it: path:line:col
        before = error.object[: error.start]
        line = before.count(b"\n") + 1
        column = error.start - (before.rfind(b"\n") + 1) + 1
        raise _InputError(
            f"{path}:{line}:{column}: not UTF-8 (byte 0x{error.object[error.start]:02x}); "
            "save the transcript as UTF-8"
        ) from None
    except OSError as error:
        reason = getattr(error, "strerror", None) or str(error)
        raise _InputError(f"{path}: cannot read: {reason}") from None


def _regular_file_opener(path: str, flags: int) -> int:
    """Open without blocking (a FIFO with no writer would wait forever), then refuse
    anything but a regular file."""
    descriptor = os.open(path, flags | os.O_NONBLOCK)
    mode = os.fstat(descriptor).st_mode
    if not stat.S_ISREG(mode):
        os.close(descriptor)
        code = errno.EISDIR if stat.S_ISDIR(mode) else errno.EINVAL
        raise OSError(code, os.strerror(code) if stat.S_ISDIR(mode) else "not a regular file")
    os.set_blocking(descriptor, True)
    return descriptor


def _read(path: str) -> str:
    return _read_raw(path).replace("\r\n", "\n")


# Where a transcript starts: True from the protocol's start, False an excerpt to infer,
# None decided from the file, a footer line: after the reply that ended with it (--after).
Start = bool | str | None


def _load(
    path: str, version: Version | None, strict: bool, repair: bool, from_start: Start
) -> TranscriptResult:
    return _validate(path, _read(path), version, strict, repair, from_start)


def _validate(
    path: str,
    text: str,
    version: Version | None,
    strict: bool,
    repair: bool,
    from_start: Start,
) -> TranscriptResult:
    """Check a transcript; without a ``version``, the one its footers name (else 1.4)."""
    from vpp.audit import footers_version, validate_transcript
    from vpp.transcript import TranscriptError, read_transcript
    from vpp.versions import DEFAULT_VERSION

    try:
        transcript = read_transcript(text)
        version = version or footers_version(transcript) or DEFAULT_VERSION
        if isinstance(from_start, str):
            return validate_transcript(
                transcript,
                version,
                strict=strict,
                repair=repair,
                state=_state_after(from_start, version),
                from_start=True,
            )
        return validate_transcript(
            transcript, version, strict=strict, repair=repair, from_start=from_start
        )
    except TranscriptError as error:
        raise _InputError(f"{path}:{error.line}: {error.args[0].split(': ', 1)[1]}") from None


def _state_after(footer_line: str, version: Version) -> ConversationState:
    """The state a reply ending with `footer_line` leaves (`--after`)."""
    from vpp.footer import parse_footer
    from vpp.start import state_shown
    from vpp.state import initial_state

    try:
        footer = parse_footer(footer_line, version)
    except ValueError as error:
        raise _InputError(f"--after: {error}") from None
    state = state_shown(footer, initial_state(version))
    if state is None:
        raise _InputError("--after: the footer needs a Tag=<tag>_<n> field to start from")
    return state


def _check(
    paths: Sequence[str],
    version: Version | None,
    output: str,
    strict: bool,
    quiet: bool = False,
    from_start: Start = None,
) -> int:
    status = OK
    documents: list[dict[str, Any]] = []
    for path in paths:
        try:
            result = _load(path, version, strict, False, from_start)
        except _InputError as error:
            _say(f"vpp: error: {error}", file=sys.stderr)
            status = USAGE
            documents.append({"path": path, "ok": False, "error": str(error)})
            continue
        if not result.ok and status == OK:
            status = VIOLATIONS
        if output == "json":
            documents.append({"path": path, **result.as_dict()})
        else:
            _print_check(path, result.final_state.version, result, quiet)
    if output == "json":
        # Exactly one JSON document on stdout: for one file the issue's
        # {"ok", "turns"}; for several, {"ok", "files": [{"path", "ok", "turns"}, ...]}.
        if len(paths) == 1:
            if "turns" in documents[0]:
                print(json.dumps({"ok": documents[0]["ok"], "turns": documents[0]["turns"]}))
        else:
            ok = all(document["ok"] for document in documents)
            print(json.dumps({"ok": ok, "files": documents}))
    return status


def _say(text: str, file: TextIO | None = None) -> None:
    """print() for the user: a transcript's controls (a footer value setting the window
    title) and hidden characters are shown escaped, never acted on; JSON is data, unchanged."""
    print(neutralise(text), file=file)


def _print_check(path: str, version: Version, result: TranscriptResult, quiet: bool) -> None:
    from vpp.audit import SETUP

    for turn in result.turns:
        for note in turn.notes:
            # A user turn's notes are 1.5 command errors the reply answered correctly.
            command_note = turn.role == "user" and note.code != SETUP
            answered = " (answered with the recovery body)" if command_note else ""
            _say(
                f"{path}:{note.line}: turn {turn.index} ({turn.role}): "
                f"note: {note.code}: {note.message}{answered}"
            )
        for violation in turn.violations:
            _say(
                f"{path}:{violation.line}: turn {turn.index} ({turn.role}): "
                f"{violation.code}: {violation.message}"
            )
    bad = [turn for turn in result.turns if not turn.ok]
    if quiet:  # -q: the violations only
        return
    if not bad:
        _say(f"{path}: compliant with VPP {version} ({len(result.turns)} turns checked)")
    else:
        count = sum(len(turn.violations) for turn in bad)
        _say(f"{path}: {count} violation(s) in {len(bad)} of {len(result.turns)} turns")


def _parse(message: str, version: Version, as_json: bool) -> int:
    from vpp.grammar import parse_command

    command = parse_command(_read(message) if message == "-" else message, version)
    if as_json:
        print(json.dumps(_command_json(command)))
    else:
        _print_command(command)
    return OK if command.ok else VIOLATIONS


def _command_json(command: Command) -> dict[str, Any]:
    return {
        "ok": command.ok,
        "tag": command.tag,
        "modifiers": list(command.modifiers),
        "destination": command.destination,
        "assistant_tag": command.reply_tag,
        "errors": [{"code": p.code, "message": p.message} for p in command.errors],
    }


def _print_command(command: Command) -> None:
    from vpp.grammar import recovery_body

    _say(f"command: {command.first_line}")
    _say(f"tag: {command.tag or '-'}")
    _say(f"modifiers: {' '.join('--' + m for m in command.modifiers) or '-'}")
    _say(f"destination: {command.destination or '-'}")
    for problem in command.errors:
        _say(f"error: column {problem.column}: {problem.code}: {problem.message}")
    if command.ok:
        _say("reply: " + " or ".join(f"<{tag}>" for tag in command.reply_tags))
    else:
        _say(f"reply: <c> with recovery body: {recovery_body(command)}")


def _repair(path: str, version: Version | None, strict: bool, from_start: Start) -> int:
    from vpp.transcript import write_transcript

    raw = _read_raw(path)
    result = _validate(path, raw.replace("\r\n", "\n"), version, strict, True, from_start)
    assert result.repaired is not None
    output = write_transcript(result.repaired)
    try:
        output.encode(getattr(sys.stdout, "encoding", None) or "utf-8")
    except UnicodeEncodeError:  # JSON can say it in \u escapes instead
        output = write_transcript(result.repaired, ascii_only=True)
    if "\r\n" in raw:  # the input's format includes its line ends
        output = output.replace("\n", "\r\n")
    sys.stdout.write(output)
    sys.stdout.flush()
    fixed = sum(1 for t in result.turns if t.role == "assistant" and t.exchange and not t.ok)
    print(f"vpp: repaired {fixed} assistant turn(s)", file=sys.stderr)
    return OK


if __name__ == "__main__":
    sys.exit(main())

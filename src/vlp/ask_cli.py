"""`vlp ask`: a model's answer as one VLP message on stdout (NDJSON), optionally appended
to a thread file together with the question it answers.

Exit codes: 0 a valid answer / 1 no valid answer after the re-ask (the attempts and their
problems on stderr) / 2 usage error (no provider configured, bad thread file) / 3 the
provider failed.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

import orjson

from cliconventions.terminal import neutralise as visible
from vlp.ask_options import ASKABLE_TYPES, MAX_REASKS
from vlp.errors import VLPError
from vlp.ndjson import NdjsonWriter, read_records

if TYPE_CHECKING:
    from pathlib import Path

    from vlp.ask import Answer

EXIT_OK, EXIT_INVALID, EXIT_USAGE, EXIT_PROVIDER = 0, 1, 2, 3
NEEDS_REFERENCE = ("response", "correction", "evidence")


def add_command(commands: Any) -> None:
    ask = commands.add_parser(
        "ask", help="ask a model; its answer comes back as a valid VLP message (NDJSON)"
    )
    ask.add_argument("question")
    ask.add_argument("--type", choices=ASKABLE_TYPES, default="claim")
    ask.add_argument(
        "--provider", metavar="NAME", help="anthropic, openai, local or scripted:RULES.yaml"
    )
    ask.add_argument(
        "--model", metavar="MODEL", help="alias (sonnet, haiku), PROVIDER:MODEL or a model id"
    )
    ask.add_argument("--sender", help="the answer's sender (default: the model id)")
    ask.add_argument("--asker", default="user", help="sender of the question in --thread")
    ask.add_argument(
        "--thread",
        metavar="FILE",
        help="append the question (a query) and the answer (referring to it) to this NDJSON file",
    )
    ask.add_argument("--refers-to", action="append", metavar="ID")
    ask.add_argument("--session-id")
    ask.add_argument("--max-tokens", type=int, default=600)
    ask.add_argument("--reasks", type=int, default=MAX_REASKS, help="re-asks on problems")
    ask.add_argument("--verbose", action="store_true", help="every attempt on stderr")
    ask.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import asyncio
    from pathlib import Path  # here: `vlp validate` builds this parser and needs no pathlib

    from openprose.providers import ProviderConfigError, ProviderError
    from openprose.providers.selection import open_model
    from vlp.ask import ask_async  # here: the parser of every command is built without it
    from vlp.message import make_message

    if args.reasks < 0 or args.max_tokens < 1:
        return _usage("--reasks must be >= 0 and --max-tokens >= 1")
    refers_to: list[str] = list(args.refers_to or [])
    context: list[dict[str, Any]] = []
    query: dict[str, Any] | None = None
    if args.thread:
        thread_messages = _thread(Path(args.thread))
        if thread_messages is None:
            return EXIT_USAGE
        known = {m.get("id"): m for m in thread_messages}
        missing = [ref for ref in refers_to if ref not in known]
        if missing:
            return _usage(f"--refers-to {missing[0]}: no such message in {args.thread}")
        context = [known[ref] for ref in refers_to]
        query = make_message(
            "query", sender=args.asker, content=args.question, session_id=args.session_id
        )
        refers_to.append(query["id"])
    elif args.type in NEEDS_REFERENCE and not refers_to:
        return _usage(f"a {args.type} must refer to a message: give --refers-to ID or --thread")
    try:
        choice = open_model(args.provider, args.model)
    except ProviderConfigError as error:
        return _usage(str(error))

    async def asking() -> Answer:
        try:
            return await ask_async(
                choice.provider,
                args.question,
                type=args.type,
                model=choice.model,
                sender=args.sender,
                refers_to=(refers_to[0] if len(refers_to) == 1 else refers_to) or None,
                session_id=args.session_id,
                context=context,
                max_reasks=args.reasks,
                max_tokens=args.max_tokens,
            )
        finally:
            await choice.provider.aclose()

    try:
        answer = asyncio.run(asking())
    except ProviderError as error:
        sys.stderr.write(visible(f"vlp ask: {_named(choice.provider_name, str(error))}") + "\n")
        return EXIT_PROVIDER
    _report_attempts(answer, verbose=args.verbose)
    if answer.message is None:
        return EXIT_INVALID
    if args.thread and query is not None:
        try:
            with NdjsonWriter(args.thread) as writer:
                writer.write(query)
                writer.write(answer.message)
        except (OSError, VLPError) as error:
            sys.stdout.buffer.write(orjson.dumps(answer.message) + b"\n")  # nothing is lost
            return _usage(f"cannot append to {args.thread}: {error}")
    sys.stdout.flush()
    sys.stdout.buffer.write(orjson.dumps(answer.message) + b"\n")
    sys.stdout.buffer.flush()
    return EXIT_OK


def _thread(path: Path) -> list[dict[str, Any]] | None:
    """The valid messages of an existing thread file ([] when it does not exist yet)."""
    if not path.exists():
        return []
    try:
        records = list(read_records(path))
    except OSError as error:
        _usage(f"cannot read {path}: {error.strerror or error}")
        return None
    return [r.message for r in records if r.message is not None and not r.problems]


def _report_attempts(answer: Answer, *, verbose: bool) -> None:
    for number, attempt in enumerate(answer.attempts, 1):
        if not attempt.problems and not verbose:
            continue
        verdict = "accepted" if not attempt.problems else "rejected"
        sys.stderr.write(f"vlp ask: attempt {number} {verdict}\n")
        for problem in attempt.problems:
            sys.stderr.write(visible(f"  {problem.code} {problem.message}") + "\n")
        if attempt.problems or verbose:
            reply = visible(attempt.text.strip()).replace("\n", "\n  ")  # a model's words
            sys.stderr.write(f"  reply: {reply}\n")
    if not answer.ok:
        sys.stderr.write(f"vlp ask: no valid VLP message after {len(answer.attempts)} attempt(s)\n")


def _usage(message: str) -> int:
    sys.stderr.write(visible(f"vlp ask: {message}") + "\n")
    return EXIT_USAGE


def _named(provider: str, message: str) -> str:
    """The provider's error, naming the provider once (its own messages start with it)."""
    return message if message.startswith(provider) else f"{provider}: {message}"

"""`vpp chat`: a VPP conversation with a model, from a terminal or from standard input.

At a terminal each message ends with an empty line (Ctrl-D quits). Otherwise standard input
is read as it arrives: a message starts at each line beginning with a VPP command (`!<`),
text before the first command is a message of its own (it gets the protocol's recovery
reply), and the chat ends at end of input.

stdout gets each reply as kept (footer included), or with `--json` one JSON object per turn;
stderr gets a status line per turn (state, outcome, violations of rejected attempts).
`--transcript FILE` writes the conversation as it goes (JSONL, or a JSON array for `.json`),
which `vpp check --version V FILE` accepts.

Exit codes: 0 every reply compliant / 1 some reply still violating after the re-asks /
2 usage error / 3 the provider failed (the turns so far are in the transcript) / 130 Ctrl-C /
143 SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from cliconventions import interrupt_status
from cliconventions.terminal import neutralise, printable
from vpp.session import DEFAULT_MAX_REASKS, Session, Turn, turn_records

OK, VIOLATIONS, USAGE, PROVIDER_FAILED = 0, 1, 2, 3


def add_command(add: Callable[[str, str], argparse.ArgumentParser]) -> None:
    chat = add("chat", "Talk to a model held to VPP (messages from stdin when piped).")
    chat.add_argument("--provider", metavar="NAME", help="anthropic, openai, local, scripted:FILE")
    chat.add_argument(
        "--model", metavar="MODEL", help="alias (sonnet, haiku), PROVIDER:MODEL or a model id"
    )
    chat.add_argument("--transcript", metavar="FILE", help="save the conversation (JSONL/JSON)")
    chat.add_argument("--max-reasks", type=int, default=DEFAULT_MAX_REASKS, metavar="N")
    chat.add_argument("--max-tokens", type=int, default=512, metavar="N")
    chat.add_argument("--json", action="store_true", help="one JSON object per turn on stdout")


def messages_from_lines(lines: Iterable[str]) -> Iterator[str]:
    """User messages from a stream of lines: each starts at a line beginning with `!<`."""
    block: list[str] = []
    for line in lines:
        line = line.rstrip("\r\n")
        if line.startswith("!<") and any(part.strip() for part in block):
            yield _joined(block)
            block = []
        block.append(line)
    if any(part.strip() for part in block):
        yield _joined(block)


def _joined(block: list[str]) -> str:
    while block and not block[-1].strip():
        block.pop()
    while block and not block[0].strip():
        block.pop(0)
    return "\n".join(block)


def _terminal_messages() -> Iterator[str]:
    print("VPP chat: type a message (line 1 a command, e.g. !<g>); an empty line sends it,")
    print("Ctrl-D quits.", flush=True)
    while True:
        lines: list[str] = []
        try:
            while True:
                line = input("you> " if not lines else "...> ")
                if not line.strip() and lines:
                    break
                if line.strip() or lines:
                    lines.append(line)
        except EOFError:
            if lines:
                yield "\n".join(lines)
            return
        yield "\n".join(lines)


class _TranscriptFile:
    """Writes the conversation as it goes: JSONL appended a record at a time (a crash
    loses nothing already said), or a JSON array rewritten whole for a `.json` file."""

    def __init__(self, path: Path, header: str) -> None:
        self.path = path
        self.records: list[dict[str, Any]] = []
        self.path.write_text("", encoding="utf-8")
        self._add([{"role": "system", "content": header}])

    def add(self, turn: Turn) -> None:
        self._add(turn_records(turn))

    def _add(self, records: list[dict[str, Any]]) -> None:
        self.records += records
        if self.path.suffix == ".json":
            self.path.write_text(json.dumps(self.records, indent=2) + "\n", encoding="utf-8")
            return
        with self.path.open("a", encoding="utf-8") as handle:
            handle.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def run(args: argparse.Namespace) -> int:
    from openprose.providers import ProviderConfigError, ProviderError
    from openprose.providers.selection import open_model

    if args.max_reasks < 0 or args.max_tokens < 1:
        return _usage("--max-reasks must be >= 0 and --max-tokens >= 1")
    transcript_path = Path(args.transcript) if args.transcript else None
    if transcript_path is not None:
        if transcript_path.exists() and transcript_path.stat().st_size:
            return _usage(f"--transcript {transcript_path}: exists; give a new file")
        if not transcript_path.parent.is_dir():
            return _usage(f"--transcript {transcript_path}: no such folder")
    try:
        choice = open_model(args.provider, args.model)
    except ProviderConfigError as error:
        return _usage(str(error))
    session = Session(
        choice.provider,
        args.version,
        model=choice.model,
        max_reasks=args.max_reasks,
        max_tokens=args.max_tokens,
    )
    record = _TranscriptFile(transcript_path, session.header) if transcript_path else None
    interactive = sys.stdin.isatty()
    messages = _terminal_messages() if interactive else messages_from_lines(sys.stdin)
    status = OK
    try:
        for message in messages:
            turn = session.send(message)
            if record is not None:
                record.add(turn)
            _show(turn, as_json=args.json)
            if not turn.ok:
                status = VIOLATIONS
    except ProviderError as error:
        message = str(error)  # the provider's own messages start with its name
        if not message.startswith(choice.provider_name):
            message = f"{choice.provider_name}: {message}"
        print(f"vpp chat: {neutralise(message)}", file=sys.stderr)
        status = PROVIDER_FAILED
    except KeyboardInterrupt as interrupt:  # Ctrl-C (130) or SIGTERM (143)
        status = interrupt_status(interrupt)
    finally:
        session.close()
    return status


def _show(turn: Turn, *, as_json: bool) -> None:
    if as_json:
        print(json.dumps(turn.as_dict(), ensure_ascii=False), flush=True)
    else:
        print(printable(turn.reply) + "\n", flush=True)  # a model's words: escaped on a tty
    state = turn.state
    counts = state.to_dict()["tag_counts"]
    tags = " ".join(f"{tag}={count}" for tag, count in counts.items() if count)
    rejected = [v.code for attempt in turn.attempts for v in attempt.violations]
    detail = f"; violations seen: {', '.join(dict.fromkeys(rejected))}" if rejected else ""
    left = f"; STILL VIOLATING: {', '.join(v.code for v in turn.violations)}" if not turn.ok else ""
    print(
        f"[vpp: {turn.outcome} after {len(turn.attempts)} attempt(s){detail}{left} | "
        f"cycle {state.cycle}/3, locus {state.locus}, tags {tags}]",
        file=sys.stderr,
        flush=True,
    )


def _usage(message: str) -> int:
    print(f"vpp chat: {neutralise(message)}", file=sys.stderr)
    return USAGE

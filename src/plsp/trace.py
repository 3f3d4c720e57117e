"""NDJSON traces: one record per cycle, and their offline check."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Self

from plsp.diagnostics import ParseError, Violation
from plsp.files import bounded_int, not_utf8, read_file, read_stdin
from plsp.instr import parse_instr
from plsp.middleware import CycleRecord
from plsp.syntax import StateBlock, Value, parse
from plsp.transcript import check_text, looks_like_text_transcript
from plsp.verify import verify

__all__ = ["CycleCheck", "TraceError", "TraceWriter", "check_trace", "read_trace"]


class TraceWriter:
    """Appends one JSON line per cycle and flushes it, so a crash loses nothing."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._file: IO[str] = self.path.open("w", encoding="utf-8")

    def write(self, record: CycleRecord) -> None:
        # default=repr: a custom action may return anything; the trace must still be written
        self._file.write(json.dumps(record.to_json(), ensure_ascii=False, default=repr) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class TraceError(ValueError):
    """A trace file that is not a PLSP trace."""


def _read_text(path: str | Path) -> str:
    try:
        return (read_stdin() if str(path) == "-" else read_file(path)).decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise TraceError(not_utf8(path, error)) from None


def read_trace(path: str | Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, record) for every non-empty line."""
    return _records(_read_text(path), path)


def _records(text: str, path: str | Path) -> list[tuple[int, dict[str, Any]]]:
    records = []
    for number, line_text in enumerate(text.split("\n"), start=1):
        if not line_text.strip():
            continue
        try:
            record = json.loads(line_text, parse_int=bounded_int)
        except json.JSONDecodeError as error:
            raise TraceError(f"{path}:{number}: not JSON: {error.msg}") from None
        except ValueError as error:  # a number too long to read
            raise TraceError(f"{path}:{number}: {error}") from None
        except RecursionError:
            raise TraceError(f"{path}:{number}: nested too deeply to read") from None
        if not isinstance(record, dict):
            raise TraceError(f"{path}:{number}: not a JSON object (one cycle a line)")
        missing = {"instr", "reply"} - set(record)
        if missing:
            raise TraceError(
                f"{path}:{number}: missing {sorted(missing)}: a trace line holds at least the"
                " cycle's instr and reply (plsp run also writes cycle, previous, accepted,"
                " next, actions and logs, checked when present)"
            )
        wrong = [
            key
            for key, types in _FIELD_TYPES.items()
            if key in record and not isinstance(record[key], types)
        ]
        if wrong:
            raise TraceError(
                f"{path}:{number}: wrong type for {wrong} "
                f"(instr, previous, reply: strings; accepted, strict: booleans; "
                f"next: string or null)"
            )
        records.append((number, record))
    return records


_FIELD_TYPES: dict[str, type | tuple[type, ...]] = {
    "instr": str,
    "previous": str,
    "reply": str,
    "accepted": bool,
    "strict": bool,
    "next": (str, type(None)),
}


@dataclass(frozen=True)
class CycleCheck:
    """The offline verdict on one trace line."""

    line: int
    cycle: object
    problems: tuple[str, ...]
    violations: tuple[Violation, ...]

    @property
    def ok(self) -> bool:
        return not self.problems and not any(v.blocking for v in self.violations)


def _check(
    line: int, record: dict[str, Any], number: int, expected_previous: str | None
) -> tuple[CycleCheck, str | None]:
    """The verdict on one trace line and the state it leaves accepted (None: rejected).
    What a line leaves out (a tool's minimal trace: instr and reply) is not checked: the
    previous state is then the last accepted one, `S{}S` at first."""
    problems: list[str] = []
    record = {"cycle": number, **record}
    if "previous" not in record:
        record["previous"] = expected_previous or "S{}S"
    if type(record["cycle"]) is not int or record["cycle"] != number:
        problems.append(
            f"cycle {json.dumps(record['cycle'])} where cycle {number} was "
            "expected (one line per cycle, counting from 1)"
        )
    try:
        instruction = parse_instr(str(record["instr"]))
        previous = parse(str(record["previous"]))
    except ParseError as error:
        problems.append(f"unreadable INSTR/previous: {error}")
        return CycleCheck(line, record["cycle"], tuple(problems), ()), None
    if expected_previous is not None and previous.dumps() != expected_previous:
        problems.append(
            f"previous state {previous.dumps()} does not continue the last "
            f"accepted state {expected_previous}"
        )
    verdict = verify(
        previous, instruction, str(record["reply"]), strict=bool(record.get("strict", True))
    )
    if "accepted" in record and bool(record["accepted"]) != verdict.acceptable:
        problems.append(
            f"recorded accepted={record['accepted']} but the reply "
            f"{'passes' if verdict.acceptable else 'fails'} verification"
        )
    recorded_next = record.get("next")
    actual_next = verdict.block.dumps() if verdict.block else None
    if "next" in record and recorded_next != actual_next:
        problems.append(
            f"recorded next {recorded_next} differs from the parsed reply {actual_next}"
        )
    accepted = verdict.block if verdict.acceptable else None
    if "actions" in record or "violations" in record:
        problems.extend(_action_problems(record, accepted))
    if "logs" in record:
        problems.extend(_log_problems(record, accepted))
    check = CycleCheck(line, record["cycle"], tuple(problems), verdict.violations)
    if "accepted" in record:  # the chain follows what the middleware recorded
        kept = record["accepted"] and isinstance(record.get("next"), str)
        return check, record["next"] if kept else None
    return check, accepted.dumps() if accepted is not None else None


_UNKNOWN_ACTION = re.compile(r"!([A-Za-z_][A-Za-z0-9_]*) is not registered")


def _plain(block: StateBlock, values: tuple[Value, ...]) -> list[Any] | None:
    """Resolved values as the trace writes them (JSON round-tripped); None if a
    reference does not resolve."""
    try:
        resolved = [block.resolve(value).python() for value in values]
    except KeyError:
        return None
    plain: list[Any] = json.loads(json.dumps(resolved))
    return plain


def _action_problems(record: dict[str, Any], block: StateBlock | None) -> list[str]:
    """The actions a cycle ran must be the accepted block's, in order, minus the unknown
    ones (reported, never run); a rejected cycle runs none."""
    actions = record.get("actions", [])
    if not isinstance(actions, list) or not all(
        isinstance(a, dict) and isinstance(a.get("name"), str) for a in actions
    ):
        return ["'actions' must be a list of objects with a name"]
    violations = record.get("violations", [])
    if not isinstance(violations, list):
        return ["'violations' must be a list"]
    ran = [(a["name"], a.get("args")) for a in actions]
    if block is None:
        return [f"a rejected cycle ran actions {[name for name, _ in ran]}"] if ran else []
    unknown = {
        match.group(1)
        for v in violations
        if isinstance(v, dict)
        and v.get("kind") == "unknown_action"
        and (match := _UNKNOWN_ACTION.match(str(v.get("message", ""))))
    }
    expected = [
        (action.name, _plain(block, action.params))
        for action in block.actions
        if action.name not in unknown
    ]
    if ran != expected:
        return [
            (
                f"recorded actions {ran} are not the block's actions {expected} "
                "(unknown actions are never run)"
            )
        ]
    return []


def _log_problems(record: dict[str, Any], block: StateBlock | None) -> list[str]:
    """The logs a cycle routed must be the accepted block's `>` commands, resolved, in
    order; a rejected cycle routes none."""
    logs = record.get("logs", [])
    expected = [] if block is None else [_plain(block, log.values) for log in block.logs]
    if logs != expected:
        return [f"recorded logs {logs} are not the block's logs {expected}"]
    return []


def _why_not_a_transcript(text: str) -> str:
    """What the text has instead of `INSTR:` lines, when it is something near."""
    for number, line in enumerate(text.split("\n"), 1):
        if line.lstrip().lower().startswith("instr:"):
            return f"; line {number} starts with {line.lstrip()[:6]!r}: the prefix is 'INSTR:'"
    if "S{" in text:
        return (
            "; it holds state blocks without the INSTR: lines they answer: put each cycle's"
            " INSTR: line before its blocks"
        )
    return ""


def check_trace(path: str | Path) -> list[CycleCheck]:
    """Re-verify every cycle: its number, its reply against its INSTR and previous state,
    and the chain of states from one cycle to the next. A plain-text transcript (lines
    opening with `INSTR:`, see `plsp.transcript`) is verified cycle by cycle too."""
    text = _read_text(path)
    if not text.lstrip().startswith("{") and looks_like_text_transcript(text):
        return [CycleCheck(*verdict) for verdict in check_text(text)]
    filled = [n for n, line in enumerate(text.split("\n"), 1) if line.strip()]
    if not filled:  # like an empty VPP transcript: no cycle is no evidence
        raise TraceError(f"{path}:1: no cycles: the trace is empty")
    if not text.lstrip().startswith(("{", "[")):
        raise TraceError(
            f"{path}:{filled[0]}: neither an NDJSON trace (one JSON object a line) nor a"
            " text transcript (each cycle opens with a line starting 'INSTR:')"
            + _why_not_a_transcript(text)
        )
    checks: list[CycleCheck] = []
    state: str | None = None
    for number, (line, record) in enumerate(_records(text, path), start=1):
        check, accepted = _check(line, record, number, state)
        checks.append(check)
        if accepted is not None:
            state = accepted
        elif state is None and isinstance(record.get("previous"), str):
            state = record["previous"]
    return checks

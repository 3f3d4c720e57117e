"""The runs of a project as every interface shows them (`prose runs`, `prose show`, `prose ui`,
the Python API): a run's status, the command that continues it, its row in a listing."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["asks_again", "read_meta", "resume_command", "run_row", "status_of"]


def status_of(meta: dict[str, Any], run_dir: Path | None = None) -> str:
    """`running` only while the recorded process is alive. A dead one was `crashed` when
    it left a fault report (`openprose.vm.crashes`; looked for when `run_dir` is given),
    else `interrupted` (killed, or stopped with its batch; a Ctrl-C'd `prose run` records
    `interrupted` itself)."""
    status = str(meta.get("status", "unknown"))
    if status == "running" and not _alive(meta.get("pid"), meta.get("pid_started")):
        from openprose.vm.crashes import crash_report

        crashed = run_dir is not None and crash_report(run_dir, meta) is not None
        return "crashed" if crashed else "interrupted"
    return status


def _alive(pid: object, started: object) -> bool:
    """Is the run's process still there? A process that reused its pid (it started at
    another time) is not it."""
    from openprose.record.runstore import process_started
    from openprose.statefiles import valid_pid

    pid = valid_pid(pid)
    if pid is None:  # none recorded, or damage (10**30 would overflow os.kill)
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # OverflowError: no pid is that large
        return False
    except PermissionError:
        pass
    return started is None or process_started(pid) in (None, started)


def resume_command(run_id: str, status: str, error: object, run_dir: Path) -> str | None:
    """The command that continues a run, for every run a resume can take further: one
    interrupted, crashed or aborted; one stopped at a budget (with the flag that lifts it);
    one waiting for an approval or an answer (after it); one that failed where a resume would ask a model
    again (not a `throw`, which every replayed answer leads back to). Else None."""
    resume = f"prose resume {run_id}"
    if status in ("interrupted", "crashed", "aborted"):
        return resume
    if status == "failed":
        return resume if _asks_again(run_dir) else None
    if status == "stopped":
        said = error if isinstance(error, str) else ""
        found = re.search(r"prose resume \S+ (--max-[a-z]+) N", said)  # runner's `_stopped`
        return f"{resume} {found.group(1)} N" if found else resume
    if status == "waiting" and isinstance(error, str) and "prose answer" in error:
        return f"prose answer {run_id} [ID] TEXT, then {resume}"  # an `ask` waits
    if status == "waiting":
        return f"prose approve {run_id} (or prose deny {run_id}), then {resume}"
    return None


def _asks_again(run_dir: Path) -> bool:
    """`prose run`'s test: would a resume send a model call again? A run folder that is not
    there (a batch's run kept in its run log) or cannot be read is not judged here."""
    if not run_dir.is_dir():
        return False
    try:
        return asks_again(run_dir)
    except OSError:
        return True  # `prose resume` says what it cannot read


def read_meta(folder: Path) -> object:
    """A run folder's run.json as read (None when it cannot be read or decoded)."""
    import orjson

    from openprose.statefiles import read_state_file

    try:  # orjson: a nesting too deep for Python's json is a decode error, not a crash
        return orjson.loads(read_state_file(folder / "run.json"))
    except (OSError, orjson.JSONDecodeError):
        return None


def run_row(folder: Path, meta: object) -> dict[str, str]:
    """One run of the listing (`prose runs`, `prose ui`): id, status, program, start time,
    from the run's `read_meta`, and the command that continues it ("" when none does); a
    fork also names its parent run and the step it was forked at."""
    if isinstance(meta, dict):
        status = status_of(meta, folder)
    else:
        meta, status = {}, "damaged"  # run.json unreadable: `prose show` says why
    row = {
        "run_id": folder.name,
        "status": status,
        "program": _text(meta.get("program", "")),
        "started": _text(meta.get("started", "")),
        "resume": resume_command(folder.name, status, meta.get("error"), folder) or "",
    }
    parent = meta.get("forked_from")
    if isinstance(parent, dict):
        row.update(parent=_text(parent.get("run", "")), parent_step=_text(parent.get("step", "")))
    return row


def _text(value: object) -> str:
    """A run.json field shown in the listing: text as is, anything else (damage) shortened."""
    return value if isinstance(value, str) else repr(value)[:60]


def asks_again(run_dir: Path) -> bool:
    """Whether resuming the run would send a model call again — one that failed and was not
    handled, was cancelled, or was a judgment whose answers were unusable — and so could end
    otherwise. When every answer the run got is served from its journal, the program takes
    the same path to the same error: a `throw`, a fault of the program."""
    from openprose.record.codec import EventDamaged, decode
    from openprose.record.events import DecisionFailed, SessionCancelled, SessionFailed
    from openprose.record.journal import JOURNAL_FILE, read_journal
    from openprose.vm.runtime import Replay

    records = list(read_journal(run_dir / JOURNAL_FILE))
    try:
        served = Replay.from_events(records)
    except ValueError:
        return True  # a damaged journal: `prose resume` says what it cannot do
    for record in records:
        try:
            event = decode(record).event
        except EventDamaged:
            continue  # nothing a resume serves (`Replay` would have said)
        if (
            isinstance(event, SessionFailed | SessionCancelled | DecisionFailed)
            and event.step not in served.sessions
            and event.step not in served.failures
        ):
            return True
    return False

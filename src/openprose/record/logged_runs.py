"""A batch's run logs, the reading side: which runs they hold, and a run's normal folder
made from its records the first time anything asks for it (`openprose.record.runlog` writes them).

`.prose/batches/{id}/runs.ndjson` (and `runs.{k}.ndjson` of worker process k) hold one JSON
array a line:

    ["", "s", KEY, VALUE]       a run.json field the runs after it share (program, config,
                                launch, imports): written once per process
    [RUN, "m", "", FIELDS]      run.json fields of run RUN, merged in order
    [RUN, "j", "", EVENT]       one journal event, the object journal.jsonl would hold
    [RUN, "w", PATH, TEXT]      a file of the run folder written whole (a binding, outputs.json)
    [RUN, "a", PATH, TEXT]      text appended to a file (state.md)
    [RUN, "d", PATH, null]      a folder (an imported program's namespace)

`materialize` writes the folder (its audit trail translated from its journal, as
`AuditTrail.resume` would). `resolve_run` is `find_run` for commands that take a run id: it
finds a batch's logged runs too and materializes the one asked for, so `prose show`,
`prose resume`, `prose approve`/`deny` and `replay:RUN` work on them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from openprose.locks import LockHeld, try_lock
from openprose.record.audit import AUDIT_FILE, translate_lines
from openprose.record.journal import JOURNAL_FILE
from openprose.record.runstore import RUNS_DIR, AmbiguousRun, RunBusy, _dump_json, find_run
from openprose.statefiles import LOG_LIMIT, read_state_file

__all__ = [
    "BATCHES_DIR",
    "LOG_NAME",
    "LoggedRun",
    "log_files",
    "logged_run_ids",
    "logged_runs",
    "materialize",
    "read_log",
    "read_log_file",
    "resolve_run",
]

BATCHES_DIR = Path(".prose") / "batches"
LOG_NAME = "runs.ndjson"  # the batch process's; worker k writes runs.{k}.ndjson


@dataclass(slots=True)
class LoggedRun:
    run_id: str
    meta: dict[str, Any] = field(default_factory=dict)  # run.json as the log has it
    events: list[bytes] = field(default_factory=list)  # journal lines
    files: list[tuple[str, str, Any]] = field(default_factory=list)  # (op, path, text)

    @property
    def ended(self) -> bool:
        """The run wrote its end (any status but "running")."""
        return self.meta.get("status") not in (None, "running")

    def outputs(self) -> dict[str, Any]:
        text = next(
            (t for op, p, t in reversed(self.files) if op == "w" and p == "outputs.json"), None
        )
        data = orjson.loads(text) if text else {}
        return data if isinstance(data, dict) else {}


def _records(path: Path, only: str | None = None) -> Iterator[tuple[bytes, list[Any]]]:
    try:
        data = read_state_file(path, LOG_LIMIT)
    except FileNotFoundError:
        return
    start = None if only is None else orjson.dumps(only)[:-1]  # '"RUN' without its quote
    for line in data.split(b"\n")[:-1]:  # the last piece is empty or torn by a crash
        if start is not None and not (line.startswith(b"[" + start + b'"') or line[:4] == b'["",'):
            continue
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(record, list) and len(record) == 4:
            yield line, record


def log_files(batch_dir: Path) -> list[Path]:
    """A batch's run logs: its own process's `runs.ndjson`, and `runs.{k}.ndjson` of each
    worker process that ran some of its runs (each run is in one of them)."""
    return sorted(batch_dir.glob("runs*.ndjson"))


def read_log(batch_dir: Path, only: str | None = None) -> dict[str, LoggedRun]:
    """The runs a batch's logs hold (only run `only`, when given), each with run.json as
    recorded."""
    runs: dict[str, LoggedRun] = {}
    for path in log_files(batch_dir):
        runs.update(read_log_file(path, only))
    return runs


def read_log_file(path: Path, only: str | None = None) -> dict[str, LoggedRun]:
    """The runs one run-log file holds."""
    shared: dict[str, Any] = {}  # replaced, never changed: each run keeps the one it began with
    began_with: dict[str, dict[str, Any]] = {}
    runs: dict[str, LoggedRun] = {}
    for line, (run_id, op, where, payload) in _records(path, only):
        if op == "s":  # a resumed batch records them again (prose.toml may have changed)
            shared = {**shared, where: payload}
            continue
        run = runs.get(run_id)
        if run is None:
            run = runs[run_id] = LoggedRun(run_id)
        if op == "m":
            began_with.setdefault(run_id, shared)  # its first run.json fields
        if op == "m" and isinstance(payload, dict):
            run.meta.update(payload)
        elif op == "j":
            head = len(orjson.dumps((run_id, op, where))) - 1
            run.events.append(line[head + 1 : -1])  # the event's bytes as written
        else:
            run.files.append((op, where, payload))
    for run in runs.values():
        run.meta = {"run_id": run.run_id, **began_with.get(run.run_id, shared), **run.meta}
    return runs


def logged_run_ids(batch_dir: Path) -> list[str]:
    """Every run a batch's logs name (read from the start of each line only)."""
    seen: dict[str, None] = {}
    for path in log_files(batch_dir):
        for line in read_state_file(path, LOG_LIMIT).split(b"\n")[:-1]:
            if line.startswith(b'["') and not line.startswith(b'["",'):
                end = line.find(b'"', 2)
                if end > 2:
                    seen[line[2:end].decode("utf-8", "replace")] = None
    return list(seen)


def logged_runs(project_dir: Path) -> Iterator[LoggedRun]:
    """The runs batches keep in their logs and no folder holds yet."""
    batches = project_dir / BATCHES_DIR
    runs_dir = project_dir / RUNS_DIR
    for batch in sorted(batches.iterdir()) if batches.is_dir() else ():
        for run in read_log(batch).values():
            if not (runs_dir / run.run_id).exists():
                yield run


def materialize(batch_dir: Path, run_id: str, runs_dir: Path) -> Path | None:
    """Write run `run_id`'s folder under `runs_dir` from the batch's log (None when the log
    does not hold it): the folder a folder run would have left, audit trail included."""
    run = read_log(batch_dir, only=run_id).get(run_id)
    if run is None:
        return None
    final = runs_dir / run_id
    temp = runs_dir / f".{run_id}.{os.getpid()}.partial"
    shutil.rmtree(temp, ignore_errors=True)
    for folder in ("bindings", "agents", "imports"):
        (temp / folder).mkdir(parents=True, exist_ok=True)
    shutil.copyfile(batch_dir / "program.prose", temp / "program.prose")
    (temp / "run.json").write_bytes(_dump_json(run.meta))
    (temp / JOURNAL_FILE).write_bytes(b"".join(line + b"\n" for line in run.events))
    for op, where, text in run.files:
        target = temp / where
        if op == "d":
            for folder in ("bindings", "agents", "imports"):
                (target / folder).mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("a" if op == "a" else "w", encoding="utf-8") as handle:
            handle.write(str(text))
    config = run.meta.get("config") or {}
    if config.get("audit", True):
        program_name = Path(str(run.meta.get("program") or "")).name
        events = (orjson.loads(line) for line in run.events)
        with (temp / AUDIT_FILE).open("wb") as trail:
            trail.writelines(translate_lines(events, run_id, program_name))
    try:
        temp.rename(final)
    except OSError:  # made meanwhile by another process: theirs is the same run
        shutil.rmtree(temp, ignore_errors=True)
        if not final.is_dir():
            raise
    return final


# --- finding --------------------------------------------------------------------------------


def resolve_run(
    project_dir: Path, spec: str, *, marker: str = "run.json", exclude: Path | None = None
) -> Path | None:
    """`find_run`, and the runs batches keep in their logs: a run folder by path, exact id or
    unique id prefix. A logged run is materialized into `.prose/runs/` on the way (a run still
    in flight in a live batch is `RunBusy`, as a run another process writes)."""
    direct = Path(spec)
    if len(direct.parts) != 1 or not spec:
        return find_run(project_dir, spec, marker=marker, exclude=exclude)
    runs_dir = project_dir / RUNS_DIR
    logged = _logged_candidates(project_dir, spec, runs_dir)
    try:
        folder = find_run(project_dir, spec, marker=marker, exclude=exclude)
    except AmbiguousRun as ambiguous:
        if spec in logged:
            return _materialized(logged[spec], spec, runs_dir)
        raise AmbiguousRun(spec, sorted([*ambiguous.matches, *(runs_dir / r for r in logged)]))
    if folder is not None and (folder.name == spec or not logged):
        return folder
    if spec in logged:
        return _materialized(logged[spec], spec, runs_dir)
    matches = sorted([*([folder] if folder is not None else []), *(runs_dir / r for r in logged)])
    if len(matches) > 1:
        raise AmbiguousRun(spec, matches)
    if folder is not None:
        return folder
    if matches:
        return _materialized(logged[matches[0].name], matches[0].name, runs_dir)
    return None


def _logged_candidates(project_dir: Path, spec: str, runs_dir: Path) -> dict[str, Path]:
    """run id -> its batch folder, for logged runs not yet materialized whose id starts
    with `spec`."""
    batches = project_dir / BATCHES_DIR
    if not batches.is_dir():
        return {}
    found: dict[str, Path] = {}
    for batch in batches.iterdir():
        # A batch's run ids are "{batch id}-{line}": only batches they could match are read.
        if not (batch.name.startswith(spec) or spec.startswith(batch.name)):
            continue
        for run_id in logged_run_ids(batch):
            if run_id.startswith(spec) and not (runs_dir / run_id).exists():
                found[run_id] = batch
    return found


def _materialized(batch_dir: Path, run_id: str, runs_dir: Path) -> Path | None:
    final = runs_dir / run_id
    if final.exists():
        return final
    run = read_log(batch_dir, only=run_id).get(run_id)
    if run is None:
        return None
    if run.ended:  # it will not change: no need to stop its batch
        return materialize(batch_dir, run_id, runs_dir)
    try:
        lock = try_lock(batch_dir / "lock")
    except LockHeld as held:
        raise RunBusy(final, held.pid) from None
    with lock:
        return materialize(batch_dir, run_id, runs_dir)

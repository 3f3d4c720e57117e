"""A batch's run log, the writing side: the runs of a batch recorded as lines of one
group-committed file instead of a folder each (the format and the reading side, which makes
a run's folder when it is asked for: `openprose.record.logged_runs`).

Why: a run folder is five folders and a dozen files, 2-3 ms of file-system calls and thread
hand-offs per run; a batch of 10,000 one-session runs spent most of its time there. Here a
run costs a few appended lines, and every line pending at the end of an event-loop turn goes
out in one `write` (group commit) — before any row of the batch that depends on it, so a kill
-9 loses at most the events of that one turn (as a model call in flight at the kill, they are
made again on resume) and never a finished run.

`LoggedRunStore` is a `RunStore` whose writes go to the log: the same text, the same paths,
so the folder made from them is exactly the one a folder run would have left.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from cliconventions.terminal import one_line
from openprose.record.codec import encode, now
from openprose.record.events import Event
from openprose.record.journal import Journal
from openprose.record.runstore import RUNS_DIR, RunStore, Text, _dump_json, state_header

__all__ = ["LoggedJournal", "LoggedRunStore", "RunLog", "open_for_append"]

# run.json fields that are the same object for every run of a batch (see `run_program`).
SHARED_FIELDS = ("program", "imports", "import_pins", "config", "launch")
_WHERE_CACHE = 4096  # (op, path) pairs whose JSON is kept; a run's paths repeat in the next


def open_for_append(path: Path) -> int:
    """An append descriptor; a line torn by a crash is cut off first, so the next record
    starts on a line of its own and the torn one is never read."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    end = os.fstat(fd).st_size
    if end and os.pread(fd, 1, end - 1) != b"\n":
        cut = end
        while cut > 0:  # back to the last newline, a chunk at a time
            start = max(0, cut - (1 << 16))
            newline = os.pread(fd, cut - start, start).rfind(b"\n")
            if newline >= 0:
                cut = start + newline + 1
                break
            cut = start
        os.ftruncate(fd, cut)
    return fd


class RunLog:
    """The writer of a batch's run log. Records wait in memory until the end of the current
    event-loop turn, then go out together in one `write`; bytes queued with `write_after`
    (the batch's rows) are written just after the records pending with them — or, when
    `durable`, after those records are fsynced (one fsync in flight at a time).

    The first write that fails (a full disk, a quota, an I/O error) stops the log: it is kept
    in `error`, `on_error` is told (the batch stops sending), and nothing is written after it
    — a row never lands without the records of its run."""

    def __init__(self, path: Path, *, durable: bool = False) -> None:
        self.path = path
        self.durable = durable
        self._fd: int | None = open_for_append(path)
        self._pending: list[bytes] = []
        self._after: list[tuple[int, bytes]] = []
        self._unsynced_after: list[tuple[int, bytes]] = []
        self._scheduled = False
        self._syncer: asyncio.Task[None] | None = None
        self._shared: dict[str, Any] = {}
        self._where: dict[tuple[str, str], bytes] = {}
        self.writes = 0
        self.fsyncs = 0
        self.error: OSError | None = None
        self.on_error: Callable[[OSError], None] | None = None
        self.names: dict[int, str] = {}  # fd -> its file's path, for `write_after`'s errors
        # {project}/.prose/batches/{id}/runs.ndjson -> {project}/.prose/runs
        self.runs_dir = path.parent.parent.parent.parent / RUNS_DIR

    # --- records --------------------------------------------------------------------------

    def add(self, run_id: str, op: str, path: str, payload: bytes) -> None:
        self.record(orjson.dumps(run_id), op, path, payload)

    def record(self, run: bytes, op: str, path: str, payload: bytes) -> None:
        """`add` for a caller that keeps its run id's JSON (`run`): a run makes a dozen
        records, and the `"op","path",` part of each is the same for every run."""
        where = self._where.get((op, path))
        if where is None:
            where = orjson.dumps((op, path))[1:-1] + b","
            if len(self._where) < _WHERE_CACHE:
                self._where[(op, path)] = where
        # the pieces, joined once per write: a record's payload is copied once, not per `+`
        self._pending += (b"[", run, b",", where, payload, b"]\n")
        if not self._scheduled and self.error is None:
            self._schedule()

    def write_after(self, fd: int, data: bytes) -> None:
        """Write `data` to `fd` once every record added so far is written (and synced)."""
        if self.error is not None:
            return  # it could not follow its run's records
        self._after.append((fd, data))
        if not self._scheduled:
            self._schedule()

    def shared_meta(self, meta: dict[str, Any]) -> dict[str, Any]:
        """`meta` without the fields every run shares; each is recorded once, the first
        time it is seen (by identity: `run_program` hands every run the same objects).
        `meta` is changed: callers give a dict of their own."""
        own = meta
        for key in SHARED_FIELDS:
            if key not in own:
                continue
            value = own[key]
            known = self._shared.get(key)
            if known is value:
                del own[key]
            elif known is None:
                self._shared[key] = value
                self.add("", "s", key, orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS))
                del own[key]
        return own

    def open_run(
        self, run_id: str, program_name: str, meta: dict[str, Any]
    ) -> tuple[LoggedRunStore, LoggedJournal]:
        store = LoggedRunStore(self, run_id)
        store._meta = {"run_id": run_id, **meta}  # write_meta's, without comparing to nothing
        store._record_meta(dict(store._meta))
        store._lay_out("", program_name)
        return store, LoggedJournal(self, run_id)

    # --- group commit ---------------------------------------------------------------------

    def _schedule(self) -> None:
        self._scheduled = True
        try:
            asyncio.get_running_loop().call_soon(self.flush)
        except RuntimeError:  # no event loop: write at once
            self.flush()

    def flush(self) -> None:
        """Write what is pending now (the loop calls it at the end of a turn)."""
        self._scheduled = False
        if self._fd is None or self.error is not None:
            self._pending.clear()
            self._after.clear()
            return
        try:
            self._write_pending()
        except OSError as error:
            self._fail(error)

    def _write_pending(self) -> None:
        assert self._fd is not None
        if self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            _write_fully(self._fd, data)
            self.writes += 1
        after, self._after = self._after, []
        if not self.durable:
            self._write_all(after)
            return
        self._unsynced_after.extend(after)
        if self._syncer is None or self._syncer.done():
            try:
                self._syncer = asyncio.get_running_loop().create_task(self._sync())
            except RuntimeError:
                self._sync_now()

    def _fail(self, error: OSError) -> None:
        """Stop at the first failed write: what waits is dropped (the runs it belongs to
        are run again on resume), and `on_error` hears of it once."""
        if error.filename is None:
            error.filename = str(self.path)
        self.error = error
        self._pending.clear()
        self._after.clear()
        self._unsynced_after.clear()
        if self.on_error is not None:
            self.on_error(error)

    async def _sync(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self._unsynced_after and self._fd is not None and self.error is None:
                waiting, self._unsynced_after = self._unsynced_after, []
                await loop.run_in_executor(None, os.fsync, self._fd)
                self.fsyncs += 1
                self._write_all(waiting)
        except OSError as error:
            self._fail(error)

    def _sync_now(self) -> None:
        if self.error is not None:
            return
        try:
            if self._fd is not None:
                os.fsync(self._fd)
                self.fsyncs += 1
            waiting, self._unsynced_after = self._unsynced_after, []
            self._write_all(waiting)
        except OSError as error:
            self._fail(error)

    def _write_all(self, items: list[tuple[int, bytes]]) -> None:
        """One `write` per file descriptor for everything queued for it (in order); an
        error names the file."""
        by_fd: dict[int, list[bytes]] = {}
        for fd, data in items:
            by_fd.setdefault(fd, []).append(data)
        for fd, pieces in by_fd.items():
            try:
                _write_fully(fd, b"".join(pieces))
            except OSError as error:
                error.filename = error.filename or self.names.get(fd)
                raise

    async def aclose(self) -> None:
        self.flush()
        if self._syncer is not None:
            await self._syncer
        self.close()

    def close(self) -> None:
        """Write everything pending, fsync the log (a batch ends durably) and close it; a
        failed write is in `error`, not raised (the batch says it, with how to resume)."""
        if self._fd is None:
            return
        self.flush()
        self._sync_now()
        os.close(self._fd)
        self._fd = None


def _write_fully(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class LoggedJournal(Journal):
    """A run's journal as records of the batch's run log (same event lines)."""

    def __init__(self, log: RunLog, run_id: str) -> None:  # super(): it opens no file
        self.path = log.path
        self.durable = log.durable
        self.events = 0
        self.fsyncs = 0
        self._log = log
        self._run = orjson.dumps(run_id)

    def start(self) -> None:
        return None  # the log commits for every run

    def record(self, event: Event) -> float:
        t = now()
        self._log.record(self._run, "j", "", encode(event, t))
        self.events += 1
        return t

    def flush(self) -> None:
        self._log.flush()  # before a tool acts (`Shared.commit`): every run's records so far

    async def close(self) -> None:
        return None


class LoggedRunStore(RunStore):
    """A run kept in its batch's run log: `RunStore`'s writes, as log records. No file lock
    of its own: the batch's lock makes its process the one writer of all its runs."""

    keeps_audit_trail = False  # made from the journal when the folder is materialized
    writes_files = False  # its files are records after the journal's, in the same log

    def __init__(self, log: RunLog, run_id: str, prefix: str = "") -> None:
        self.run_id = run_id
        self._run = orjson.dumps(run_id)
        self._meta: dict[str, Any] | None = None
        self._log = log
        self._prefix = prefix
        self._journaled = False
        self._outputs: dict[str, Any] | None = None
        self._root: Path | None = None

    # Where the run's folder will be once materialized (built when asked: a batch makes
    # thousands of stores, and a `Path` costs microseconds).
    @property
    def root(self) -> Path:  # type: ignore[override]
        if self._root is None:
            top = self._log.runs_dir / self.run_id
            self._root = top / self._prefix if self._prefix else top
        return self._root

    @property
    def bindings(self) -> Path:  # type: ignore[override]
        return self.root / "bindings"

    @property
    def agents(self) -> Path:  # type: ignore[override]
        return self.root / "agents"

    @property
    def imports(self) -> Path:  # type: ignore[override]
        return self.root / "imports"

    def take_lock(self) -> None:
        return None

    def namespace(self, name: str, program_text: str, program_name: str) -> RunStore:
        child = LoggedRunStore(self._log, self.run_id, f"{self._prefix}imports/{name}/")
        self._log.record(self._run, "d", child._prefix, b"null")
        child._lay_out(program_text, program_name)
        return child

    def _lay_out(self, program_text: str, program_name: str) -> None:
        if self._prefix:  # the top run's program.prose is the batch's own copy
            self._file("w", "program.prose", program_text)
        self._file("a", "state.md", state_header(self.run_id, program_name))

    def _file(self, op: str, name: str, text: str) -> None:
        path = self._prefix + name if self._prefix else name
        self._log.record(self._run, op, path, orjson.dumps(text))

    def read_meta(self) -> dict[str, Any]:
        return dict(self._meta or {})

    def write_meta(self, meta: dict[str, Any]) -> None:
        old = self._meta or {}
        changed = {k: v for k, v in meta.items() if k not in old or old[k] is not v}
        self._meta = dict(meta)
        self._record_meta(changed)

    def update_meta(self, **changes: Any) -> None:
        # what `write_meta({**meta, **changes})` records, without copying the whole of it
        meta = self._meta if self._meta is not None else {}
        changed = {k: v for k, v in changes.items() if k not in meta or meta[k] is not v}
        self._meta = {**meta, **changes}
        self._record_meta(changed)

    def _record_meta(self, changed: dict[str, Any]) -> None:
        if self._prefix:
            return  # namespaces have no run.json
        own = self._log.shared_meta(changed)
        data = orjson.dumps(own, option=orjson.OPT_NON_STR_KEYS)
        self._log.record(self._run, "m", "", data)

    def has_journal_events(self) -> bool:
        return False  # a logged run is always a fresh one (a resume materializes it first)

    def open_state(self) -> None:
        return None

    def state(self, line: str) -> None:
        self._file("a", "state.md", one_line(line) + "\n")  # as `RunStore.state`

    def _write_view(self, name: str, text: Text) -> None:
        self._file("w", name, text if isinstance(text, str) else "".join(text))

    def write_outputs(self, outputs: dict[str, Any]) -> None:
        self._outputs = outputs
        self._file("w", "outputs.json", _dump_json(outputs).decode("utf-8"))

    def read_outputs(self) -> dict[str, Any] | None:
        return self._outputs

    async def offload(self, work: Callable[[], None]) -> None:
        work()  # appends to memory: no thread needed

    async def aflush(self) -> None:
        return None

    def close(self) -> None:
        return None

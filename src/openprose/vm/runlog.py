"""A batch's run log, the writing side: the runs of a batch recorded as lines of one
group-committed file instead of a folder each (the format and the reading side, which makes
a run's folder when it is asked for: `openprose.vm.logged_runs`).

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

from openprose.vm.journal import Journal, encode_event
from openprose.vm.runstore import RUNS_DIR, RunStore, _dump_json, state_header

__all__ = ["LoggedJournal", "LoggedRunStore", "RunLog", "open_for_append"]

# run.json fields that are the same object for every run of a batch (see `run_program`).
SHARED_FIELDS = ("program", "imports", "import_pins", "config", "launch")


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
    `durable`, after those records are fsynced (one fsync in flight at a time)."""

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
        self.writes = 0
        self.fsyncs = 0
        # {project}/.prose/batches/{id}/runs.ndjson -> {project}/.prose/runs
        self.runs_dir = path.parent.parent.parent.parent / RUNS_DIR

    # --- records --------------------------------------------------------------------------

    def add(self, run_id: str, op: str, path: str, payload: bytes) -> None:
        head = orjson.dumps((run_id, op, path))
        self._pending.append(head[:-1] + b"," + payload + b"]\n")
        self._schedule()

    def write_after(self, fd: int, data: bytes) -> None:
        """Write `data` to `fd` once every record added so far is written (and synced)."""
        self._after.append((fd, data))
        self._schedule()

    def shared_meta(self, meta: dict[str, Any]) -> dict[str, Any]:
        """`meta` without the fields every run shares; each is recorded once, the first
        time it is seen (by identity: `run_program` hands every run the same objects)."""
        own = dict(meta)
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
        store.write_meta({"run_id": run_id, **meta})
        store._lay_out("", program_name)
        return store, LoggedJournal(self, run_id)

    # --- group commit ---------------------------------------------------------------------

    def _schedule(self) -> None:
        if self._scheduled:
            return
        self._scheduled = True
        try:
            asyncio.get_running_loop().call_soon(self.flush)
        except RuntimeError:  # no event loop: write at once
            self.flush()

    def flush(self) -> None:
        """Write what is pending now (the loop calls it at the end of a turn)."""
        self._scheduled = False
        if self._fd is None:
            return
        if self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            _write_fully(self._fd, data)
            self.writes += 1
        after, self._after = self._after, []
        if not self.durable:
            _write_all(after)
            return
        self._unsynced_after.extend(after)
        if self._syncer is None or self._syncer.done():
            try:
                self._syncer = asyncio.get_running_loop().create_task(self._sync())
            except RuntimeError:
                self._sync_now()

    async def _sync(self) -> None:
        loop = asyncio.get_running_loop()
        while self._unsynced_after and self._fd is not None:
            waiting, self._unsynced_after = self._unsynced_after, []
            await loop.run_in_executor(None, os.fsync, self._fd)
            self.fsyncs += 1
            _write_all(waiting)

    def _sync_now(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)
            self.fsyncs += 1
        waiting, self._unsynced_after = self._unsynced_after, []
        _write_all(waiting)

    async def aclose(self) -> None:
        self.flush()
        if self._syncer is not None:
            await self._syncer
        self.close()

    def close(self) -> None:
        """Write everything pending, fsync the log (a batch ends durably) and close it."""
        if self._fd is None:
            return
        self.flush()
        self._sync_now()
        os.close(self._fd)
        self._fd = None


def _write_all(items: list[tuple[int, bytes]]) -> None:
    """One `write` per file descriptor for everything queued for it (in order)."""
    by_fd: dict[int, list[bytes]] = {}
    for fd, data in items:
        by_fd.setdefault(fd, []).append(data)
    for fd, pieces in by_fd.items():
        _write_fully(fd, b"".join(pieces))


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
        self._run_id = run_id

    def start(self) -> None:
        return None  # the log commits for every run

    def record(self, event: str, step: str, fields: dict[str, Any]) -> float:
        t, line = encode_event(event, step, fields)
        self._log.add(self._run_id, "j", "", line)
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
        self._log.add(self.run_id, "d", child._prefix, b"null")
        child._lay_out(program_text, program_name)
        return child

    def _lay_out(self, program_text: str, program_name: str) -> None:
        if self._prefix:  # the top run's program.prose is the batch's own copy
            self._file("w", "program.prose", program_text)
        self._file("a", "state.md", state_header(self.run_id, program_name))

    def _file(self, op: str, name: str, text: str) -> None:
        self._log.add(self.run_id, op, self._prefix + name, orjson.dumps(text))

    def read_meta(self) -> dict[str, Any]:
        return dict(self._meta or {})

    def write_meta(self, meta: dict[str, Any]) -> None:
        old = self._meta or {}
        changed = {k: v for k, v in meta.items() if k not in old or old[k] is not v}
        self._meta = dict(meta)
        if self._prefix:
            return  # namespaces have no run.json
        own = self._log.shared_meta(changed)
        self._log.add(self.run_id, "m", "", orjson.dumps(own, option=orjson.OPT_NON_STR_KEYS))

    def has_journal_events(self) -> bool:
        return False  # a logged run is always a fresh one (a resume materializes it first)

    def open_state(self) -> None:
        return None

    def state(self, line: str) -> None:
        self._file("a", "state.md", line + "\n")

    def _write_view(self, name: str, text: str) -> None:
        self._file("w", name, text)

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

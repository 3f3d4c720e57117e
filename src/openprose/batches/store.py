"""The batch folder `.prose/batches/{id}/` and the files that make a batch resumable.

batch.json      how the batch was started (program, inputs file and its hash, options)
program.prose   the program as the batch runs it (a resume runs this copy, not the file)
runs.ndjson     the run log: the in-process executor's runs (`openprose.record.runlog`)
lock            held (flock) by the one process writing the batch
outputs.jsonl   one row per finished case, unless `-o` named another file

The run of the case on line L is run `{batch id}-{L}`: its id needs no record of its own,
and a resume finds it in the run log or as a folder under `.prose/runs/`. A row is written
the moment its run ends, just after the run's last records (the run log's group commit), so
a kill -9 loses no finished row; a row torn by a crash mid-write is dropped and the run's
records give it back on resume.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from openprose.files import write_bytes_atomically
from openprose.locks import FileLock, LockHeld, try_lock
from openprose.record.logged_runs import BATCHES_DIR, LOG_NAME
from openprose.record.runlog import RunLog, open_for_append
from openprose.record.runstore import new_run_id

__all__ = ["BATCHES_DIR", "BatchBusy", "BatchStore", "file_sha256", "find_batch"]


class BatchBusy(RuntimeError):
    """Another process holds the batch's lock."""


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


class BatchStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.batch_id = root.name
        self._lock: FileLock | None = None
        self._rows_fd: int | None = None
        self.log: RunLog | None = None

    @classmethod
    def create(cls, project_dir: Path, meta: dict[str, Any], program_text: str) -> BatchStore:
        batches = project_dir / BATCHES_DIR
        batches.mkdir(parents=True, exist_ok=True)
        while True:
            root = batches / new_run_id()
            try:
                root.mkdir()
                break
            except FileExistsError:
                continue
        store = cls(root)
        store.lock()
        (root / "program.prose").write_text(program_text, encoding="utf-8")
        output = meta.get("output") or str((root / "outputs.jsonl").resolve())
        store.write_meta({**meta, "batch_id": store.batch_id, "output": output})
        return store

    # --- one writer -----------------------------------------------------------------------

    def lock(self) -> None:
        """Take the batch's lock for the life of this process (the kernel drops it on
        kill -9); `BatchBusy` naming the holder's pid when another process has it."""
        try:
            self._lock = try_lock(self.root / "lock")
        except LockHeld as held:
            holder = held.pid if held.pid is not None else "?"
            raise BatchBusy(f"batch {self.batch_id} is being written by pid {holder}") from None

    @property
    def lock_fd(self) -> int | None:
        """The open lock file (a worker process holds the lock with this process)."""
        return None if self._lock is None else self._lock.fileno()

    # --- files ----------------------------------------------------------------------------

    @property
    def meta_path(self) -> Path:
        return self.root / "batch.json"

    def read_meta(self) -> dict[str, Any]:
        data = orjson.loads(self.meta_path.read_bytes())
        if isinstance(data, dict):
            return data
        raise ValueError(f"{self.meta_path}: damaged, not a batch record")

    def write_meta(self, meta: dict[str, Any]) -> None:
        write_bytes_atomically(self.meta_path, orjson.dumps(meta, option=orjson.OPT_INDENT_2))

    def update_meta(self, **changes: Any) -> None:
        self.write_meta({**self.read_meta(), **changes})

    @property
    def program_text(self) -> str:
        return (self.root / "program.prose").read_text(encoding="utf-8")

    @property
    def output_path(self) -> Path:
        return Path(self.read_meta()["output"])

    def run_id(self, line: int) -> str:
        """The id of the run of the case on `line`."""
        return f"{self.batch_id}-{line}"

    @property
    def log_path(self) -> Path:
        return self.root / LOG_NAME

    def rows(self) -> Iterator[dict[str, Any]]:
        """The rows already written (a torn last row left out)."""
        return (r for r in _records(self.output_path) if isinstance(r.get("line"), int))

    def open_for_append(self, *, durable: bool = False) -> RunLog:
        output = self.output_path
        self._rows_fd = open_for_append(output)
        self.log = RunLog(self.log_path, durable=durable)
        self.log.names[self._rows_fd] = str(output)
        return self.log

    def write_row(self, row: dict[str, Any]) -> None:
        """Append a row once the run log's records so far are written (the run's own)."""
        assert self._rows_fd is not None and self.log is not None
        data = orjson.dumps(row, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE)
        self.log.write_after(self._rows_fd, data)

    async def aclose(self) -> None:
        if self.log is not None:
            await self.log.aclose()
        self.close()

    def close(self) -> None:
        """Close the files and release the lock, whatever fails on the way (a full disk:
        the rows fsync raises after the lock is released)."""
        try:
            if self.log is not None:
                self.log.close()
                self.log = None
            if self._rows_fd is not None:
                fd, self._rows_fd = self._rows_fd, None
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
        finally:
            if self._lock is not None:
                self._lock.release()
                self._lock = None


def _records(path: Path) -> Iterator[dict[str, Any]]:
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        return
    with handle:
        for line in handle:
            if not line.endswith(b"\n"):
                return  # torn by a crash
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(record, dict):
                yield record


def find_batch(project_dir: Path, spec: str) -> Path | None:
    """A batch by folder path, exact id or unique id prefix under `.prose/batches/`."""
    direct = Path(spec)
    if (direct / "batch.json").is_file():
        return direct
    batches = project_dir / BATCHES_DIR
    if not batches.is_dir() or not spec:
        return None
    matches = sorted(
        p for p in batches.iterdir() if p.name.startswith(spec) and (p / "batch.json").is_file()
    )
    exact = [p for p in matches if p.name == spec]
    if exact:
        return exact[0]
    if len(matches) > 1:
        names = ", ".join(p.name for p in matches)
        raise ValueError(f"{spec!r} is ambiguous, it matches {len(matches)} batches: {names}")
    return matches[0] if matches else None

"""The batch folder `.prose/batches/{id}/` and the files that make a batch resumable.

batch.json      how the batch was started (program, inputs file and its hash, options)
program.prose   the program as the batch runs it (a resume runs this copy, not the file)
started.jsonl   {"line", "run_id"} for every run, written before the run starts
lock            held (flock) by the one process writing the batch
outputs.jsonl   one row per finished case, unless `-o` named another file

A row is appended (one `write`) the moment its run ends, so a kill -9 loses no finished row;
a row torn by a crash mid-write is dropped and its run's folder gives it back on resume.
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
from openprose.vm.runstore import new_run_id

__all__ = ["BATCHES_DIR", "BatchBusy", "BatchStore", "file_sha256", "find_batch"]

BATCHES_DIR = Path(".prose") / "batches"


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
        self._started_fd: int | None = None
        self._rows_fd: int | None = None

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

    def started(self) -> dict[int, str]:
        """line -> run id of every run the batch started."""
        return {
            int(record["line"]): str(record["run_id"])
            for record in _records(self.root / "started.jsonl")
            if isinstance(record.get("line"), int) and isinstance(record.get("run_id"), str)
        }

    def rows(self) -> Iterator[dict[str, Any]]:
        """The rows already written (a torn last row left out)."""
        return (r for r in _records(self.output_path) if isinstance(r.get("line"), int))

    def open_for_append(self) -> None:
        self._started_fd = _append_fd(self.root / "started.jsonl")
        self._rows_fd = _append_fd(self.output_path)

    def record_start(self, line: int, run_id: str) -> None:
        assert self._started_fd is not None
        os.write(self._started_fd, orjson.dumps({"line": line, "run_id": run_id}) + b"\n")

    def write_row(self, row: dict[str, Any]) -> None:
        assert self._rows_fd is not None
        os.write(self._rows_fd, orjson.dumps(row, option=orjson.OPT_NON_STR_KEYS) + b"\n")

    def close(self) -> None:
        for name in ("_started_fd", "_rows_fd"):
            fd = getattr(self, name)
            if fd is not None:
                os.fsync(fd)
                os.close(fd)
                setattr(self, name, None)
        if self._lock is not None:
            self._lock.release()
            self._lock = None


def _append_fd(path: Path) -> int:
    """An append descriptor; a line torn by a crash is cut off first, so the next row
    starts on a line of its own and the torn one is not read as a row."""
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

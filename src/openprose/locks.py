"""Advisory file locks (`flock`) for files and folders that one process at a time may write.

The kernel releases a `flock` when its holder exits, however it exits (kill -9 included), so
a lock can never be left stale by a crash. The lock file records the holder's pid so that a
process refused the lock can say who holds it.

    with locked(index_path.with_suffix(".lock")):   # wait for the other writer
        ...
    held = try_lock(run_dir / ".lock")               # or refuse at once: LockHeld(pid)

A process holds each lock file at most once: taking a lock it already holds returns the
same `FileLock` with one more holder (flock on a second descriptor of the same file would
conflict with the first), and the lock is released when its last holder releases it.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Self

__all__ = ["FileLock", "LockHeld", "holder_of", "locked", "try_lock"]

_held: dict[str, FileLock] = {}  # resolved lock path -> this process's lock on it
_registry_lock = threading.Lock()


class LockHeld(Exception):
    """Another process holds the lock; `pid` is its process id when it could be read."""

    def __init__(self, path: Path, pid: int | None) -> None:
        who = f"pid {pid}" if pid is not None else "another process"
        super().__init__(f"{path} is locked by {who}")
        self.path = path
        self.pid = pid


class FileLock:
    """One flock held by this process on `path` (the file is created when missing)."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd
        self._holders = 1

    @property
    def held(self) -> bool:
        return self._fd is not None

    def fileno(self) -> int | None:
        """The open lock file while held (a child given it holds the lock with us)."""
        return self._fd

    def release(self) -> None:
        """Drop one holder; the last one unlocks and closes the file (which stays)."""
        with _registry_lock:
            if self._fd is None:
                return
            self._holders -= 1
            if self._holders > 0:
                return
            _held.pop(_key(self.path), None)
            fd, self._fd = self._fd, None
        try:  # no stale pid for the next holder's rivals to read while it records its own
            os.ftruncate(fd, 0)
        except OSError:
            pass
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()


def try_lock(path: Path) -> FileLock:
    """Take the lock on `path` at once, or raise `LockHeld` naming its holder."""
    return _take(Path(path), blocking=False, timeout=None)


@contextmanager
def locked(path: Path, *, timeout: float | None = None) -> Iterator[FileLock]:
    """Hold the lock on `path` for a `with` block, waiting for another holder to let go
    (at most `timeout` seconds, then `LockHeld`)."""
    lock = _take(Path(path), blocking=True, timeout=timeout)
    try:
        yield lock
    finally:
        lock.release()


def holder_of(path: Path) -> int | None:
    """The pid recorded in a lock file (whether or not it is still held), or None."""
    from openprose.statefiles import read_state_file, valid_pid

    try:  # a lock file holds a pid and a newline; anything longer is not one of ours
        text = read_state_file(path, 64).decode("ascii", "replace").strip()
    except OSError:
        return None
    return valid_pid(int(text)) if text.isdigit() and len(text) < 20 else None


def _take(path: Path, *, blocking: bool, timeout: float | None) -> FileLock:
    key = _key(path)
    with _registry_lock:
        mine = _held.get(key)
        if mine is not None and mine.held:
            mine._holders += 1
            return mine
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        _flock(fd, path, blocking=blocking, timeout=timeout)
        # Ours now: record who holds it, for the message of a process refused it.
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
    except BaseException:
        os.close(fd)
        raise
    lock = FileLock(path, fd)
    with _registry_lock:
        _held[key] = lock
    return lock


def _flock(fd: int, path: Path, *, blocking: bool, timeout: float | None) -> None:
    if blocking and timeout is None:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if not blocking or (deadline is not None and time.monotonic() >= deadline):
                raise LockHeld(path, _recorded_pid(path)) from None
            time.sleep(0.01)


def _recorded_pid(path: Path) -> int | None:
    """The holder's pid; it writes it just after taking the lock, so wait a moment for it
    (a pid left by a holder that was killed is not taken for the live one's)."""
    pid = None
    for _ in range(20):
        pid = holder_of(path)
        if pid is not None and _alive(pid):
            return pid
        time.sleep(0.005)
    return pid


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _key(path: Path) -> str:
    return str(path.resolve())

"""Reading the files of `.prose/` (run.json, journals, run logs, state.md, lock files...).

Those files are ours, but anything may stand in their place: a symlink to /dev/zero, a FIFO,
a file grown without end. So each is opened without following a last-component symlink and
without blocking (a FIFO opens at once), kept only when `fstat` says it is a regular file,
and read up to a size limit. Every refusal is a `StateFileUnreadable`, an `OSError` whose
`strerror` says why, so the callers' `except OSError` paths (a run shown as damaged) apply.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

MiB = 1024 * 1024
# run.json, outputs.json, a lock file: small records (a run's inputs are the biggest part).
RECORD_LIMIT = 64 * MiB
# A journal or a batch's run log: every event of a run or batch.
LOG_LIMIT = 4096 * MiB

# The largest pid Linux hands out (PID_MAX_LIMIT, 2**22); a recorded pid beyond it is damage.
PID_MAX = 4 * 1024 * 1024


class StateFileUnreadable(OSError):
    """A state file that is not a regular file, or is over its size limit."""


def open_state_file(path: Path | str) -> BinaryIO:
    """A regular file opened for reading (to stream it); `FileNotFoundError` when missing,
    `StateFileUnreadable` when something else than a regular file stands there."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError as error:
        if error.errno == errno.ELOOP:  # O_NOFOLLOW on a symlink
            raise StateFileUnreadable(errno.ELOOP, "a symlink, not a regular file") from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise StateFileUnreadable(errno.EINVAL, "not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def read_state_file(path: Path | str, limit: int = RECORD_LIMIT, offset: int = 0) -> bytes:
    """The bytes of a regular file from `offset` on, at most `limit` of them;
    `FileNotFoundError` when missing, `StateFileUnreadable` when it is something else than a
    regular file (a device, a FIFO, a socket, a symlink) or holds more than `limit` bytes."""
    with open_state_file(path) as handle:
        if os.fstat(handle.fileno()).st_size - offset > limit:
            raise StateFileUnreadable(errno.EFBIG, f"larger than {_size(limit)}")
        handle.seek(offset)
        data = handle.read(limit + 1)  # a regular file: read() returns what is there
    if len(data) > limit:  # grew while being read
        raise StateFileUnreadable(errno.EFBIG, f"larger than {_size(limit)}")
    return data


def valid_pid(value: object) -> int | None:
    """A recorded pid as an int a process can have, else None (a damaged field:
    10**30 would overflow `os.kill`)."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= PID_MAX:
        return value
    return None


def _size(limit: int) -> str:
    return f"{limit // MiB} MiB" if limit % MiB == 0 else f"{limit:,} bytes"

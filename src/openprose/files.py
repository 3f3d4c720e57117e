"""Files, below both the front end and the VM: whole-file writes that readers never see half
done (temp file + rename), and bounded reads of files the user named (inputs, rules,
cassettes), refused with a clear reason when they are not files at all.

A character or block device or a socket is refused before it is opened (`/dev/zero` would
never end, a tty would wait for typing); a pipe is read (`--inputs <(generate)`) but, like
every file, only up to its size limit, so an endless writer cannot grow the process.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

__all__ = [
    "FileProblem",
    "MiB",
    "read_limited",
    "unreadable_reason",
    "write_atomically",
    "write_bytes_atomically",
    "write_chunks_atomically",
]


def write_atomically(path: Path, text: str) -> None:
    """Readers see the old file or the new one, never half of one."""
    write_bytes_atomically(path, text.encode("utf-8"))


def write_bytes_atomically(path: Path, data: bytes) -> None:
    _write_atomically(path, (data,))


def write_chunks_atomically(path: Path, chunks: Iterable[str]) -> None:
    """`write_atomically` of the text `chunks` make, encoded a batch at a time: a big text
    (a 100,000-item binding) is never whole in memory, as text or as bytes."""
    _write_atomically(path, _encoded_batches(chunks))


_BATCH_CHARS = 64 * 1024  # of text encoded and written at once


def _encoded_batches(chunks: Iterable[str]) -> Iterator[bytes]:
    batch: list[str] = []
    size = 0
    for chunk in chunks:
        batch.append(chunk)
        size += len(chunk)
        if size >= _BATCH_CHARS:
            yield "".join(batch).encode("utf-8")
            batch.clear()
            size = 0
    if batch:
        yield "".join(batch).encode("utf-8")


def _write_atomically(path: Path, parts: Iterable[bytes]) -> None:
    # Bare os calls: each one releases and retakes the GIL, so fewer calls means less
    # contention with the event loop when this runs on the binding thread.
    temp = f"{path.parent}/.{path.name}.{os.getpid()}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        try:
            for data in parts:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.replace(temp, path)
    except BaseException as failure:
        # a full disk mid-write: no half-written temporary file is left behind
        with contextlib.suppress(OSError):
            os.unlink(temp)
        if isinstance(failure, OSError) and failure.filename is None:
            failure.filename = str(path)  # the error names the file, as open() would
        raise


MiB = 1024 * 1024


class FileProblem(ValueError):
    """A named file cannot be used; the message is `PATH: why`."""


def unreadable_reason(path: Path) -> str | None:
    """Why `path` cannot be read as a file (missing, a dangling link, a symlink loop, a
    folder, a device), or None when it can be opened."""
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "a symlink loop (too many levels of symbolic links)"
        if error.errno == errno.ENOENT:
            return "a broken symlink" if os.path.islink(path) else "no such file"
        return f"cannot read ({error.strerror})"
    if stat.S_ISDIR(mode):
        return "is a folder, not a file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device, not a regular file"
    if stat.S_ISSOCK(mode):
        return "is a socket, not a regular file"
    return None


def read_limited(path: Path, limit: int) -> bytes:
    """The bytes of `path`, at most `limit` of them; `FileProblem` naming the file and why
    when it is not readable or larger."""
    reason = unreadable_reason(path)
    if reason is not None:
        raise FileProblem(f"{path}: {reason}")
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as error:
        raise FileProblem(f"{path}: cannot read ({error.strerror})") from None
    if len(data) > limit:
        raise FileProblem(f"{path}: larger than the {_size(limit)} limit for this file")
    return data


def _size(limit: int) -> str:
    return f"{limit // MiB} MiB" if limit >= MiB and limit % MiB == 0 else f"{limit:,} bytes"

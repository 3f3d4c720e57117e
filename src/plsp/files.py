"""Reading the files a user names (traces, loop files, replies, `!fetch` sources): only
regular files, never more than a limit, never blocking on a FIFO with no writer."""

from __future__ import annotations

import errno
import os
import stat
import sys
from pathlib import Path

MAX_FILE_BYTES = 64 * 1024 * 1024  # traces, loop files and replies larger than this are refused
JSON_INT_DIGITS = 4_000  # int() refuses more than 4,300 digits, and is quadratic before


class NotRegularFileError(OSError):
    """A device, FIFO, socket or directory where a file is expected."""


def read_file(path: str | os.PathLike[str], limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file ``path``; OSError (with a readable strerror) for a
    device, FIFO or directory, or a file larger than ``limit``."""
    data = read_head(path, limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"larger than {limit:,} bytes; not read", str(path))
    return data


def read_head(path: str | os.PathLike[str], size: int) -> bytes:
    """Up to ``size`` bytes from the start of the regular file ``path``."""
    # O_NONBLOCK: opening a FIFO with no writer would otherwise wait forever.
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        mode = os.fstat(descriptor).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(mode):
            raise NotRegularFileError(errno.EINVAL, "not a regular file", str(path))
        os.set_blocking(descriptor, True)
        with os.fdopen(descriptor, "rb", closefd=False) as stream:
            return stream.read(size)
    finally:
        os.close(descriptor)


def read_stdin(limit: int = MAX_FILE_BYTES) -> bytes:
    """Standard input, up to ``limit`` bytes (OSError beyond)."""
    data = sys.stdin.buffer.read(limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"larger than {limit:,} bytes; not read", "<stdin>")
    return data


def read_text(path: Path, limit: int = MAX_FILE_BYTES) -> str:
    """:func:`read_file` decoded as UTF-8 (UnicodeDecodeError otherwise)."""
    return read_file(path, limit).decode("utf-8-sig")


def bounded_int(digits: str) -> int:
    """``parse_int`` for json.loads: integers of at most JSON_INT_DIGITS digits."""
    if len(digits) > JSON_INT_DIGITS + 1:  # a sign may lead
        raise ValueError(f"a number with {len(digits):,} digits (at most {JSON_INT_DIGITS:,})")
    return int(digits)


def not_utf8(path: object, error: UnicodeDecodeError) -> str:
    """`PATH:LINE:COL: not UTF-8 text (byte 0xNN)`, the place of the first bad byte."""
    before = error.object[: error.start]
    line = before.count(b"\n") + 1
    column = error.start - (before.rfind(b"\n") + 1) + 1
    return f"{path}:{line}:{column}: not UTF-8 text (byte 0x{error.object[error.start]:02x})"

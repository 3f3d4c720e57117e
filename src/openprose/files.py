"""Whole-file writes that readers never see half done (temp file + rename).

Shared by the front end's import cache and the VM's run store, so it sits below both."""

from __future__ import annotations

import os
from pathlib import Path


def write_atomically(path: Path, text: str) -> None:
    """Readers see the old file or the new one, never half of one."""
    write_bytes_atomically(path, text.encode("utf-8"))


def write_bytes_atomically(path: Path, data: bytes) -> None:
    # Bare os calls: each one releases and retakes the GIL, so fewer calls means less
    # contention with the event loop when this runs on the binding thread.
    temp = f"{path.parent}/.{path.name}.{os.getpid()}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
    os.replace(temp, path)

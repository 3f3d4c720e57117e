"""Whole-file writes on a disk that fills up: the error names the file, and no temporary
file is left behind (a full disk's 0-byte `bindings/.NAME.PID.tmp` files)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from openprose.files import write_bytes_atomically, write_chunks_atomically


def test_a_failed_write_leaves_no_temporary_file_and_names_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "bindings" / "draft.md"
    target.parent.mkdir()
    target.write_text("the old text")

    def full(fd: int, data: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(OSError) as raised:
        write_bytes_atomically(target, b"the new text")
    monkeypatch.undo()
    assert raised.value.errno == errno.ENOSPC and raised.value.filename == str(target)
    assert sorted(p.name for p in target.parent.iterdir()) == ["draft.md"]
    assert target.read_text() == "the old text"  # readers still see the whole old file


def test_a_write_in_pieces_failing_midway_leaves_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second encoded batch hits a full disk: the first is already written to the
    temporary file, which is removed; readers still see the whole old file."""
    target = tmp_path / "results.md"
    target.write_text("the old text")
    real_write = os.write
    calls: list[int] = []

    def fills_up(fd: int, data: object) -> int:
        calls.append(fd)
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "write", fills_up)
    with pytest.raises(OSError) as raised:
        write_chunks_atomically(target, ("é" * 1000 for _ in range(200)))
    monkeypatch.undo()
    assert len(calls) == 2 and raised.value.filename == str(target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.md"]
    assert target.read_text() == "the old text"

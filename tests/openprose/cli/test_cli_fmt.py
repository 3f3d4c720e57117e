"""`prose fmt PATH...`: in-place rewriting, --check, and files it must not touch."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

Run = Callable[..., tuple[int, str, str]]

MESSY = 'agent a:\r\n    model: opus   # fast\r\n\r\n\r\nsession: a\r\n        prompt: "Go"\r\n'
TIDY = 'agent a:\n  model: opus  # fast\n\nsession: a\n  prompt: "Go"\n'


def test_rewrites_in_place_then_is_a_fixed_point(prose: Run, tmp_path: Path) -> None:
    path = tmp_path / "messy.prose"
    path.write_bytes(MESSY.encode())
    code, out, err = prose("fmt", path)
    assert (code, err) == (0, "")
    assert out == f"reformatted {path}\n1 file reformatted, 0 unchanged\n"
    assert path.read_bytes() == TIDY.encode()
    code, out, _ = prose("fmt", path)
    assert (code, out) == (0, "0 files reformatted, 1 unchanged\n")


def test_check_reports_without_writing(prose: Run, tmp_path: Path) -> None:
    messy = tmp_path / "messy.prose"
    messy.write_bytes(MESSY.encode())
    tidy = tmp_path / "tidy.prose"
    tidy.write_text(TIDY, encoding="utf-8")
    code, out, _ = prose("fmt", "--check", tmp_path)
    assert code == 1
    assert out == f"would reformat {messy}\n1 file would be reformatted, 1 unchanged\n"
    assert messy.read_bytes() == MESSY.encode()
    code, _, _ = prose("fmt", "--check", tidy)
    assert code == 0


def test_byte_order_mark_is_dropped(prose: Run, tmp_path: Path) -> None:
    path = tmp_path / "bom.prose"
    path.write_bytes(b'\xef\xbb\xbfsession "x"\n')
    assert prose("fmt", "--check", path)[0] == 1
    assert prose("fmt", path)[0] == 0
    assert path.read_bytes() == b'session "x"\n'


def test_file_with_syntax_errors_is_left_alone(prose: Run, tmp_path: Path) -> None:
    path = tmp_path / "broken.prose"
    path.write_text('session "unterminated\n   do:\n', encoding="utf-8")
    code, out, err = prose("fmt", path)
    assert code == 1
    assert " E001 " in err
    assert path.read_text(encoding="utf-8") == 'session "unterminated\n   do:\n'
    assert out == "0 files reformatted, 0 unchanged\n"


def test_semantic_errors_do_not_block_formatting(prose: Run, tmp_path: Path) -> None:
    path = tmp_path / "ghost.prose"
    path.write_text("session:   ghost\n", encoding="utf-8")
    code, _, _ = prose("fmt", path)
    assert code == 0
    assert path.read_text(encoding="utf-8") == "session: ghost\n"


def test_missing_path_is_a_usage_error(prose: Run, tmp_path: Path) -> None:
    code, _, err = prose("fmt", tmp_path / "missing.prose")
    assert code == 2 and "missing.prose" in err


def test_fmt_check_subprocess(prose_process: Run, tmp_path: Path) -> None:
    path = tmp_path / "messy.prose"
    path.write_bytes(MESSY.encode())
    code, out, err = prose_process("fmt", "--check", path)
    assert (code, err) == (1, "")
    assert out.startswith(f"would reformat {path}\n")


def test_fifo_is_never_written_back(prose: Run, tmp_path: Path) -> None:
    import os
    import threading

    pipe = tmp_path / "pipe.prose"
    os.mkfifo(pipe)

    def feed() -> None:
        with open(pipe, "w", encoding="utf-8") as out:
            out.write('session   "x"\n')

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    code, _, err = prose("fmt", pipe)
    writer.join(5)
    assert code == 2
    assert err == f"prose: {pipe}: cannot write: not a regular file\n"


def test_fmt_check_of_a_formatted_fifo_reads_it_once(prose_on_fifo: Run) -> None:
    # --check used to open the FIFO again to look for a byte-order mark, and block there.
    code, out, err = prose_on_fifo(b'session "x"\n', "fmt", "--check")
    assert (code, out, err) == (0, "0 files would be reformatted, 1 unchanged\n", "")


def test_a_file_that_cannot_be_written_is_not_counted_as_reformatted(
    prose_on_fifo: Run,
) -> None:
    code, out, err = prose_on_fifo(b'session   "x"\n', "fmt")
    assert code == 2 and "cannot write: not a regular file" in err
    assert out == "0 files reformatted, 0 unchanged\n"


def test_diff_prints_what_would_change_and_writes_nothing(prose: Run, tmp_path: Path) -> None:
    path = tmp_path / "messy.prose"
    path.write_bytes(MESSY.encode())
    code, out, err = prose("fmt", "--diff", path)
    assert code == 1 and path.read_bytes() == MESSY.encode()
    assert out.startswith(f"--- {path}\n+++ {path} (formatted)\n")
    assert "-    model: opus   # fast\n" in out and "+  model: opus  # fast\n" in out
    assert err == "1 file would be reformatted, 0 unchanged\n"
    path.write_text(TIDY)
    assert prose("fmt", "--diff", path)[:2] == (0, "")


def test_dash_formats_stdin_to_stdout(
    prose: Run, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(MESSY.encode())))
    assert prose("fmt", "-") == (0, TIDY, "")


def test_rewrite_is_atomic_and_keeps_mode_and_symlink(
    prose: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    target = tmp_path / "real.prose"
    target.write_bytes(MESSY.encode())
    target.chmod(0o640)
    link = tmp_path / "link.prose"
    link.symlink_to(target)
    assert prose("fmt", link)[0] == 0
    assert link.is_symlink() and target.read_text() == TIDY
    assert target.stat().st_mode & 0o777 == 0o640
    # A failure while writing (a full disk) leaves the original whole and no temporary file.
    target.write_bytes(MESSY.encode())

    def full_disk(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    code, _, err = prose("fmt", target)
    assert code == 2 and "No space left on device" in err
    assert target.read_bytes() == MESSY.encode()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.prose", "real.prose"]

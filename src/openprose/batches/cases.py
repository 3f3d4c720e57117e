"""The cases of a batch: one program run per line of a JSONL file (or record of a CSV file).

A case's `line` is where it starts in the file, counted from 1 (a CSV file's header is its
line 1, so its first case is line 2). Blank lines hold no case. A line that is not a JSON
object of inputs is an `Invalid` case: reported, given a row, never run.
"""

from __future__ import annotations

import csv
import io
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

__all__ = ["Case", "CasesError", "Invalid", "read_cases"]

MAX_LINE_BYTES = 16 * 1024 * 1024  # one case's inputs; a longer line is an invalid case


class CasesError(ValueError):
    """The inputs file as a whole cannot be read (missing, a device, not UTF-8 CSV...)."""


@dataclass(frozen=True, slots=True)
class Case:
    line: int
    inputs: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Invalid:
    line: int
    error: str


def read_cases(path: Path) -> Iterator[Case | Invalid]:
    """Each case of `path` in file order, read lazily (a file of millions of lines is fine).
    `.csv` files are read as CSV with a header row; anything else as JSON Lines."""
    _check_regular(path)
    if path.suffix.lower() == ".csv":
        return _csv_cases(path)
    return _jsonl_cases(path)


def _check_regular(path: Path) -> None:
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise CasesError(f"{path}: no such file") from None
    except OSError as error:
        raise CasesError(f"{path}: cannot read ({error.strerror})") from None
    if not stat.S_ISREG(mode):
        raise CasesError(f"{path}: not a regular file (give a .jsonl or .csv file)")


def _jsonl_cases(path: Path) -> Iterator[Case | Invalid]:
    with path.open("rb") as handle:
        for number, raw in enumerate(_lines(handle), start=1):
            if raw is None:
                yield Invalid(number, f"line longer than {MAX_LINE_BYTES} bytes")
                continue
            if not raw.strip():
                continue
            try:
                value = orjson.loads(raw)
            except orjson.JSONDecodeError as error:
                yield Invalid(number, _not_json(raw, error))
                continue
            if not isinstance(value, dict):
                kind = type(value).__name__ if value is not None else "null"
                yield Invalid(number, f"expected a JSON object of inputs, got {kind}")
                continue
            yield Case(number, value)


def _lines(handle: io.BufferedReader) -> Iterator[bytes | None]:
    """Lines without their ending; None for a line over the cap (skipped, not buffered)."""
    while True:
        raw = handle.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            while raw and not raw.endswith(b"\n"):  # drop the rest of the long line
                raw = handle.readline(MAX_LINE_BYTES)
            yield None
            continue
        yield raw.rstrip(b"\r\n")


def _csv_cases(path: Path) -> Iterator[Case | Invalid]:
    try:
        handle = path.open(encoding="utf-8-sig", newline="")
    except OSError as error:
        raise CasesError(f"{path}: cannot read ({error.strerror})") from None
    with handle:
        reader = csv.reader(handle)
        try:
            header = next(reader, None)
        except (csv.Error, UnicodeDecodeError) as error:
            raise CasesError(f"{path}:1: cannot read the CSV header ({error})") from None
        if not header or not any(name.strip() for name in header):
            return
        names = [name.strip() for name in header]
        if len(set(names)) != len(names) or "" in names:
            raise CasesError(f"{path}:1: the CSV header needs distinct, non-empty input names")
        while True:
            start = reader.line_num + 1
            try:
                record = next(reader)
            except StopIteration:
                return
            except csv.Error as error:
                yield Invalid(start, f"unreadable CSV record ({error})")
                continue
            except UnicodeDecodeError as error:  # the stream cannot go on past it
                raise CasesError(f"{path}:{start}: not UTF-8 ({error.reason})") from None
            if not any(field.strip() for field in record):
                continue
            if len(record) != len(names):
                yield Invalid(start, f"{len(record)} field(s) where the header names {len(names)}")
                continue
            yield Case(start, dict(zip(names, record, strict=True)))


def count_cases(path: Path) -> int | None:
    """How many cases `path` holds (for a progress bar's total); None when unreadable.
    A JSON Lines file's cases are its non-blank lines: counted without parsing them."""
    try:
        if path.suffix.lower() == ".csv":
            return sum(1 for _ in read_cases(path))
        _check_regular(path)
        with path.open("rb") as handle:
            return sum(1 for raw in _lines(handle) if raw is None or raw.strip())
    except (CasesError, OSError):
        return None


def _not_json(raw: bytes, error: orjson.JSONDecodeError) -> str:
    """Why a line is not a case, in words: bytes that are not UTF-8 get their column."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as bad:
        column = bad.start + 1
        return f"not UTF-8 (byte 0x{raw[bad.start]:02x} at column {column}); save the file as UTF-8"
    return f"invalid JSON ({error})"

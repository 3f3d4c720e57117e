"""`vlp validate` collects the young GC generation rarely while it scans, and gives the
process its thresholds back afterwards, whatever happens."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from vlp import ndjson
from vlp.cli import VALIDATE_GC_THRESHOLD, main


@pytest.fixture
def thresholds() -> Iterator[tuple[int, int, int]]:
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield gc.get_threshold()
    gc.set_threshold(*before)


@pytest.fixture
def seen_while_scanning(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, ...]]:
    seen: list[tuple[int, ...]] = []
    real_scan = ndjson.scan

    def scan(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.get_threshold())
        return real_scan(*args, **kwargs)

    monkeypatch.setattr(ndjson, "scan", scan)
    return seen


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_raised_while_scanning_and_restored(
    fmt: str,
    tmp_path: Path,
    thresholds: tuple[int, int, int],
    seen_while_scanning: list[tuple[int, ...]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "broken.ndjson"
    path.write_bytes(b'{"id": "A"\nnot json\n')
    assert main(["validate", "--format", fmt, str(path)]) == 1
    assert seen_while_scanning == [(VALIDATE_GC_THRESHOLD, thresholds[1], thresholds[2])]
    assert gc.get_threshold() == thresholds
    assert "VLP001" in capsys.readouterr().out


def test_restored_when_the_scan_fails(
    tmp_path: Path, thresholds: tuple[int, int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    def scan(*args: Any, **kwargs: Any) -> Any:
        assert gc.get_threshold()[0] == VALIDATE_GC_THRESHOLD
        raise RuntimeError("scan failed")

    monkeypatch.setattr(ndjson, "scan", scan)
    path = tmp_path / "any.ndjson"
    path.write_bytes(b"{}\n")
    with pytest.raises(RuntimeError, match="scan failed"):
        main(["validate", str(path)])
    assert gc.get_threshold() == thresholds

"""The in-process executor's collector tuning rests on a finished run leaving no cyclic
garbage: more runs must not mean more objects only the collector can free."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from openprose.batches import in_process
from openprose.batches.in_process import YOUNG_OBJECTS_PER_PASS, fewer_collections
from openprose.cli import main


def test_fewer_collections_raises_the_threshold_and_restores_it() -> None:
    before = gc.get_threshold()
    with fewer_collections():
        assert gc.get_threshold()[0] == YOUNG_OBJECTS_PER_PASS
    assert gc.get_threshold() == before


@contextmanager
def _collector_off() -> Iterator[None]:
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _cyclic_garbage_of_a_batch(project: Path, cases: int) -> int:
    (project / "in.jsonl").write_text("".join(f'{{"topic": "t{i}"}}\n' for i in range(cases)))
    gc.collect()
    with _collector_off():
        assert main(["batch", "p.prose", "in.jsonl", "--provider", "scripted:rules.yaml"]) == 0
        return gc.collect()


def test_a_finished_run_leaves_no_cyclic_garbage(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(in_process, "fewer_collections", _collector_off)
    _cyclic_garbage_of_a_batch(project, 5)  # imports and first-use caches
    few = _cyclic_garbage_of_a_batch(project, 10)
    many = _cyclic_garbage_of_a_batch(project, 110)
    capsys.readouterr()
    assert many - few < 100, (few, many)  # 100 more runs: not even one object a run

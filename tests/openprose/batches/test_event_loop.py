"""A batch runs on uvloop's event loop where uvloop is installed, on asyncio's where not;
`prose batch`, `openprose.batch()` and the worker processes all take it from one place."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

import openprose
from openprose.batches import event_loop
from openprose.cli import main

uvloop = pytest.importorskip("uvloop")


async def loop_kind() -> type[asyncio.AbstractEventLoop]:
    return type(asyncio.get_running_loop())


def test_batch_loop_is_uvloop_when_installed() -> None:
    assert event_loop.run_batch_loop(loop_kind()) is uvloop.Loop


def test_without_uvloop_the_batch_runs_on_asyncio_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # `import uvloop` raises ImportError
    assert event_loop.batch_loop_factory() is None
    kind = event_loop.run_batch_loop(loop_kind())
    assert kind is not uvloop.Loop and issubclass(kind, asyncio.BaseEventLoop)


class Recording:
    """A loop factory that remembers the loops it made (uvloop's)."""

    def __init__(self) -> None:
        self.made: list[asyncio.AbstractEventLoop] = []

    def __call__(self) -> asyncio.AbstractEventLoop:
        loop = uvloop.new_event_loop()
        self.made.append(loop)
        return loop


def test_prose_batch_runs_its_cases_on_the_batch_loop(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = Recording()
    monkeypatch.setattr(event_loop, "batch_loop_factory", lambda: recording)
    (project / "in.jsonl").write_text('{"topic": "owls"}\n{"topic": "cats"}\n')
    code = main(
        ["batch", "p.prose", "in.jsonl", "-o", "out.jsonl", "--provider", "scripted:rules.yaml"]
    )
    assert code == 0, capsys.readouterr().err
    assert len(recording.made) == 1 and recording.made[0].is_closed()
    rows = [json.loads(line) for line in (project / "out.jsonl").read_text().splitlines()]
    assert [row["status"] for row in rows] == ["succeeded", "succeeded"]


def test_openprose_batch_runs_on_the_batch_loop(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recording = Recording()
    monkeypatch.setattr(event_loop, "batch_loop_factory", lambda: recording)
    (project / "in.jsonl").write_text('{"topic": "owls"}\n')
    result = openprose.batch("p.prose", "in.jsonl", provider="scripted:rules.yaml")
    assert result.stats.succeeded == 1
    assert len(recording.made) == 1 and recording.made[0].is_closed()


def test_prose_run_keeps_asyncio_loop(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = Recording()
    monkeypatch.setattr(event_loop, "batch_loop_factory", lambda: recording)
    assert (
        main(["run", "p.prose", "--provider", "scripted:rules.yaml", "--input", "topic=owls"]) == 0
    )
    assert recording.made == []

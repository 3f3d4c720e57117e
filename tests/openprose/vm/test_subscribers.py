"""Who gets a run's events: a subscriber whose class names `only_events` is handed only
those (the run notice: the run's start); any other, and a `Fanout` holding such a one, every
event."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import ClassVar

import pytest

from openprose.cli.run import Fanout, RunNotice
from openprose.parser import parse_text
from openprose.providers import ScriptedProvider
from openprose.record import events as ev
from openprose.vm.runner import run_program
from openprose.vm.subscribers import Observer

SOURCE = 'let xs = [1, 2]\nlet ys = xs | pmap:\n  session "Item {item}"\n'


class Ends:
    only_events: ClassVar[tuple[type[ev.Event], ...]] = (ev.RunStarted, ev.RunFinished)

    def __init__(self) -> None:
        self.seen: list[type[ev.Event]] = []

    def __call__(self, event: ev.Event, t: float) -> None:
        self.seen.append(type(event))


class Everything:
    def __init__(self) -> None:
        self.seen: list[type[ev.Event]] = []

    def __call__(self, event: ev.Event, t: float) -> None:
        self.seen.append(type(event))


def run_with(observer: Observer, project: Path) -> None:
    program = parse_text(SOURCE, str(project / "main.prose")).program
    result = asyncio.run(
        run_program(
            program, SOURCE, provider=ScriptedProvider([], default="ok"), project_dir=project,
            observer=observer,
        )
    )  # fmt: skip
    assert result.status == "succeeded"


def test_a_subscriber_naming_its_events_gets_only_those(tmp_path: Path) -> None:
    ends = Ends()
    run_with(ends, tmp_path)
    assert ends.seen == [ev.RunStarted, ev.RunFinished]


def test_a_fanout_hands_every_event_to_each_of_its_observers(tmp_path: Path) -> None:
    ends, everything = Ends(), Everything()
    run_with(Fanout(ends, everything), tmp_path)
    assert ends.seen == everything.seen
    assert everything.seen.count(ev.SessionFinished) == 2 and len(everything.seen) > 4


def test_the_run_notice_alone_says_which_run_started(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notice = RunNotice(quiet=False)
    notice.project = tmp_path
    run_with(notice, tmp_path)
    assert notice.run_id is not None
    assert f"prose: run {notice.run_id} started" in capsys.readouterr().err

"""A run this process is writing is watched from memory (`record.live`): the web view reads
its journal once, up to where it attached, then takes the batches as the run writes them —
no polling of the file, no event lost or seen twice. Other runs are tailed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from openprose.parser import parse_text
from openprose.providers import ScriptedProvider
from openprose.record.journal import JOURNAL_FILE, Journal
from openprose.record.live import live_journal
from openprose.record.runstore import RUNS_DIR
from openprose.ui import server
from openprose.ui.server import RunWatch
from openprose.vm.runner import VMConfig, run_program

PROGRAM = "".join(f'let a{i} = session "Step {i}"\n' for i in range(8))


async def test_a_run_of_this_process_is_watched_from_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed = parse_text(PROGRAM, str(tmp_path / "main.prose"))
    provider = ScriptedProvider([], default="ok", latency=0.02)
    run = asyncio.ensure_future(
        run_program(parsed.program, PROGRAM, provider=provider, project_dir=tmp_path,
                    config=VMConfig(retry_base_delay=0.001))
    )  # fmt: skip
    journal = await _journal_of(tmp_path)
    while live_journal(journal) is None or '"session_finished"' not in journal.read_text():
        await asyncio.sleep(0.005)
    tailed: list[int] = []
    tail = server.read_journal_from

    def counting(path: Path, offset: int) -> Any:
        tailed.append(offset)
        return tail(path, offset)

    monkeypatch.setattr(server, "read_journal_from", counting)
    watch = RunWatch(journal.parent)
    watch._refresh()
    assert watch.live is not None and 1 <= len(watch.digest.sessions) < 8
    grown = [len(watch.digest.sessions)]
    while not run.done():
        await asyncio.sleep(0.03)
        watch._refresh()
        grown.append(len(watch.digest.sessions))
        if watch.live is not None:
            assert tailed == []  # live: nothing read from the file since attaching
    await run
    watch._refresh()
    assert watch.live is None and grown[-1] > grown[0]
    from_file = RunWatch(journal.parent)
    from_file._refresh()
    assert watch.digest.sessions == from_file.digest.sessions  # nothing lost...
    assert watch.digest.events == from_file.digest.events  # ...nothing twice
    assert len(watch.digest.sessions) == 8
    assert watch.offset == journal.stat().st_size


async def test_a_run_of_another_process_is_tailed(tmp_path: Path) -> None:
    run_dir = tmp_path / "20260101-000000-abcdef"
    run_dir.mkdir()
    line = b'{"ev":"session_served","step":"1","t":1.0,"binding":"a"}\n'
    (run_dir / JOURNAL_FILE).write_bytes(line)
    watch = RunWatch(run_dir)
    watch._refresh()
    assert watch.live is None and watch.offset == len(line)


async def test_a_reader_attaching_mid_batch_misses_nothing(tmp_path: Path) -> None:
    """Batches that end at or before what was read from the file are dropped."""
    path = tmp_path / JOURNAL_FILE
    journal = Journal(path, durable=False)
    journal.record(started("1"))  # written at once (no loop yet)
    live = live_journal(path)
    assert live is not None
    watch = RunWatch(tmp_path)
    watch._refresh()
    watch._written(path.read_bytes(), live.size)  # a batch the file already held
    journal.record(started("2"))
    watch._refresh()
    assert sorted(watch.digest.sessions) == ["1", "2"]
    assert watch.digest.events == 2  # the batch the file held was not added again
    await journal.close()
    assert live_journal(path) is None


def started(step: str) -> Any:
    from openprose.record.events import SessionStarted

    return SessionStarted(step=step, agent=None, model="m", binding=None, kind="session")


async def _journal_of(project: Path) -> Path:
    runs = project / RUNS_DIR
    while True:
        found = list(runs.glob(f"*/{JOURNAL_FILE}")) if runs.exists() else []
        if found:
            return found[0]
        await asyncio.sleep(0.005)

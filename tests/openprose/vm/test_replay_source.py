"""`replay:RUN`: a run id or a unique prefix of one, resolved to the run's journal."""

from __future__ import annotations

from pathlib import Path

import pytest

from openprose.providers import ProviderConfigError, ReplayProvider
from openprose.vm.replay_source import replay_source
from tests.openprose.providers.test_providers_replay import ask, journal_event, write_run


async def test_a_run_id_or_unique_prefix_finds_the_runs_journal(tmp_path: Path) -> None:
    write_run(tmp_path, "20260101-120000-abcdef", journal_event("session_finished", "q", "a1"))
    write_run(tmp_path, "20260101-130000-fedcba", journal_event("session_finished", "q", "a2"))
    exact = ReplayProvider.from_file(replay_source(Path("20260101-120000-abcdef"), tmp_path))
    assert (await exact.complete(ask("q"))).text == "a1"
    prefix = ReplayProvider.from_file(replay_source(Path("20260101-13"), tmp_path))
    assert (await prefix.complete(ask("q"))).text == "a2"
    with pytest.raises(ProviderConfigError) as caught:
        replay_source(Path("20260101"), tmp_path)
    assert str(caught.value) == (
        "replay: '20260101' is ambiguous, it matches 2 runs: "
        "20260101-120000-abcdef, 20260101-130000-fedcba; give more of the run id"
    )


async def test_the_run_being_resumed_is_never_its_own_replay_source(tmp_path: Path) -> None:
    old = write_run(
        tmp_path, "20260101-120000-abcdef", journal_event("session_finished", "q", "a1")
    )
    new = write_run(
        tmp_path, "20260101-120000-abc123", journal_event("session_finished", "q", "a2")
    )
    # "20260101-120000-abc" names both runs; resuming the new one, it can only mean the old
    replay = ReplayProvider.from_file(
        replay_source(Path("20260101-120000-abc"), tmp_path, exclude=new)
    )
    assert (await replay.complete(ask("q"))).text == "a1"
    assert replay_source(Path(new.name), tmp_path, exclude=old) == new / "journal.jsonl"
    # excluded, the resumed run's own id finds nothing (reported as a missing file)
    assert replay_source(Path(new.name), tmp_path, exclude=new) == Path(new.name)


def test_an_exact_run_id_wins_over_longer_names(tmp_path: Path) -> None:
    write_run(tmp_path, "20260101-120000-abcdef", journal_event("session_finished", "q", "a1"))
    write_run(tmp_path, "20260101-120000-abcdef-copy", journal_event("session_finished", "q", "b"))
    found = replay_source(Path("20260101-120000-abcdef"), tmp_path)
    assert found == tmp_path / ".prose/runs/20260101-120000-abcdef/journal.jsonl"

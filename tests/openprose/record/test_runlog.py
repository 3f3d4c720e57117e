"""A batch's run log: runs recorded in one file, their folders made from it on demand —
the same folder a folder run leaves, found by every command that takes a run id."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from openprose.parser import parse_text
from openprose.providers.scripted import ScriptedProvider
from openprose.record.logged_runs import (
    LOG_NAME,
    logged_run_ids,
    logged_runs,
    materialize,
    read_log,
    resolve_run,
)
from openprose.record.runlog import RunLog
from openprose.record.runstore import AmbiguousRun, RunBusy
from openprose.vm.runner import VMConfig, run_program
from tests.support.run_folders import run_tree

PROGRAM = """input topic: "what"
agent critic:
  model: sonnet
let draft = session "Draft about {topic}"
repeat 2 as i:
  session "Polish {i}"
    context: draft
output answer = session: critic
  prompt: "Judge {draft}"
"""


def batch_dir(project: Path, batch_id: str = "20261125-101010-abcdef") -> Path:
    root = project / ".prose" / "batches" / batch_id
    root.mkdir(parents=True)
    (root / "program.prose").write_text(PROGRAM)
    return root


async def one_run(
    project: Path, run_id: str, log: RunLog | None, config: VMConfig | None = None
) -> Any:
    program = parse_text(PROGRAM, str(project / "p.prose")).program
    return await run_program(
        program,
        PROGRAM,
        provider=ScriptedProvider([], default="fine"),
        project_dir=project,
        inputs={"topic": "owls"},
        run_id=run_id,
        durable=False,
        log=log,
        config=config,
    )


def logged(project: Path, run_ids: list[str], batch: Path | None = None) -> Path:
    """Run the program once per id into a batch's run log; the batch folder."""
    batch = batch or batch_dir(project)

    async def go() -> None:
        log = RunLog(batch / LOG_NAME)
        for run_id in run_ids:
            await one_run(project, run_id, log)
        await log.aclose()

    asyncio.run(go())
    return batch


def test_a_materialized_run_is_the_folder_a_folder_run_leaves(tmp_path: Path) -> None:
    folder_project, log_project = tmp_path / "a", tmp_path / "b"
    folder_project.mkdir()
    log_project.mkdir()
    run_id = "20261125-101010-abcdef-7"
    asyncio.run(one_run(folder_project, run_id, None))
    batch = logged(log_project, [run_id])
    assert not (log_project / ".prose" / "runs").exists()  # nothing but the log so far

    made = materialize(batch, run_id, log_project / ".prose" / "runs")
    assert made == log_project / ".prose" / "runs" / run_id
    expected = run_tree(folder_project / ".prose" / "runs" / run_id)
    got = run_tree(made)
    assert set(got) == set(expected)
    for name in expected:
        assert got[name] == expected[name], name
    assert "bindings/draft.md" in got and "audit.ndjson" in got
    assert got["outputs.json"] == {"answer": "fine"}


def test_a_torn_last_record_is_skipped_and_cut_before_the_next_write(tmp_path: Path) -> None:
    batch = logged(tmp_path, ["B-1"])
    log_path = batch / LOG_NAME
    whole = log_path.read_bytes()
    log_path.write_bytes(whole + b'["B-2","m","",{"run_id":"B-')  # a crash mid-write
    assert set(read_log(batch)) == {"B-1"}
    logged(tmp_path, ["B-2"], batch)
    assert set(read_log(batch)) == {"B-1", "B-2"}
    assert all(json.loads(line) for line in log_path.read_text().splitlines())


def test_each_run_keeps_the_shared_fields_it_began_with(tmp_path: Path) -> None:
    """A resumed batch records the shared run.json fields again (prose.toml may have
    changed meanwhile): the runs before keep theirs."""
    batch = batch_dir(tmp_path)
    for run_id, tokens in (("B-1", 100), ("B-2", 200)):

        async def go(run_id: str = run_id, tokens: int = tokens) -> None:
            log = RunLog(batch / LOG_NAME)  # a new process: a resume
            await one_run(tmp_path, run_id, log, VMConfig(max_tokens=tokens))
            await log.aclose()

        asyncio.run(go())
    runs = read_log(batch)
    assert runs["B-1"].meta["config"]["max_tokens"] == 100
    assert runs["B-2"].meta["config"]["max_tokens"] == 200


def test_group_commit_writes_once_per_loop_turn(tmp_path: Path) -> None:
    batch = batch_dir(tmp_path)

    async def go() -> RunLog:
        log = RunLog(batch / LOG_NAME)
        await asyncio.gather(*(one_run(tmp_path, f"B-{i}", log) for i in range(20)))
        await log.aclose()
        return log

    log = asyncio.run(go())
    runs = read_log(batch)
    assert len(runs) == 20 and all(r.meta["status"] == "succeeded" for r in runs.values())
    events = sum(len(r.events) for r in runs.values())
    assert log.writes < events / 4  # many runs' records share each write


def test_resolve_run_finds_logged_runs_by_id_and_prefix(tmp_path: Path) -> None:
    batch = logged(tmp_path, [f"20261125-101010-abcdef-{n}" for n in (1, 2, 12)])
    assert logged_run_ids(batch) == [f"20261125-101010-abcdef-{n}" for n in (1, 2, 12)]
    with pytest.raises(AmbiguousRun, match="matches 3 runs"):
        resolve_run(tmp_path, "20261125-1010")
    runs = tmp_path / ".prose" / "runs"
    # an exact id wins over the longer ids it is a prefix of
    assert resolve_run(tmp_path, "20261125-101010-abcdef-1") == runs / "20261125-101010-abcdef-1"
    assert resolve_run(tmp_path, "20261125-101010-abcdef-2") == runs / "20261125-101010-abcdef-2"
    assert sorted(p.name for p in runs.iterdir()) == [
        "20261125-101010-abcdef-1",
        "20261125-101010-abcdef-2",
    ]
    # a materialized run is a folder like any other; the rest still come from the log
    with pytest.raises(AmbiguousRun, match="matches 3 runs"):
        resolve_run(tmp_path, "20261125-101010-abc")
    assert resolve_run(tmp_path, "20261125-101010-abcdef-12").name.endswith("-12")
    assert resolve_run(tmp_path, "20261125-101010-abcdef-3") is None
    assert [r.run_id for r in logged_runs(tmp_path)] == []  # all three have folders now


def test_a_batch_id_names_its_runs_without_listing_thousands(tmp_path: Path) -> None:
    batch = logged(tmp_path, [f"20261125-101010-abcdef-{n}" for n in range(1, 16)])
    with pytest.raises(AmbiguousRun) as ambiguous:
        resolve_run(tmp_path, batch.name)
    message = str(ambiguous.value)
    assert "matches 15 runs" in message and "(3 more)" in message


RUN = "20261125-101010-abcdef-1"
HOLD_LOCK = """
import fcntl, sys, time
handle = open(sys.argv[1], "a+")
fcntl.flock(handle, fcntl.LOCK_EX)
handle.truncate(0); handle.write("4242\\n"); handle.flush()
print("held", flush=True)
time.sleep(60)
"""


def test_a_run_in_flight_in_a_live_batch_is_busy(tmp_path: Path) -> None:
    batch = logged(tmp_path, [RUN])
    # cut the run's end off, as a kill in mid-run would have
    lines = (batch / LOG_NAME).read_text().splitlines(keepends=True)
    end = next(i for i, x in enumerate(lines) if '"run_finished"' in x)
    (batch / LOG_NAME).write_text("".join(lines[:end]))
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(batch / "lock")], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(RunBusy, match=f"run {RUN} is being written by pid"):
            resolve_run(tmp_path, RUN)
        assert not (tmp_path / ".prose" / "runs" / RUN).exists()
    finally:
        holder.kill()
        holder.wait()
    time.sleep(0.05)
    run = resolve_run(tmp_path, RUN)  # the batch is gone: the run can be resumed
    assert run is not None and json.loads((run / "run.json").read_text())["status"] == "running"

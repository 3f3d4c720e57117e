"""The run folder: layout, state.md markers, bindings, outputs.json and the journal."""

from __future__ import annotations

import asyncio
import json
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from openprose.files import write_atomically
from openprose.record.events import UnknownEvent
from openprose.record.journal import Journal, read_journal
from openprose.record.runstore import RunStore, _write_binding, find_run
from openprose.record.writer import BackgroundWriter


def append(journal: Journal, name: str, step: str, **fields: Any) -> None:
    """A line of the given name and fields (the journal's own behaviour is under test,
    not the events: any name is written as it comes)."""
    journal.record(UnknownEvent(name, step, fields))


def test_layout_bindings_and_outputs(vm: Any) -> None:
    source = """input topic: "t"
let research = session "Research {topic}"
session "Anonymous one"
session "Anonymous two"
output report = session "Report"
  context: research
"""
    result = vm.run(source, vm.spy(), inputs={"topic": "owls"})
    root = result.run_dir
    assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{6}", root.name)
    assert root.parent == vm.project / ".prose" / "runs"
    for name in ("program.prose", "state.md", "journal.jsonl", "outputs.json", "run.json"):
        assert (root / name).is_file(), name
    for folder in ("bindings", "agents", "imports"):
        assert (root / folder).is_dir()
    assert (root / "program.prose").read_text() == source
    assert sorted(p.name for p in (root / "bindings").iterdir()) == [
        "anon_001.md",
        "anon_002.md",
        "report.md",
        "research.md",
        "topic.md",
    ]
    research = (root / "bindings" / "research.md").read_text()
    assert research == (
        '# research\n\nkind: let\n\nsource:\n```prose\nlet research = session "Research {topic}"\n```\n\n---\n\nok\n'
    )
    assert "kind: input" in (root / "bindings" / "topic.md").read_text()
    assert "kind: output" in (root / "bindings" / "report.md").read_text()
    assert json.loads((root / "outputs.json").read_text()) == {"report": "ok"}
    state = (root / "state.md").read_text().splitlines()
    assert state[0] == f"# run:{root.name} main.prose"
    assert state[1:5] == ["2→ research ✓", "3→ anon_001 ✓", "4→ anon_002 ✓", "5→ report ✓"]
    assert state[-1].startswith("---end ")
    meta = json.loads((root / "run.json").read_text())
    assert meta["status"] == "succeeded" and meta["inputs"] == {"topic": "owls"}


def test_failed_run_state_and_meta(vm: Any) -> None:
    result = vm.run('session "a"\nthrow "nope"\n', vm.spy())
    state = (result.run_dir / "state.md").read_text().splitlines()
    assert state[-1].startswith("---error ") and "nope" in state[-1]
    assert json.loads((result.run_dir / "run.json").read_text())["status"] == "failed"
    assert not (result.run_dir / "outputs.json").exists()


def test_block_bindings_are_scoped_by_execution_id(vm: Any) -> None:
    source = """block process(x):
  let result = session "Process {x}"
do process("a")
do process("b")
"""
    result = vm.run(source, vm.spy())
    names = sorted(p.name for p in (result.run_dir / "bindings").iterdir())
    assert names == ["result__1.md", "result__2.md"]
    scoped = (result.run_dir / "bindings" / "result__2.md").read_text()
    assert scoped.startswith("# result\n\nkind: let\nexecution_id: 2\n\nsource:\n```prose\n")
    assert scoped.endswith("```\n\n---\n\nok\n")


def test_step_ids_never_collide(vm: Any) -> None:
    source = """block twice(x):
  repeat 2:
    session "In block {x}"
let xs = ["a", "b"]
for x in xs:
  do twice(x)
let ys = xs | pmap:
  session "Map {item}"
parallel:
  do twice("p")
  do twice("q")
loop (max: 2):
  session "Loop"
"""
    result = vm.run(source, vm.spy())
    steps = [e["step"] for e in vm.events(result, "session_finished")]
    assert len(steps) == 4 + 2 + 4 + 2
    assert len(set(steps)) == len(steps)


def test_journal_group_commit_and_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"

    async def write_many() -> Journal:
        journal = Journal(path)
        journal.start()
        for i in range(500):
            append(journal, "tick", f"s{i}", n=i)
            if i % 50 == 0:
                await asyncio.sleep(0)
        await journal.close()
        return journal

    journal = asyncio.run(write_many())
    assert journal.events == 500
    assert 1 <= journal.fsyncs < 50  # batched, not one per event
    with path.open("ab") as handle:
        handle.write(b'{"ev": "torn", "st')  # a crash mid-write
    events = list(read_journal(path))
    assert [e["n"] for e in events] == list(range(500))

    async def append_after_crash() -> None:
        journal = Journal(path)
        append(journal, "after", "s", n=500)
        await journal.close()

    asyncio.run(append_after_crash())
    assert [e["n"] for e in read_journal(path)] == list(range(501))


def test_atomic_write_replaces_whole_file(tmp_path: Path) -> None:
    target = tmp_path / "b.md"
    write_atomically(target, "old")
    write_atomically(target, "new")
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["b.md"]


def test_find_run_by_id_prefix_and_path(vm: Any) -> None:
    result = vm.run('session "a"\n', vm.spy())
    assert find_run(vm.project, result.run_id) == result.run_dir
    assert find_run(vm.project, result.run_id[:17]) == result.run_dir
    assert find_run(vm.project, str(result.run_dir)) == result.run_dir
    assert find_run(vm.project, "nope") is None
    assert RunStore.open(result.run_dir).run_id == result.run_id


def test_binding_rewrites_coalesce_to_the_latest_value(vm: Any) -> None:
    source = (
        'let draft = "v0"\nrepeat 200 as i:\n  draft = session "Revise {i}"\noutput final = draft\n'
    )
    provider = vm.spy([{"match": "^Revise", "answer": [f"v{i}" for i in range(1, 201)]}])
    result = vm.run(source, provider)
    assert result.outputs == {"final": "v200"}
    assert (result.run_dir / "bindings" / "draft.md").read_text().endswith("---\n\nv200\n")
    assert [p.name for p in (result.run_dir / "bindings").iterdir() if p.name.startswith(".")] == []


def test_binding_writer_batches_puts_into_few_flushes(tmp_path: Path) -> None:
    writer = BackgroundWriter()
    for i in range(1000):
        writer.put(_write_binding, tmp_path / f"b{i % 10}.md", f"value {i}\n")
    time.sleep(writer.FLUSH_INTERVAL * 4)
    writer.put(_write_binding, tmp_path / "late.md", "late\n")
    writer.close()
    assert writer.error is None
    assert writer.flushes <= 3  # not one wake-up per put
    assert writer.writes <= 11 + 10  # rewrites of one name coalesce
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f"b{i}.md" for i in range(10)] + ["late.md"]
    )
    assert (tmp_path / "b3.md").read_text() == "value 993\n"


def test_binding_writer_close_flushes_at_once(tmp_path: Path) -> None:
    writer = BackgroundWriter("prose-writer-test")
    writer.FLUSH_INTERVAL = 60.0  # close must not wait for the interval
    writer.put(_write_binding, tmp_path / "x.md", "x\n")
    started = time.monotonic()
    writer.close()
    assert time.monotonic() - started < 5
    assert (tmp_path / "x.md").read_text() == "x\n"
    assert not any(t.name == "prose-writer-test" for t in threading.enumerate())


def test_one_writer_serves_bindings_and_audit_trails_in_put_order(tmp_path: Path) -> None:
    """Two kinds of sink share the thread; each key's items arrive whole and in order, and
    a failing sink is reported without stopping the others."""
    seen: list[tuple[str, list[int]]] = []

    def collect(key: str, items: list[int]) -> None:
        seen.append((key, items))

    def broken(key: str, items: list[int]) -> None:
        raise OSError(28, "No space left on device")

    writer = BackgroundWriter()
    for i in range(6):
        writer.put(collect, "trail", i)
        writer.put(_write_binding, tmp_path / "b.md", f"v{i}\n")
    writer.put(broken, "full", 0)
    writer.flush()
    assert seen == [("trail", [0, 1, 2, 3, 4, 5])]
    assert (tmp_path / "b.md").read_text() == "v5\n"
    assert writer.error is not None and writer.error.errno == 28
    writer.put(collect, "trail", 6)
    writer.close()
    assert seen[-1] == ("trail", [6])


def test_journal_group_commit_flushes_within_its_interval(tmp_path: Path) -> None:
    async def scenario() -> tuple[int, int, int]:
        journal = Journal(tmp_path / "journal.jsonl")
        journal.start()
        for i in range(100):
            append(journal, "tick", f"s{i}")
        before = journal.fsyncs
        await asyncio.sleep(journal.COMMIT_INTERVAL * 20)  # the interval plus an fsync
        after_burst = journal.fsyncs
        await journal.close()
        return before, after_burst, journal.fsyncs

    before, after_burst, total = asyncio.run(scenario())
    assert before == 0  # appends never wait for the disk
    assert after_burst == 1  # one fsync for the whole burst, within the interval
    assert total == 2  # plus the final one at close


def test_run_json_is_written_from_memory(vm: Any) -> None:
    result = vm.run('session "a"\n', vm.spy(), inputs=None)
    meta = json.loads((result.run_dir / "run.json").read_text())
    assert meta["status"] == "succeeded" and meta["usage"]["requests_sent"] == 1
    assert meta["run_id"] == result.run_id and "started" in meta and "finished" in meta
    assert (result.run_dir / "run.json").read_text().startswith('{\n  "run_id": ')


def test_journal_writes_once_per_loop_turn_and_at_once_when_flushed(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    seen_when_written: list[list[str]] = []

    async def scenario() -> tuple[list[str], list[str], list[str], Journal]:
        journal = Journal(path, durable=False)
        journal.when_written(lambda: seen_when_written.append(steps_on_disk()))
        journal.start()
        for step in ("1", "2", "3"):
            append(journal, "session_finished", step)
        same_turn = steps_on_disk()  # nothing is written while the turn goes on
        await asyncio.sleep(0)
        next_turn = steps_on_disk()  # all of them, in one write
        append(journal, "tool_call", "4")
        journal.flush()  # a barrier: written at once
        flushed = steps_on_disk()
        append(journal, "session_started", "5")
        await journal.close()  # writes what is pending
        return same_turn, next_turn, flushed, journal

    def steps_on_disk() -> list[str]:
        return [e["step"] for e in read_journal(path)]

    same_turn, next_turn, flushed, journal = asyncio.run(scenario())
    assert same_turn == []
    assert next_turn == ["1", "2", "3"]
    assert flushed == ["1", "2", "3", "4"]
    assert steps_on_disk() == ["1", "2", "3", "4", "5"]
    assert journal.writes == 3 and journal.events == 5
    # Hooks run after the write, so what follows the journal never gets ahead of it.
    assert seen_when_written == [["1", "2", "3"], ["1", "2", "3", "4"], ["1", "2", "3", "4", "5"]]
    times = [e["t"] for e in read_journal(path)]
    assert times == sorted(times)  # each event keeps the time it happened


def test_a_failed_turn_write_is_raised_by_the_next_event_and_retried_at_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "journal.jsonl"
    real_write = os.write
    full = [True]

    def write(fd: int, data: Any) -> int:
        if full[0]:
            raise OSError(28, "No space left on device")
        return real_write(fd, data)

    async def scenario() -> OSError:
        journal = Journal(path, durable=False)
        journal.start()
        append(journal, "session_finished", "1")
        monkeypatch.setattr(os, "write", write)
        await asyncio.sleep(0)  # the turn's write fails
        with pytest.raises(OSError) as raised:
            append(journal, "session_finished", "2")
        full[0] = False
        await journal.close()
        return raised.value

    error = asyncio.run(scenario())
    assert error.errno == 28
    assert [e["step"] for e in read_journal(path)] == ["1"]  # kept, written once there was room


def test_journal_writes_every_event_at_once_without_an_event_loop(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.jsonl", durable=False)  # not started
    append(journal, "session_started", "1")
    assert [e["ev"] for e in read_journal(tmp_path / "journal.jsonl")] == ["session_started"]
    asyncio.run(journal.close())


def test_state_md_never_says_more_than_the_journal_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """state.md lines wait for the journal's write (once per event-loop turn): a session
    marked ✓ there is in the journal, whatever moment a kill -9 picks."""
    from openprose.parser import parse_text
    from openprose.providers import ScriptedProvider
    from openprose.vm.runner import run_program

    checked: list[tuple[list[str], set[str]]] = []
    real = RunStore.write_held_state

    def write_held_state(store: RunStore) -> None:
        held = list(store._held_state or [])
        journaled = {
            e["step"]
            for e in read_journal(store.root / "journal.jsonl")
            if e["ev"] == "session_finished"
        }
        marked = [line.split("→")[0] for line in held if line.rstrip().endswith("✓")]
        checked.append((marked, journaled))
        real(store)

    monkeypatch.setattr(RunStore, "write_held_state", write_held_state)
    source = 'let a = session "One"\nlet b = session "Two"\nlet c = session "Three"\n'
    program = parse_text(source, str(tmp_path / "main.prose")).program
    provider = ScriptedProvider([], default="ok", latency=0.01)
    result = asyncio.run(run_program(program, source, provider=provider, project_dir=tmp_path))
    assert result.status == "succeeded"
    assert sorted(step for marked, _ in checked for step in marked) == ["1", "2", "3"]
    for marked, journaled in checked:
        assert set(marked) <= journaled
    lines = (result.run_dir / "state.md").read_text().splitlines()
    assert [line for line in lines if line.endswith("✓")] == ["1→ a ✓", "2→ b ✓", "3→ c ✓"]


def _binding_text(name: str, kind: str, source: str, value_text: str, execution_id: int) -> str:
    """A binding file's text as it was built whole before bindings were written in pieces
    (state/filesystem.md's layout): the pieces must give the very same bytes."""
    scope = f"execution_id: {execution_id}\n" if execution_id else ""
    return (
        f"# {name}\n\nkind: {kind}\n{scope}\nsource:\n```prose\n{source}\n```\n\n---\n\n"
        f"{value_text}\n"
    )


@pytest.mark.parametrize("execution_id", [None, 3])
def test_a_binding_written_in_pieces_has_the_bytes_of_the_whole_text(
    tmp_path: Path, execution_id: int | None
) -> None:
    # ~1.9 MB of text with non-ASCII in every piece: many encoding batches, cut anywhere
    pieces = [f"\n\n[{i + 1}] réponse {i} — ✓" if i else "[1] réponse 0" for i in range(60_000)]
    store = RunStore.create(tmp_path, 'output results = items | pmap:\n  session "x"\n', "p.prose")
    source = 'output results = items | pmap:\n  session "x"'
    store.write_binding("results", "output", source, iter(pieces), execution_id)
    store.write_binding("whole", "output", source, "".join(pieces), execution_id)
    store.write_binding("empty", "let", "", iter([]), execution_id)
    store.close()
    suffix = f"__{execution_id}" if execution_id else ""
    expected = _binding_text("results", "output", source, "".join(pieces), execution_id or 0)
    assert (store.bindings / f"results{suffix}.md").read_bytes() == expected.encode("utf-8")
    whole = _binding_text("whole", "output", source, "".join(pieces), execution_id or 0)
    assert (store.bindings / f"whole{suffix}.md").read_bytes() == whole.encode("utf-8")
    empty = _binding_text("empty", "let", "", "", execution_id or 0)
    assert (store.bindings / f"empty{suffix}.md").read_bytes() == empty.encode("utf-8")
    assert [p.name for p in store.bindings.iterdir() if p.name.startswith(".")] == []


def test_a_rewritten_binding_makes_only_its_latest_pieces(tmp_path: Path) -> None:
    """A name rebound many times in one writer batch is rendered once: the earlier
    values' pieces are never taken."""
    taken: list[int] = []

    def pieces(n: int) -> Any:
        taken.append(n)
        yield f"v{n}"

    writer = BackgroundWriter()
    for n in range(50):
        writer.put(_write_binding, tmp_path / "draft.md", pieces(n))
    writer.close()
    assert (tmp_path / "draft.md").read_text() == "v49"
    assert taken == [49]


def test_a_pmap_result_binding_is_its_rendered_value(vm: Any) -> None:
    """End to end: the list a fan-out binds (written in pieces on the writer thread) reads
    back as the whole text of its value."""
    source = 'input items: "the items"\noutput results = items | pmap:\n  session "Item {item}"\n'
    items = [f"é{i}" for i in range(300)]
    result = vm.run(source, vm.spy(), inputs={"items": items})
    value_text = "\n\n".join(
        f"[{i + 1}] {answer}" for i, answer in enumerate(result.outputs["results"])
    )
    text = (result.run_dir / "bindings" / "results.md").read_text(encoding="utf-8")
    assert text.endswith(f"---\n\n{value_text}\n")
    items_text = (result.run_dir / "bindings" / "items.md").read_text(encoding="utf-8")
    assert items_text.endswith(
        "---\n\n" + "\n\n".join(f"[{i + 1}] é{i}" for i in range(300)) + "\n"
    )


def test_outputs_json_is_indented_json_with_a_final_newline(tmp_path: Path) -> None:
    """orjson appends the newline itself (no copy of a big outputs text): same bytes."""
    store = RunStore.create(tmp_path, "output x = 1\n", "p.prose")
    outputs = {"results": ["a", "é", {"k": [1, None]}], "n": 2, "empty": []}
    store.write_outputs(outputs)
    store.close()
    written = (store.root / "outputs.json").read_bytes()
    assert written == (json.dumps(outputs, indent=2, ensure_ascii=False) + "\n").encode("utf-8")

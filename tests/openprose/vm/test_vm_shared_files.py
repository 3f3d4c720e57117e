"""Files several runs share: the import cache index and `persist: project` memory are written
under a file lock (two runs at once lose nothing), and a cached import is checked against its
hash before a resume runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from openprose.imports import Fetched, ImportCache, ImportFailed, fetch, sha256_of
from openprose.vm.memory import AgentMemory

WRITERS, EACH = 4, 15


def _store_imports(project: str, writer: int) -> None:
    cache = ImportCache(Path(project))
    for index in range(EACH):
        text = f'session "program {writer}-{index}"\n'
        cache.store(Fetched(f"@w{writer}/p{index}", text, sha256_of(text), "test"))


def _write_memory(folder: str, writer: int) -> list[int]:
    memory = AgentMemory("keeper", Path(folder))
    return [memory.write(f"note {writer}-{i}", f"task {writer}-{i}") for i in range(EACH)]


def test_concurrent_writers_keep_every_import_index_entry(tmp_path: Path) -> None:
    with ProcessPoolExecutor(WRITERS) as pool:
        list(pool.map(_store_imports, [str(tmp_path)] * WRITERS, range(WRITERS)))
    index = json.loads((tmp_path / ".prose" / "imports" / "index.json").read_text())
    assert len(index) == WRITERS * EACH
    assert all(ImportCache(tmp_path).latest(spec) is not None for spec in index)


def test_concurrent_writers_keep_every_memory_segment(tmp_path: Path) -> None:
    folder = tmp_path / "agents" / "keeper"
    with ProcessPoolExecutor(WRITERS) as pool:
        numbers = [
            n for ns in pool.map(_write_memory, [str(folder)] * WRITERS, range(WRITERS)) for n in ns
        ]
    assert sorted(numbers) == list(range(1, WRITERS * EACH + 1))  # no number given twice
    segments = sorted(folder.glob("keeper-*.md"))
    assert len(segments) == WRITERS * EACH
    notes = {s.read_text().rsplit("\n\n", 1)[1].strip() for s in segments}
    assert notes == {f"note {w}-{i}" for w in range(WRITERS) for i in range(EACH)}


PROGRAM = """agent keeper:
  model: haiku
  persist: project
  prompt: "You keep notes"

session: keeper
  prompt: "Note {n}"
"""


def test_concurrent_prose_runs_share_project_memory(tmp_path: Path) -> None:
    """Real `prose run` processes at once, each adding segments to one project memory."""
    (tmp_path / "keep.prose").write_text('input n: "which note"\n' + PROGRAM)
    (tmp_path / "rules.yaml").write_text('default: "noted"\n')
    runs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "openprose.cli",
                "-q",
                "run",
                "keep.prose",
                "--provider",
                "scripted:rules.yaml",
                "--input",
                f"n={n}",
                "--json",
            ],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(4)
    ]
    for run in runs:
        out, err = run.communicate(timeout=120)
        assert run.returncode == 0, err
        assert json.loads(out)["status"] == "succeeded"
    segments = sorted((tmp_path / ".prose" / "agents" / "keeper").glob("keeper-*.md"))
    assert [s.name for s in segments] == [f"keeper-{n:03d}.md" for n in range(1, 5)]
    prompts = {
        line for s in segments for line in s.read_text().splitlines() if line.startswith("prompt:")
    }
    assert len(prompts) == 4  # each run's own segment, none overwritten


def test_a_changed_cached_import_is_refused(tmp_path: Path) -> None:
    text = 'session "the original"\n'
    digest = sha256_of(text)
    cache = ImportCache(tmp_path)
    cache.store(Fetched("@alice/p", text, digest, "test"))
    assert fetch("@alice/p", base_dir=None, cache=cache, pinned=digest).text == text
    (cache.folder / f"{digest}.prose").write_text('session "something else"\n')
    with pytest.raises(ImportFailed, match="changed since it was fetched"):
        fetch("@alice/p", base_dir=None, cache=cache, pinned=digest)


def test_resume_refuses_a_changed_cached_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from openprose.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PROSE_PROVIDER", raising=False)
    library = 'input topic: "t"\noutput findings = session "Research {topic}"\n'
    digest = sha256_of(library)
    ImportCache(tmp_path).store(Fetched("@alice/research", library, digest, "test"))
    (tmp_path / "main.prose").write_text(
        'use "@alice/research" as research\nlet r = research(topic: "x")\n'
        'output s = session "Fail with {r.findings}"\n'
    )
    (tmp_path / "rules.yaml").write_text(
        'default: "ok"\nrules:\n  - match: "^Fail"\n    answer: "x"\n'
        "    failures: [error, error, error, error, error, error]\n"
    )
    monkeypatch.setenv("PROSE_REGISTRY", "http://127.0.0.1:9")  # offline: the cache serves it
    assert main(["run", "main.prose", "--provider", "scripted:rules.yaml", "--json"]) == 1
    run_id = json.loads(capsys.readouterr().out)["run_id"]
    (tmp_path / ".prose" / "imports" / f"{digest}.prose").write_text(
        'input topic: "t"\noutput findings = session "Something else {topic}"\n'
    )
    assert main(["resume", run_id, "--provider", "scripted:rules.yaml"]) == 2
    err = capsys.readouterr().err
    assert "changed since it was fetched" in err and "Traceback" not in err

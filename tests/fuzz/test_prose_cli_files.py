"""Fuzz every file the `prose` CLI takes, through its entry point in this process: programs
(check, compile, fmt), `--inputs`, `scripted:` rules, `replay:` cassettes, prose.toml, and
every file of a run folder (show, runs, resume). Any traceback, "internal error" or
undocumented exit status fails (see `prose_corpus.prose`)."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.prose_corpus import FUZZ, PROGRAMS, Counter, in_folder, mutated, prose

COUNTER = Counter()

PROGRAM = (
    'input topic: "what to write about"\n'
    'let a = session "Research {topic}"\n'
    'output b = session "Summarise"\n'
    "  context: a\n"
    "if **the summary is short**:\n"
    '  session "Expand"\n'
)
INPUTS = [
    b'{"topic": "owls"}',
    b'{"topic": ["a", "b", {"c": 1.5, "d": null}], "extra": true}',
    b'{\n  "topic": "\\u00e9t\\u00e9 \\ud83e\\udd89"\n}\n',
]
RULES = [
    (
        b'default: "ok"\nrules:\n  - match: "^Research"\n    answer: "facts"\n'
        b'  - match: "summary is short"\n    answer: \'{"verdict": false, "reason": "long"}\'\n'
    ),
    (
        b'rules:\n  - match: "."\n    answer: ["one", "two"]\n    failures: [error]\n'
        b'  - match: "x"\n    system: "y"\n    answer: "z"\ndefault: "d"\n'
    ),
    b'[{"match": "Research", "answer": "r"}, {"match": "", "answer": "any"}]',
    b'{"default": "ok", "rules": [{"match": "a", "answer": ["x"]}]}',
]
TOML = [
    (
        b'provider = "scripted:rules.yaml"\nmax_concurrency = 4\ntimeout = 30\n'
        b"[retry]\nmax_attempts = 2\nbase_delay = 0.5\n"
        b'[vm]\ncontext_budget = 100000\ndefault_model = "haiku"\n'
    ),
    (
        b"[imports]\nmax_bytes = 1048576\ntimeout = 30\nallow_http = false\n"
        b'[providers.openai]\nbase_url = "http://127.0.0.1:9/v1"\napi_key_env = "X_API_KEY"\n'
        b'[providers.openai.models]\nsonnet = "m"\n'
    ),
]
RUN_FILES = ("run.json", "journal.jsonl", "outputs.json", "program.prose", "state.md")


@pytest.fixture(scope="module", autouse=True)
def report() -> Iterator[None]:
    yield
    COUNTER.report()


@pytest.fixture(scope="module")
def project() -> Iterator[Path]:
    """A project with a program, its inputs and rules, a recorded cassette and a run."""
    folder = Path(tempfile.mkdtemp(prefix="prose-cli-fuzz-"))
    (folder / "p.prose").write_text(PROGRAM)
    (folder / "in.json").write_bytes(INPUTS[0])
    (folder / "rules.yaml").write_bytes(RULES[0])
    with in_folder(folder):
        run = ["run", "p.prose", "--inputs", "in.json", "--provider", "scripted:rules.yaml"]
        assert prose(*run, "--record", "tape.jsonl", "--json").code == 0
        runs = folder / ".prose" / "runs"
        shutil.move(str(next(runs.iterdir())), folder / "template")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _forget_runs(project: Path) -> None:
    shutil.rmtree(project / ".prose" / "runs", ignore_errors=True)


def _run(project: Path, *args: str) -> None:
    with in_folder(project):
        try:
            prose("run", "p.prose", "--json", *args)
        finally:
            _forget_runs(project)


@FUZZ
@given(data=mutated(PROGRAMS))
def test_prose_program_file_for_check_compile_fmt(project: Path, data: bytes) -> None:
    COUNTER.tick("cli.program")
    (project / "f.prose").write_bytes(data)
    with in_folder(project):
        prose("check", "f.prose")
        prose("check", "--format", "json", "f.prose")
        prose("compile", "f.prose")
        prose("fmt", "--check", "f.prose")


@FUZZ
@given(data=mutated(INPUTS))
def test_prose_inputs_file(project: Path, data: bytes) -> None:
    COUNTER.tick("cli.inputs")
    (project / "fuzz.json").write_bytes(data)
    _run(project, "--inputs", "fuzz.json", "--provider", "scripted:rules.yaml")


@FUZZ
@given(data=mutated(RULES), suffix=st.sampled_from([".yaml", ".json", ".yml"]))
def test_prose_scripted_rules_file(project: Path, data: bytes, suffix: str) -> None:
    COUNTER.tick("cli.rules")
    (project / f"fuzz{suffix}").write_bytes(data)
    _run(project, "--inputs", "in.json", "--provider", f"scripted:fuzz{suffix}")


@FUZZ
@given(data=st.data())
def test_prose_replay_cassette(project: Path, data: st.DataObject) -> None:
    COUNTER.tick("cli.cassette")
    seeds = [
        (project / "tape.jsonl").read_bytes(),
        (project / "template" / "journal.jsonl").read_bytes(),
    ]
    (project / "fuzz.jsonl").write_bytes(data.draw(mutated(seeds)))
    _run(project, "--inputs", "in.json", "--provider", "replay:fuzz.jsonl")


@FUZZ
@given(data=mutated(TOML))
def test_prose_toml(project: Path, data: bytes) -> None:
    COUNTER.tick("cli.prose_toml")
    (project / "prose.toml").write_bytes(data)
    try:
        _run(project, "--inputs", "in.json", "--provider", "scripted:rules.yaml")
    finally:
        (project / "prose.toml").unlink()


@FUZZ
@given(which=st.sampled_from(RUN_FILES), data=st.data())
def test_prose_run_folder_files(project: Path, which: str, data: st.DataObject) -> None:
    COUNTER.tick("cli.run_folder")
    _forget_runs(project)
    run_dir = project / ".prose" / "runs" / "20260101-000000-fuzz00"
    shutil.copytree(project / "template", run_dir)
    seed = (run_dir / which).read_bytes()
    (run_dir / which).write_bytes(data.draw(mutated([seed])))
    meta = run_dir / "run.json"
    if which != "run.json":  # an interrupted run, so that resume continues it
        record = json.loads(meta.read_text())
        record["status"] = "running"
        record["pid"] = 0
        meta.write_text(json.dumps(record))
    try:
        with in_folder(project):
            prose("show", run_dir.name)
            prose("show", run_dir.name, "--json")
            prose("runs")
            prose("resume", run_dir.name, "--provider", "scripted:rules.yaml", "--json")
    finally:
        _forget_runs(project)

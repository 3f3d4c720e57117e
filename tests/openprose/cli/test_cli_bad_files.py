"""Issue 17: files the user names (programs, --inputs, rules, cassettes, prose.toml) and run
folders that are damaged give a usage error naming the file and the problem, never an
"internal error" or a traceback, and never read without bound."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from openprose.cli import main

PROGRAM = 'input topic: "a topic"\nsession "Write about {topic}"\n'
RULES = 'default: "ok"\nrules: []\n'


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PROSE_PROVIDER", raising=False)
    (tmp_path / "p.prose").write_text(PROGRAM)
    (tmp_path / "rules.yaml").write_text(RULES)
    (tmp_path / "in.json").write_text('{"topic": "owls"}')
    return tmp_path


def prose(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    err = capsys.readouterr().err
    assert "internal error" not in err and "Traceback" not in err, err
    return code, err


def run_with(*extra: str) -> list[str]:
    args = ["run", "p.prose", "--provider", "scripted:rules.yaml", "--inputs", "in.json"]
    for option in extra:
        name, _, value = option.partition("=")
        if name in args:
            args[args.index(name) + 1] = value
        else:
            args += [name, value]
    return args


# --- item 6: devices and endless inputs --------------------------------------------------


@pytest.mark.parametrize(
    "option",
    ["--inputs=/dev/zero", "--provider=scripted:/dev/zero", "--provider=replay:/dev/zero"],
)
def test_a_device_is_refused_where_a_file_is_expected(
    project: Path, capsys: pytest.CaptureFixture[str], option: str
) -> None:
    code, err = prose(capsys, *run_with(option))
    assert code == 2
    assert "/dev/zero" in err and "is a device, not a regular file" in err


def test_inputs_larger_than_the_limit_are_refused(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from openprose.session import opening

    monkeypatch.setattr(opening, "INPUTS_LIMIT", 1000)
    (project / "in.json").write_text(json.dumps({"topic": "x" * 2000}))
    code, err = prose(capsys, *run_with())
    assert code == 2 and "in.json: larger than the 1,000 bytes limit" in err


def test_an_endless_pipe_stops_at_the_limit(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A FIFO is read (`--inputs <(generate)`), but never past the limit."""
    import threading

    from openprose.session import opening

    monkeypatch.setattr(opening, "INPUTS_LIMIT", 64 * 1024)
    fifo = project / "endless"
    os.mkfifo(fifo)
    stop = threading.Event()

    def writer() -> None:
        try:
            with open(fifo, "wb") as pipe:
                while not stop.is_set():
                    pipe.write(b" " * 4096)
        except BrokenPipeError:
            pass

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        code, err = prose(capsys, *run_with(f"--inputs={fifo}"))
    finally:
        stop.set()
        thread.join(timeout=5)
    assert code == 2 and "endless: larger than the 65,536 bytes limit" in err


def test_a_huge_cassette_is_refused(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from openprose.providers import replay

    monkeypatch.setattr(replay, "CASSETTE_LIMIT", 100)
    (project / "c.jsonl").write_text("\n" * 200)
    code, err = prose(capsys, *run_with("--provider=replay:c.jsonl"))
    assert code == 2 and "c.jsonl: larger than the 100 bytes limit" in err


# --- items 5 and 7: malformed rules files, inputs and cassettes --------------------------


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"default: ok\nrules: []\n# \xff\xfe\n", "not UTF-8"),
        (b"rules:\n  - just a string\n", "rule 1 must be a mapping"),
        (b"rules:\n  - match: 'a{99999999999}'\n    answer: x\n", "bad regex"),
        (b"latency_ms: " + b"9" * 5000 + b"\nrules: []\n", "rules.yaml"),
        (b"latency_ms: 1e400\nrules: []\n", "latency_ms"),
        (b"rules:\n  - answer: x\n    failures: 7\n", "`failures` must be a list"),
        (b"rules: " + b"[" * 5000 + b"]" * 5000 + b"\n", "rules.yaml"),
    ],
)
def test_a_malformed_rules_file_is_a_usage_error_naming_it(
    project: Path, capsys: pytest.CaptureFixture[str], content: bytes, expected: str
) -> None:
    (project / "rules.yaml").write_bytes(content)
    code, err = prose(capsys, *run_with())
    assert code == 2
    assert expected in err and "rules.yaml" in err


def test_a_deep_json_rules_file_is_a_usage_error(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "rules.json").write_text("[" * 100_000 + "]" * 100_000)
    code, err = prose(capsys, *run_with("--provider=scripted:rules.json"))
    assert code == 2 and "rules.json: nested too deeply" in err


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"topic": ' + "[" * 100_000 + "]" * 100_000 + "}", "JSON nested too deeply"),
        ('{"topic": ' + "9" * 5000 + "}", "invalid JSON"),
        ('{"topic": "\udcff"}', "not UTF-8"),
        ('{"topic": "\\udd89"}', "cannot be recorded in the run"),  # a lone surrogate escape
        ('{"topic": ' + "[" * 300 + "]" * 300 + "}", "cannot be recorded in the run"),
    ],
)
def test_malformed_inputs_are_a_usage_error_naming_the_file(
    project: Path, capsys: pytest.CaptureFixture[str], content: str, expected: str
) -> None:
    (project / "in.json").write_bytes(content.encode("utf-8", "surrogateescape"))
    code, err = prose(capsys, *run_with())
    assert code == 2 and "--inputs in.json" in err and expected in err


def test_a_deeply_nested_cassette_line_is_a_usage_error(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "c.jsonl").write_text('{"key": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    code, err = prose(capsys, *run_with("--provider=replay:c.jsonl"))
    assert code == 2 and "c.jsonl:1: JSON nested too deeply" in err


def test_a_cassette_number_beyond_any_float_is_a_usage_error(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Found by tests/fuzz: `"max_tokens": 1e400` is infinity, which no int holds."""
    record = {
        "key": "k",
        "request": {"model": "m", "messages": [], "max_tokens": 1e400},
        "response": {"text": "x"},
    }
    (project / "c.jsonl").write_text(json.dumps(record).replace("Infinity", "1e400") + "\n")
    code, err = prose(capsys, *run_with("--provider=replay:c.jsonl"))
    assert code == 2 and "c.jsonl:1 is not a cassette record" in err


# --- items 7 and 10: symlink loops -------------------------------------------------------


@pytest.mark.parametrize("role", ["program", "inputs", "rules", "cassette"])
def test_a_symlink_loop_is_named_as_one(
    project: Path, capsys: pytest.CaptureFixture[str], role: str
) -> None:
    (project / "loop").symlink_to(project / "loop")
    args = {
        "program": ["run", "loop", "--provider", "scripted:rules.yaml"],
        "inputs": run_with("--inputs=loop"),
        "rules": run_with("--provider=scripted:loop"),
        "cassette": run_with("--provider=replay:loop"),
    }[role]
    code, err = prose(capsys, *args)
    assert code == 2
    assert "loop" in err and "symlink loop" in err and "no such file" not in err


def test_prose_check_names_a_symlink_loop(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "loop.prose").symlink_to(project / "loop.prose")
    code, err = prose(capsys, "check", "loop.prose")
    out = capsys.readouterr().out
    assert code != 0
    assert "no such file" not in (err + out).lower()


# --- item 5: prose.toml numbers ----------------------------------------------------------


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        ("max_concurrency = " + "9" * 5000, "a number is too long"),
        ("max_concurrency = 1" + "0" * 400, "`max_concurrency`"),
        ("timeout = inf", "must be a finite number"),
        ("max_concurrency = " + "[" * 3000 + "]" * 3000, "nested too deeply"),  # found by fuzz
        ("[retry]\nbase_delay = 1" + "0" * 400, "`base_delay`"),
        ("[vm]\ncontext_budget = 1" + "0" * 400, "[vm] context_budget is out of range"),
    ],
)
def test_numbers_in_prose_toml_are_bounded(
    project: Path, capsys: pytest.CaptureFixture[str], toml: str, expected: str
) -> None:
    (project / "prose.toml").write_text(toml + "\n")
    code, err = prose(capsys, *run_with())
    assert code == 2 and expected in err


# --- item 7: damaged run folders on resume -----------------------------------------------


@pytest.fixture
def finished_run(project: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    assert main([*run_with(), "--json"]) == 0
    capsys.readouterr()
    run_dir = next((project / ".prose" / "runs").iterdir())
    # Pretend it was interrupted, so that a resume continues it (a success is not resumed).
    meta = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**meta, "status": "failed"}))
    return run_dir


def test_resume_of_a_non_utf8_program_is_a_usage_error(
    finished_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (finished_run / "program.prose").write_bytes(b'session "\xff"\n')
    code, err = prose(capsys, "resume", finished_run.name, "--provider", "scripted:rules.yaml")
    assert code == 2 and "program.prose: damaged, not UTF-8" in err


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("launch", 5, "`launch` should be an object"),
        ("launch", {"models": "sonnet"}, "`launch.models` should be a list of strings"),
        ("launch", {"max_concurrency": "x"}, "`launch.max_concurrency` should be a positive"),
        ("import_pins", [1], "`import_pins` should be an object"),
        ("config", "fast", "`config` should be an object"),
        ("config", {"context_budget": "many"}, "run.json"),
        ("inputs", [1, 2], "`inputs` should be an object"),
        ("program", {"a": 1}, "`program` should be a string"),
    ],
)
def test_resume_of_a_wrongly_typed_run_json_is_a_usage_error(
    finished_run: Path,
    capsys: pytest.CaptureFixture[str],
    field: str,
    value: object,
    expected: str,
) -> None:
    meta_path = finished_run / "run.json"
    meta = json.loads(meta_path.read_text())
    meta[field] = value
    meta_path.write_text(json.dumps(meta))
    code, err = prose(capsys, "resume", finished_run.name)
    assert code == 2 and expected in err and "run.json" in err


@pytest.mark.parametrize(
    "event",
    [
        {"ev": "session_finished", "step": "2"},
        {"ev": "session_finished", "step": "2", "response": {"text": "x", "usage": [1]}},
        {"ev": "memory_updated", "step": "2!memory", "memory": "m"},
        {"ev": "race_decided", "step": "2", "won": 3, "failed": []},
    ],
)
def test_resume_of_a_damaged_journal_is_a_usage_error_naming_the_event(
    finished_run: Path, capsys: pytest.CaptureFixture[str], event: dict[str, object]
) -> None:
    """Found by tests/fuzz: a served event of the wrong shape was an internal error."""
    with (finished_run / "journal.jsonl").open("a") as journal:
        journal.write(json.dumps(event) + "\n")
    code, err = prose(capsys, "resume", finished_run.name, "--provider", "scripted:rules.yaml")
    assert code == 2
    assert "journal.jsonl: event" in err and "is damaged" in err and str(event["ev"]) in err


# --- item 8: prose show / prose runs on damaged run folders ------------------------------


def test_show_names_a_garbage_outputs_file_and_shows_the_rest(
    finished_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (finished_run / "outputs.json").write_bytes(b"\x00garbage{")
    code = main(["show", finished_run.name])
    captured = capsys.readouterr()
    assert code == 0 and "Traceback" not in captured.err
    assert "steps (1)" in captured.out
    assert "damaged (1)" in captured.out and "outputs.json: not valid JSON" in captured.out


@pytest.mark.parametrize(
    "event",
    [
        {"ev": "session_finished", "step": "9", "response": "text"},
        {"ev": "session_finished", "step": "9", "response": {"text": "x", "usage": None}},
        {"ev": "session_cancelled"},
        {"ev": "decision", "step": "9", "kind": None, "question": [1], "verdict": {}},
    ],
)
def test_show_skips_an_event_of_the_wrong_shape_and_names_it(
    finished_run: Path, capsys: pytest.CaptureFixture[str], event: dict[str, object]
) -> None:
    with (finished_run / "journal.jsonl").open("a") as journal:
        journal.write(json.dumps(event) + "\n")
    for extra in ([], ["--json"]):
        code = main(["show", finished_run.name, *extra])
        captured = capsys.readouterr()
        assert code == 0 and "Traceback" not in captured.err
        assert "steps (1)" in captured.out or '"steps"' in captured.out


def test_show_names_a_journal_that_is_a_folder(
    finished_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (finished_run / "journal.jsonl").unlink()
    (finished_run / "journal.jsonl").mkdir()
    code = main(["show", finished_run.name, "--json"])
    shown = json.loads(capsys.readouterr().out)
    assert code == 0
    assert shown["steps"] == [] and "journal.jsonl: cannot read" in shown["damaged"][0]


def test_runs_lists_a_deeply_nested_run_json_as_damaged(
    finished_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (finished_run / "run.json").write_text("[" * 100_000 + "]" * 100_000)
    code = main(["runs", "--json"])
    rows = json.loads(capsys.readouterr().out)
    assert code == 0 and rows[0]["status"] == "damaged"


# --- a program file far larger than any program ------------------------------------------


@pytest.mark.parametrize("command", ["check", "compile", "fmt", "run"])
def test_a_huge_program_file_is_refused_unread(
    command: str, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 3 GB file named as a program (a log, a data file) was read whole: 6 GB of memory and
    20 s for `prose check`. It is refused at 64 MiB with E118, unread."""
    import time

    huge = project / "huge.prose"
    with huge.open("wb") as handle:
        handle.truncate(3 * 1024**3)  # sparse: no disk space used
    started = time.perf_counter()
    code, err = prose(
        capsys,
        command,
        "huge.prose",
        *(["--provider", "scripted:rules.yaml"] if command == "run" else []),
    )
    assert time.perf_counter() - started < 10
    assert code == 2
    assert "larger than the 64 MiB limit for a program" in err


def test_a_huge_program_on_stdin_is_refused(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    from openprose.parser import PROGRAM_LIMIT

    class Stdin:
        buffer = io.BytesIO(b"#" * (PROGRAM_LIMIT + 10))

    monkeypatch.setattr("sys.stdin", Stdin())
    code, err = prose(capsys, "check", "-")
    assert code == 2
    assert "prose: -: cannot read file: larger than the 64 MiB limit for a program" in err


def test_a_program_whose_file_name_is_not_utf8_runs_and_is_recorded_as_shown(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Linux file names are bytes: `\\xff.prose` reaches Python as a surrogate escape, which
    run.json and state.md (UTF-8) cannot hold; it was an internal error."""
    name = b"\xff.prose".decode("utf-8", "surrogateescape")
    (project / name).write_text('session "x"\n')
    code, err = prose(capsys, "run", name, "--provider", "scripted:rules.yaml", "-q")
    assert code == 0, err
    (run,) = (project / ".prose" / "runs").iterdir()
    assert json.loads((run / "run.json").read_text())["program"] == "\ufffd.prose"
    assert main(["resume", run.name, "-q"]) == 0

"""`prose check`: text and JSON output, exit codes, directories, hostile input."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from openprose.cli.check import summary

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
Run = Callable[..., tuple[int, str, str]]
KEYS = {
    *("path", "line", "column", "end_line", "end_column", "code", "severity", "message"),
    *("rule", "help", "fix"),
}


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_clean_file_exits_zero_with_summary(prose: Run, tmp_path: Path) -> None:
    code, out, err = prose("check", write(tmp_path / "ok.prose", 'session "Hello world"\n'))
    assert (code, out, err) == (0, "1 file checked: 0 errors, 0 warnings\n", "")


def test_errors_print_location_code_and_caret(prose: Run, tmp_path: Path) -> None:
    path = write(tmp_path / "bad.prose", 'session "fine"\nsession: nobody\n')
    code, out, _ = prose("check", path)
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith(f"{path}:2:10: E007 ")
    assert lines[1] == "  session: nobody"
    assert lines[2] == "           ^^^^^^"
    assert lines[-1] == "1 file checked: 1 error, 0 warnings"


def test_warnings_alone_exit_zero(prose: Run, tmp_path: Path) -> None:
    code, out, _ = prose("check", write(tmp_path / "w.prose", 'session ""\n'))
    assert code == 0
    assert " W001 " in out
    assert out.endswith("1 file checked: 0 errors, 1 warning\n")


def test_json_is_one_array_with_the_agreed_keys(prose: Run, tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.prose", 'session: nobody\nsession ""\n')
    code, out, _ = prose("check", "--format", "json", bad)
    found = json.loads(out)
    assert code == 1
    assert [d["code"] for d in found] == ["E007", "W001"]
    assert all(set(d) == KEYS for d in found)
    assert found[0]["path"] == str(bad) and found[0]["severity"] == "error"


def test_json_clean_is_an_empty_array(prose: Run, tmp_path: Path) -> None:
    code, out, _ = prose("check", "--format", "json", write(tmp_path / "e.prose", ""))
    assert code == 0 and json.loads(out) == []


def test_directories_recurse_over_prose_files_in_sorted_order(prose: Run, tmp_path: Path) -> None:
    write(tmp_path / "b.prose", "session: ghost\n")
    write(tmp_path / "a" / "z.prose", "session: ghost\n")
    write(tmp_path / "a" / "c.prose", "session: ghost\n")
    write(tmp_path / "notes.txt", "session: ghost\n")
    code, out, _ = prose("check", "--format", "json", tmp_path)
    paths = [Path(d["path"]).relative_to(tmp_path).as_posix() for d in json.loads(out)]
    assert code == 1
    assert paths == ["a/c.prose", "a/z.prose", "b.prose"]


def test_missing_path_is_a_usage_error_but_others_are_still_checked(
    prose: Run, tmp_path: Path
) -> None:
    bad = write(tmp_path / "bad.prose", "session: nobody\n")
    code, out, err = prose("check", "--format", "json", tmp_path / "missing.prose", bad)
    assert code == 2
    assert "missing.prose" in err and "no such file" in err
    assert [d["code"] for d in json.loads(out)] == ["E007"]


def test_dangling_symlink_in_a_directory_is_unreadable(prose: Run, tmp_path: Path) -> None:
    (tmp_path / "gone.prose").symlink_to(tmp_path / "nowhere.prose")
    code, out, err = prose("check", tmp_path)
    assert code == 2
    assert "gone.prose" in err
    assert out == "0 files checked: 0 errors, 0 warnings\n"


def test_non_utf8_is_a_diagnostic(prose: Run, tmp_path: Path) -> None:
    path = write(tmp_path / "latin1.prose", 'session "caf\xe9"\n'.encode("latin-1"))
    code, out, _ = prose("check", path)
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith(f"{path}:1:13: E100 ")
    # The excerpt quotes a lossy decoding, caret under the offending byte.
    assert lines[1:3] == ['  session "caf\ufffd"', "  " + " " * 12 + "^"]


def test_deferred_checks_print_as_notes_without_failing(prose: Run) -> None:
    # The imported program's contract is unknown offline: the checker defers, as an info note.
    code, out, _ = prose("check", EXAMPLES / "program-composition.prose")
    assert code == 0
    assert " I0" in out
    assert out.splitlines()[-1].startswith("1 file checked: 0 errors, 0 warnings, ")


def test_hostile_inputs_give_diagnostics_and_valid_json(prose: Run, tmp_path: Path) -> None:
    nested = "".join("  " * i + "do:\n" for i in range(400)) + "  " * 400 + 'session "x"\n'
    inputs = {
        "garbage.prose": bytes(range(256)) * 40,
        "empty.prose": b"",
        "long-line.prose": b'session "' + b"x" * 200_000 + b'"\n',
        "nested.prose": nested.encode(),
        "unclosed.prose": b'session """\nnever closed\n[[[{{(',
        "big.prose": b'let v = session "a"\n  context: []\n# c\n' * 30_000,
    }
    for name, data in inputs.items():
        path = write(tmp_path / name, data)
        code, out, err = prose("check", "--format", "json", path)
        assert code in (0, 1), (name, err)
        assert isinstance(json.loads(out), list), name
        code, out, err = prose("check", path)
        assert code in (0, 1) and "Traceback" not in err, name


def test_summary_pluralizes() -> None:
    from openprose.cli.check import Checked

    assert summary([]) == "0 files checked: 0 errors, 0 warnings"
    assert summary([Checked("a", None, [])]) == "1 file checked: 0 errors, 0 warnings"


def test_subprocess_json_and_exit_codes(prose_process: Run, tmp_path: Path) -> None:
    garbage = write(tmp_path / "garbage.prose", b"\x00\xff\xfe\x80 binary")
    code, out, err = prose_process("check", "--format", "json", garbage)
    assert code == 1 and [d["code"] for d in json.loads(out)] == ["E100"]
    code, out, err = prose_process("check", tmp_path / "nope.prose")
    assert code == 2 and "nope.prose" in err and "Traceback" not in err
    code, out, _ = prose_process("check", EXAMPLES)
    assert code == 0
    count = len(list(EXAMPLES.rglob("*.prose")))
    assert out.splitlines()[-1].startswith(f"{count} files checked: 0 errors, 0 warnings")


def test_project_dir_turns_deferred_memory_checks_into_real_ones(
    prose: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(write(tmp_path / "elsewhere" / "x", "").parent)  # not a project
    example = EXAMPLES / "persistent-agents.prose"
    code, out, _ = prose("check", example)
    assert code == 0 and " I001 " in out and "no project was found" in out
    memory = tmp_path / ".prose" / "agents" / "advisor"
    memory.mkdir(parents=True)
    (memory / "memory.md").write_text("notes\n", encoding="utf-8")
    code, out, _ = prose("check", "--project-dir", tmp_path, example)
    assert code == 0
    assert " W011 " in out and " I001 " not in out


def test_project_dir_checks_calls_against_cached_imports(
    prose: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from openprose.imports import Fetched, ImportCache, sha256_of

    monkeypatch.chdir(write(tmp_path / "elsewhere" / "x", "").parent)  # not a project
    program = tmp_path / "main.prose"
    program.write_text(
        'use "@alice/research" as research\nlet r = research(subject: "owls")\n',
        encoding="utf-8",
    )
    code, out, _ = prose("check", program)
    assert code == 0 and " I002 " in out and "--project-dir" in out
    text = 'input topic: "t"\noutput findings = session "Research {topic}"\n'
    ImportCache(tmp_path).store(Fetched("@alice/research", text, sha256_of(text), "registry"))
    code, out, _ = prose("check", "--format", "json", "--project-dir", tmp_path, program)
    assert code == 1
    assert [(d["code"], d["line"], d["column"]) for d in json.loads(out)] == [
        ("E026", 2, 9),
        ("E027", 2, 18),
    ]


def _remembered(project: Path) -> None:
    memory = project / ".prose" / "agents" / "advisor"
    memory.mkdir(parents=True)
    (memory / "memory.md").write_text("notes\n", encoding="utf-8")


def test_check_uses_the_project_a_run_would_use(
    prose: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without --project-dir, the project of the file's prose.toml is checked against, from
    any working directory, exactly as `prose run` would find it."""
    project = tmp_path / "project"
    write(project / "prose.toml", 'provider = "openai"\n')
    _remembered(project)
    program = write(
        project / "flows" / "advice.prose", (EXAMPLES / "persistent-agents.prose").read_text()
    )
    monkeypatch.chdir(write(tmp_path / "elsewhere" / "x", "").parent)
    code, out, _ = prose("check", program)
    assert code == 0 and " W011 " in out and " I001 " not in out
    assert str(project / ".prose" / "agents" / "advisor") in out
    code, _, err = prose("compile", program)
    assert code == 0 and " W011 " in err


def test_a_working_directory_a_run_used_is_the_project(
    prose: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No settings file: the working directory is the project `prose run` uses, and once a
    run has made its .prose/ folder the checks read it; before that they stay notes."""
    monkeypatch.chdir(tmp_path)
    program = write(tmp_path / "main.prose", 'use "@alice/research" as research\n')
    write(program, program.read_text() + 'let r = research(topic: "owls")\n')
    code, out, _ = prose("check", program)
    assert code == 0 and "no project was found" in out
    (tmp_path / ".prose").mkdir()
    code, out, _ = prose("check", program)
    assert code == 0 and " I002 " in out and "not in the project's import cache" in out
    _remembered(tmp_path)
    code, out, _ = prose("check", EXAMPLES / "persistent-agents.prose")
    assert code == 0 and " W011 " in out


def test_output_survives_a_stream_that_cannot_encode_the_source() -> None:
    import io

    from openprose.cli.check import write

    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii")
    write(stream, "caf\u00e9 \u2192\n")
    stream.flush()
    assert raw.getvalue() == b"caf\\xe9 \\u2192\n"


def test_fifo_and_directory_named_dot_prose_below_a_directory(prose: Run, tmp_path: Path) -> None:
    # A FIFO found by the directory walk is skipped (reading it would block forever); a
    # directory called x.prose is searched like any other directory.
    import os

    import openprose

    os.mkfifo(tmp_path / "pipe.prose")
    write(tmp_path / "x.prose" / "inner.prose", "session: ghost\n")
    write(tmp_path / "ok.prose", 'session "fine"\n')
    assert [p.name for p in openprose.find_programs(tmp_path)] == ["ok.prose", "inner.prose"]
    code, out, err = prose("check", "--format", "json", tmp_path)
    assert code == 1 and err == ""
    assert [(Path(d["path"]).name, d["code"]) for d in json.loads(out)] == [("inner.prose", "E007")]


def test_device_is_a_usage_error_not_an_endless_read(prose: Run, tmp_path: Path) -> None:
    ok = write(tmp_path / "ok.prose", 'session "fine"\n')
    code, out, err = prose("check", "--format", "json", "/dev/null", ok)
    assert code == 2
    assert err == "prose: /dev/null: cannot read file: not a regular file\n"
    assert json.loads(out) == []


def test_unreadable_file_is_a_usage_error_and_others_are_still_checked(
    prose: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # chmod 000 does not stop root, so the permission error is simulated.
    secret = write(tmp_path / "a-secret.prose", 'session "x"\n')
    bad = write(tmp_path / "b-bad.prose", "session: nobody\n")
    real = Path.open

    def open_(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self.name == secret.name:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", open_)
    code, out, err = prose("check", tmp_path)
    assert code == 2
    assert err == f"prose: {secret}: cannot read file: permission denied\n"
    assert out.splitlines()[0].startswith(f"{bad}:1:10: E007 ")
    assert out.splitlines()[-1] == "1 file checked: 1 error, 0 warnings"


def test_huge_numbers_give_diagnostics_in_every_command(prose: Run, tmp_path: Path) -> None:
    path = write(tmp_path / "n.prose", "repeat " + "9" * 5000 + ':\n  session "x"\n')
    code, out, _ = prose("check", "--format", "json", path)
    assert code == 1
    assert [(d["code"], d["line"], d["column"]) for d in json.loads(out)] == [("E122", 1, 8)]
    assert prose("compile", path)[0] == 1
    assert prose("fmt", "--check", path)[0] == 1
    # twenty digits are fine: a large but valid count
    ok = write(tmp_path / "ok.prose", 'repeat 99999999999999999999:\n  session "x"\n')
    assert prose("check", ok)[0] == 0
    assert prose("compile", ok)[1] == 'repeat 99999999999999999999:\n  session "x"\n'


def test_project_dir_that_is_not_a_directory_is_a_usage_error(prose: Run, tmp_path: Path) -> None:
    # Taken as a project without memory, a mistyped --project-dir would report a false E018.
    path = write(tmp_path / "m.prose", "agent a:\n  persist: project\nresume: a\n")
    for command in ("check", "compile"):
        code, out, err = prose(command, "--project-dir", tmp_path / "typo", path)
        assert (code, out) == (2, "")
        assert f"argument --project-dir: {tmp_path / 'typo'}: not a directory" in err
    code, out, _ = prose("check", "--format", "json", "--project-dir", tmp_path, path)
    assert code == 1 and [d["code"] for d in json.loads(out)] == ["E018"]


def test_non_utf8_excerpt_after_a_bom_lines_up(prose: Run, tmp_path: Path) -> None:
    path = write(tmp_path / "bom.prose", b'\xef\xbb\xbfsession "caf\xe9"\n')
    code, out, _ = prose("check", path)
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith(f"{path}:1:13: E100 ") and "at offset 15" in lines[0]
    assert lines[1:3] == ['  session "caf\ufffd"', "  " + " " * 12 + "^"]


def test_a_file_named_twice_is_checked_once(prose: Run, tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.prose", "session: ghost\n")
    code, out, _ = prose("check", tmp_path, bad, str(tmp_path) + "/")
    assert code == 1
    assert out.count(" E007 ") == 1
    assert out.splitlines()[-1] == "1 file checked: 1 error, 0 warnings"


def test_non_utf8_fifo_is_read_once(prose_on_fifo: Run, tmp_path: Path) -> None:
    # The excerpt of a non-UTF-8 file is quoted from a second read, which would block on a
    # FIFO: a FIFO's diagnostic comes without the excerpt.
    code, out, _ = prose_on_fifo(b"\xff\xfe\n", "check")
    message = "E100 File is not valid UTF-8 (byte 0xff at offset 0); OpenProse source must be UTF-8"
    assert code == 1
    assert out.splitlines() == [
        f"{tmp_path / 'pipe.prose'}:1:1: {message}",
        "1 file checked: 1 error, 0 warnings",
    ]


@pytest.mark.parametrize("command", ["check", "fmt"])
def test_a_folder_without_programs_is_warned_about(
    prose: Run, tmp_path: Path, command: str
) -> None:
    """A typo'd or empty folder is not silently "0 files checked" (ruff warns too)."""
    (tmp_path / "notes.txt").write_text("not a program\n")
    code, _, err = prose(command, tmp_path)
    assert code == 0
    assert err == f"prose: warning: no .prose files under {tmp_path}\n"

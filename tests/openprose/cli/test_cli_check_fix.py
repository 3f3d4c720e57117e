"""`prose check --fix`, `--diff` and `--unsafe-fixes`; rule and help lines in the text output."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

Run = Callable[..., tuple[int, str, str]]

BROKEN = (
    "# keep this comment\n"
    'session """Write it\n'
    '"""\n'
    'session "Call the API"\n'
    '  backoff: "linear"  # and this one\n'
)
FIXED = (
    "# keep this comment\n"
    'session """\n'
    "Write it\n"
    '"""\n'
    'session "Call the API"\n'
    "  backoff: linear  # and this one\n"
)


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_fix_rewrites_the_file_and_reports_what_is_left(prose: Run, tmp_path: Path) -> None:
    path = write(tmp_path / "p.prose", BROKEN + "session: nobody\n")
    os.chmod(path, 0o640)
    code, out, _ = prose("check", "--fix", path)
    assert path.read_text(encoding="utf-8") == FIXED + "session: nobody\n"
    assert oct(path.stat().st_mode & 0o777) == "0o640"  # the file keeps its permissions
    assert code == 1  # E007 is no mechanical fix
    assert " E007 " in out and " E106 " not in out and " W170 " not in out
    assert "fixed 2 problems in 1 file" in out
    assert not [p for p in tmp_path.iterdir() if p.name != "p.prose"]  # no temporary left
    # a second run has nothing left to fix
    code, out, _ = prose("check", "--fix", path)
    assert "fixed 0 problems in 0 files" in out and path.read_text() == FIXED + "session: nobody\n"


def test_fix_leaves_a_clean_file_alone(prose: Run, tmp_path: Path) -> None:
    path = write(tmp_path / "p.prose", FIXED)
    before = path.stat().st_mtime_ns
    code, _out, _ = prose("check", "--fix", path)
    assert (code, path.stat().st_mtime_ns) == (0, before)


def test_diff_shows_the_fixes_and_writes_nothing(prose: Run, tmp_path: Path) -> None:
    path = write(tmp_path / "p.prose", BROKEN)
    code, out, err = prose("check", "--diff", path)
    assert code == 1
    assert path.read_text(encoding="utf-8") == BROKEN
    assert f"--- {path}\n+++ {path}\n" in out
    assert '-  backoff: "linear"  # and this one\n+  backoff: linear  # and this one\n' in out
    assert "2 fixes would be applied in 1 file" in err
    code, out, err = prose("check", "--diff", write(tmp_path / "q.prose", FIXED))
    assert (code, out) == (0, "")


def test_unsafe_fixes_only_when_asked(prose: Run, tmp_path: Path) -> None:
    path = write(tmp_path / "p.prose", 'sesion "Hello"\n')
    code, out, _ = prose("check", "--fix", path)
    assert code == 1 and path.read_text() == 'sesion "Hello"\n'
    assert "fix available: `prose check --fix --unsafe-fixes`" in out
    code, out, _ = prose("check", "--fix", "--unsafe-fixes", path)
    assert code == 0 and path.read_text() == 'session "Hello"\n'


def test_fix_with_json_reports_the_remaining_diagnostics(prose: Run, tmp_path: Path) -> None:
    path = write(tmp_path / "p.prose", BROKEN + "session: nobody\n")
    code, out, _ = prose("check", "--fix", "--format", "json", path)
    assert code == 1 and [d["code"] for d in json.loads(out)] == ["E007"]


def test_text_output_names_the_rule_and_the_fix(prose: Run, tmp_path: Path) -> None:
    path = write(
        tmp_path / "p.prose",
        'if **the thing holds**:\n  let r = session "a"\nelse:\n  let r = session "b"\n',
    )
    code, out, _ = prose("check", path)
    lines = out.splitlines()
    assert code == 1 and lines[0].startswith(f"{path}:4:7: E019 ")
    assert lines[3].startswith("  = rule: Variables & Context, Flat Namespace Requirement")
    assert lines[4] == (
        '  = help: declare r once before the if: let r = "" (then `r = ...` in each branch)'
        " (fixable with `prose check --fix`)"
    )


def test_fix_says_how_many_likely_fixes_were_left_out(tmp_path: Path) -> None:
    """Misspellings have only likely fixes: `--fix` leaves them and says how to apply them."""
    import subprocess
    import sys

    path = tmp_path / "typos.prose"
    path.write_text('agent writer:\n  prompt: "x"\n\nsesion "hello"\nsession: writr\n')
    for extra, stream in ((["--fix"], "stdout"), (["--fix", "--diff"], "stderr")):
        done = subprocess.run(
            [sys.executable, "-m", "openprose.cli", "check", *extra, str(path)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert "in 0 files (2 more with --unsafe-fixes)" in getattr(done, stream), done


# --- issue 36: a folder fixed in one invocation; --statistics ----------------------------------

# Refusals whose fixes need several passes: the input moves up before the `{topic}` that
# reads it is clean, and a renamed binding's uses change with it.
SEVERAL_PASSES = (
    'let x = session "Research {topic}"\n'
    'input topic: "The topic"\n'
    'let x = session "Again"\n'
    'output result = { status: "done", notes: x }\n'
    'session "Read"\n'
    '  context: "docs/*.md"\n'
)


def test_unsafe_fixes_reach_a_fixed_point_in_one_invocation(prose: Run, tmp_path: Path) -> None:
    path = write(tmp_path / "p.prose", SEVERAL_PASSES)
    code, out, _ = prose("check", "--fix", "--unsafe-fixes", path)
    assert code == 0, out
    assert "fixed 4 problems in 1 file" in out
    fixed = path.read_text(encoding="utf-8")
    assert fixed.startswith('input topic: "The topic"\nlet x = session "Research {topic}"\n')
    assert "let x_2 = session" in fixed and "context: [x_2]" in fixed
    code, out, _ = prose("check", "--fix", "--unsafe-fixes", path)
    assert (code, path.read_text(encoding="utf-8")) == (0, fixed)
    assert "fixed 0 problems in 0 files" in out


def test_statistics_count_each_code_and_its_fixes(prose: Run, tmp_path: Path) -> None:
    write(tmp_path / "a.prose", SEVERAL_PASSES)
    write(tmp_path / "b.prose", BROKEN + "session: nobody\n")
    code, out, _ = prose("check", "--statistics", tmp_path)
    assert code == 1
    lines = out.splitlines()
    assert "1  E004  [-] Unexpected token (1 unsafe fix)" in lines
    assert "1  E007  [ ] Undefined agent reference" in lines
    assert any(line.startswith("1  E106  [*] ") for line in lines)
    assert "1  E141  [ ] " in out  # {topic} has no fix of its own: moving the input answers it
    assert lines[-1] == (
        "8 problems in 2 files: 3 fixable with --fix, 2 more with --fix --unsafe-fixes"
    )
    assert "-->" not in out and "^" not in out  # counts, not each diagnostic


def test_statistics_as_json_and_after_fixing(prose: Run, tmp_path: Path) -> None:
    path = write(tmp_path / "a.prose", SEVERAL_PASSES)
    code, out, _ = prose("check", "--statistics", "--format", "json", path)
    rows = {row["code"]: row for row in json.loads(out)}
    assert rows["E004"] == {
        "code": "E004",
        "meaning": "Unexpected token",
        "count": 1,
        "safe_fixes": 0,
        "unsafe_fixes": 1,
    }
    assert (rows["E022"]["safe_fixes"], rows["E022"]["unsafe_fixes"]) == (1, 0)
    # the second `let x` is renamed only once the data statement that reads `x` is fixed
    assert (rows["E019"]["count"], rows["E019"]["unsafe_fixes"]) == (1, 0)
    code, out, _ = prose("check", "--statistics", "--fix", "--unsafe-fixes", path)
    assert code == 0
    assert out.splitlines()[0] == (
        "0 problems in 1 file: 0 fixable with --fix, 0 more with --fix --unsafe-fixes"
    )

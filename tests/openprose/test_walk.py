"""Walking folders for programs skips hidden folders and what .gitignore ignores."""

from __future__ import annotations

from pathlib import Path

from openprose import find_programs


def _tree(root: Path, *files: str) -> None:
    for name in files:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text('session "x"\n')


def test_hidden_folders_and_run_copies_are_skipped(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        "a.prose",
        "lib/b.prose",
        ".prose/runs/20260101-000000-abcdef/program.prose",
        ".venv/c.prose",
        ".hidden.prose",
    )
    found = [p.relative_to(tmp_path).as_posix() for p in find_programs(tmp_path)]
    assert found == ["a.prose", "lib/b.prose"]


def test_gitignore_rules_apply_with_negation_and_nested_files(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("build/\n*.draft.prose\n!keep.draft.prose\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".gitignore").write_text("local.prose\n")
    _tree(
        tmp_path,
        "main.prose",
        "build/gen.prose",
        "x.draft.prose",
        "keep.draft.prose",
        "sub/local.prose",
        "sub/kept.prose",
    )
    found = [p.relative_to(tmp_path).as_posix() for p in find_programs(tmp_path)]
    assert found == ["keep.draft.prose", "main.prose", "sub/kept.prose"]
    # Walking a subfolder still honours the repository's top-level .gitignore.
    assert find_programs(tmp_path / "build") == []


def test_a_path_named_explicitly_is_always_taken(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("*.prose\n")
    _tree(tmp_path, "ignored.prose")
    assert find_programs(tmp_path) == []
    assert find_programs(tmp_path / "ignored.prose") == [tmp_path / "ignored.prose"]


def test_prose_check_and_fmt_of_a_project_leave_run_copies_alone(tmp_path: Path) -> None:
    from openprose.cli import main

    _tree(tmp_path, "a.prose")
    archived = tmp_path / ".prose" / "runs" / "r" / "program.prose"
    archived.parent.mkdir(parents=True)
    archived.write_text('session   "not formatted"\n')
    assert main(["fmt", str(tmp_path)]) == 0
    assert archived.read_text() == 'session   "not formatted"\n'


def test_check_paths_walks_like_find_programs(tmp_path: Path) -> None:
    from openprose import check_paths

    (tmp_path / "bad.prose").write_text("session: nobody\n")
    (tmp_path / ".prose").mkdir()
    (tmp_path / ".prose" / "copy.prose").write_text("session: nobody\n")
    assert [d.code for d in check_paths(tmp_path)] == ["E007"]

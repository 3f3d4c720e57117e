"""Finding test files as pytest and ruff find theirs, and pytest's `-k`."""

from __future__ import annotations

from pathlib import Path

import pytest

from openprose.testing.suite import SuiteError, discover, keyword_filter


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for name in (
        "a.test.toml",
        "lib/b.test.toml",
        "lib/deep/c.test.toml",
        ".hidden/d.test.toml",
        "vendor/e.test.toml",
        "ignored/f.test.toml",
        "lib/not-a-test.toml",
    ):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("ignored/\n")
    return tmp_path


def _names(found: list[Path], root: Path) -> list[str]:
    return [p.relative_to(root).as_posix() for p in found]


def test_a_folder_is_searched_skipping_hidden_and_ignored(tree: Path) -> None:
    assert _names(discover([tree], cwd=tree), tree) == [
        "a.test.toml",
        "lib/b.test.toml",
        "lib/deep/c.test.toml",
        "vendor/e.test.toml",
    ]


def test_prose_toml_says_where_to_look_and_what_to_leave_out(tree: Path) -> None:
    (tree / "prose.toml").write_text('[test]\npaths = ["lib", "vendor"]\nexclude = ["lib/deep/"]\n')
    assert _names(discover([], cwd=tree), tree) == ["lib/b.test.toml", "vendor/e.test.toml"]
    (tree / "prose.toml").write_text('[test]\nexclude = ["*/e.test.toml"]\n')
    assert "vendor/e.test.toml" not in _names(discover([], cwd=tree), tree)


def test_a_file_given_is_taken_and_a_wrong_one_refused(tree: Path) -> None:
    assert discover([tree / "lib/deep/c.test.toml"], cwd=tree) == [tree / "lib/deep/c.test.toml"]
    with pytest.raises(
        SuiteError,
        match=r"not-a-test\.toml: not a test file \(test files are named NAME\.test\.toml\)",
    ):
        discover([tree / "lib/not-a-test.toml"], cwd=tree)
    with pytest.raises(SuiteError, match="missing: no such file or folder"):
        discover([tree / "missing"], cwd=tree)


def test_a_bad_test_table_is_a_usage_error(tree: Path) -> None:
    (tree / "prose.toml").write_text('[test]\npaths = "lib"\n')
    with pytest.raises(SuiteError, match=r"\[test\] paths must be a list of paths"):
        discover([], cwd=tree)


@pytest.mark.parametrize(
    ("expression", "chosen"),
    [
        ("hello", ["hello.test.toml::greets", "hello.test.toml::Says Hello"]),
        ("HELLO and not greets", ["hello.test.toml::Says Hello"]),
        ("greets or loops", ["hello.test.toml::greets", "loops.test.toml::counts"]),
        ("not (hello or counts)", ["pipes.test.toml::maps"]),
        ("loops and (counts or maps)", ["loops.test.toml::counts"]),
    ],
)
def test_k_selects_as_pytest_does(expression: str, chosen: list[str]) -> None:
    ids = [
        "hello.test.toml::greets",
        "hello.test.toml::Says Hello",
        "loops.test.toml::counts",
        "pipes.test.toml::maps",
    ]
    matches = keyword_filter(expression)
    assert [i for i in ids if matches(i)] == chosen


@pytest.mark.parametrize(
    ("expression", "problem"),
    [
        ("", "-k needs an expression"),
        ("a and", "the expression ends too soon"),
        ("(a or b", "a parenthesis is not closed"),
        ("a b", "unexpected `b`"),
        ("or a", "unexpected `or`"),
    ],
)
def test_a_bad_k_is_refused(expression: str, problem: str) -> None:
    with pytest.raises(SuiteError, match=problem.replace("(", r"\(")):
        keyword_filter(expression)


def test_pyproject_tool_prose_test_is_read_too(tree: Path) -> None:
    (tree / "pyproject.toml").write_text('[tool.prose.test]\npaths = ["lib/deep"]\n')
    assert _names(discover([], cwd=tree), tree) == ["lib/deep/c.test.toml"]

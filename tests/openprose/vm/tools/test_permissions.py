"""Permission patterns and modes, judged on resolved paths."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from openprose.vm.tools.paths import PathRefused, resolve_path
from openprose.vm.tools.permissions import (
    PermissionError_,
    Permissions,
    glob_regex,
    validate_default,
)


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("*.md", "README.md", True),
        ("*.md", "docs/guide.md", True),  # no slash: any depth, like .gitignore
        ("*.md", "docs/guide.mdx", False),
        ("src/*.py", "src/a.py", True),
        ("src/*.py", "src/pkg/a.py", False),  # anchored, * stays in one name
        ("src/**/*.py", "src/pkg/deep/a.py", True),
        ("src/**/*.py", "src/a.py", True),
        ("output/", "output/r.md", True),
        ("output/", "output/sub/r.md", True),
        ("output/", "outputs/r.md", False),
        ("docs", "docs/a/b.md", True),  # a pattern covers what lies below its match
        ("./src/", "src/a.py", True),
        ("file?.txt", "file1.txt", True),
        ("file?.txt", "file10.txt", False),
        ("[ab].txt", "a.txt", True),
        ("[!ab].txt", "c.txt", True),
        ("[!ab].txt", "a.txt", False),
        ("src/", "SRC/a.py", False),  # case-sensitive
        ("**", "any/thing", True),
        ("a+b(c).txt", "a+b(c).txt", True),  # regex characters are literal
    ],
)
def test_pattern_semantics(pattern: str, path: str, matches: bool) -> None:
    assert bool(glob_regex(pattern).fullmatch(path)) is matches


def test_unnamed_kinds_are_denied_and_modes_speak_for_the_project(tmp_path: Path) -> None:
    perms = Permissions.from_mapping({"read": "allow"})
    inside = resolve_path(tmp_path, "a.txt")
    outside = resolve_path(tmp_path, "/etc/hostname")
    assert perms.judge_path("read", inside) == "allow"
    assert perms.judge_path("read", outside) == "deny"
    assert perms.judge_path("write", inside) == "deny"
    assert perms.bash == "deny" and perms.network.never


def test_absolute_patterns_name_outside_paths(tmp_path: Path) -> None:
    data = tmp_path.parent / f"{tmp_path.name}-data"
    perms = Permissions.from_mapping({"read": [f"{data}/**"]})
    assert perms.judge_path("read", resolve_path(tmp_path, str(data / "x.csv"))) == "allow"
    assert perms.judge_path("read", resolve_path(tmp_path, "../" + data.name + "/x.csv")) == "allow"
    assert perms.judge_path("read", resolve_path(tmp_path, "/etc/passwd")) == "deny"


def test_project_default_fills_what_the_agent_leaves_out(tmp_path: Path) -> None:
    perms = Permissions.from_mapping({"write": ["out/"]}, {"read": ["**"], "write": "deny"})
    assert perms.judge_path("read", resolve_path(tmp_path, "x/y")) == "allow"
    assert perms.judge_path("write", resolve_path(tmp_path, "out/r")) == "allow"


def test_journal_folder_is_never_writable(tmp_path: Path) -> None:
    perms = Permissions.from_mapping({"write": "allow"})
    assert perms.judge_path("write", resolve_path(tmp_path, ".prose/runs/x")) == "deny"
    # a nested project's run state too, and in any letter case (macOS file systems)
    assert perms.judge_path("write", resolve_path(tmp_path, "docs/.prose")) == "deny"
    assert perms.judge_path("write", resolve_path(tmp_path, "docs/.PROSE/x")) == "deny"
    named = Permissions.from_mapping({"write": [".prose/"]})
    assert named.judge_path("write", resolve_path(tmp_path, ".prose/runs/x")) == "deny"


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"reed": ["*"]}, "unknown permission 'reed'"),
        ({"bash": "yes"}, "bash must be allow, deny, prompt"),
        ({"read": [1]}, "read must be allow, deny, prompt or a list of patterns"),
        ("allow", "must be a table"),
    ],
)
def test_bad_project_default_is_a_clear_error(table: object, message: str) -> None:
    with pytest.raises(PermissionError_, match=message):
        validate_default(table, "prose.toml")


_SEGMENTS = [
    ".prose",
    ".PROSE",
    ".git",
    ".Git",
    "prose.toml",
    "PROSE.toml",
    "prose.lock",
    "pyproject.toml",
    "..",
    ".",
    "",
    "src",
    "out",
    "runs",
    "x.md",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_SEGMENTS), min_size=1, max_size=6), st.booleans())
@example(["src", "..", ".prose", "runs"], False)
@example([".git", ".prose"], False)  # found: the first protected part hid the run state
@example([".git", ".git", ".prose"], False)  # found: `.prose` last broke the skills check
@example(["", "", ".prose"], False)
@example(["out", "..", "PROSE.toml"], True)
def test_no_spelling_writes_a_protected_path(parts: list[str], absolute: bool) -> None:
    """Whatever the spelling — `..`, `.`, empty parts, letter case, absolute — a path whose
    resolved form has a protected part is never written under `write: allow`."""
    root = Path("/srv/project")
    requested = "/".join(parts)
    if absolute:
        requested = f"{root}/{requested}"
    try:
        resolved = resolve_path(root, requested)
    except PathRefused:
        return
    perms = Permissions.from_mapping({"write": "allow", "read": "allow"})
    lexical = os.path.normpath(os.path.join(root, requested))
    protected = {".prose", ".git", "prose.toml", "prose.lock", "pyproject.toml"}
    named = [p.casefold() for p in Path(lexical).parts[1:]]  # `//x` keeps its `//`
    if set(named) & protected and Path(lexical).is_relative_to(root):
        assert perms.judge_path("write", resolved) == "deny"
    if ".prose" in named and Path(lexical).is_relative_to(root):
        assert perms.judge_path("read", resolved) == "deny"

"""W181: an agent's `mcp:` grants are checked against the servers prose.toml declares."""

from __future__ import annotations

from pathlib import Path

from openprose.checker import check
from openprose.parser import parse_text


def _codes(tmp_path: Path, grant: str, settings: str | None) -> list[tuple[str, str]]:
    if settings is not None:
        (tmp_path / "prose.toml").write_text(settings)
    source = f'agent a:\n  permissions:\n    mcp: {grant}\nsession: a\n  prompt: "x"\n'
    parsed = parse_text(source, str(tmp_path / "main.prose"))
    return [(d.code, d.message) for d in check(parsed, project_dir=tmp_path) if d.code != "I001"]


SERVERS = (
    '[mcp.servers.notes]\ncommand = "notes"\ntools = ["add", "search"]\n\n'
    '[mcp.servers.web]\nurl = "https://mcp.example/mcp"\n'
)


def test_declared_servers_and_listed_tools_pass(tmp_path: Path) -> None:
    grants = '["notes", "notes.add", "notes.get_*", "web", "web.anything"]'
    assert _codes(tmp_path, grants, SERVERS) == []


def test_an_undeclared_server_is_w181_with_a_suggestion(tmp_path: Path) -> None:
    ((code, message),) = _codes(tmp_path, '["note.add"]', SERVERS)
    assert code == "W181" and "'note' is not declared" in message and "`notes`" in message


def test_a_tool_the_server_does_not_list_is_w181(tmp_path: Path) -> None:
    ((code, message),) = _codes(tmp_path, '["notes.erase"]', SERVERS)
    assert code == "W181" and "has no tool 'erase'" in message and "add, search" in message


def test_a_project_without_servers_names_none(tmp_path: Path) -> None:
    ((code, message),) = _codes(tmp_path, '["notes"]', "[vm]\n")
    assert code == "W181" and "(declared: none)" in message


def test_modes_and_unknown_projects_are_not_checked(tmp_path: Path) -> None:
    assert _codes(tmp_path, "allow", "[vm]\n") == []
    assert _codes(tmp_path / "nowhere", '["x"]', None) == []  # no project: known at run time


def test_servers_in_pyproject_count_too(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.prose.mcp.servers.notes]\ncommand = "n"\n')
    assert _codes(tmp_path, '["notes"]', None) == []

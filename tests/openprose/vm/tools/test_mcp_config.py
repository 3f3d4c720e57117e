"""`[mcp.servers.NAME]` of prose.toml and the `mcp:` permission that grants their tools."""

from __future__ import annotations

from pathlib import Path

import pytest

from openprose.vm.tools.mcp_config import McpConfigError, McpServer, servers_from_settings
from openprose.vm.tools.mcp_grants import McpRule
from openprose.vm.tools.mcp_tools import tool_name
from openprose.vm.tools.permissions import PermissionError_, Permissions, validate_default


def test_stdio_and_http_servers_are_read() -> None:
    servers = servers_from_settings(
        {
            "mcp": {
                "servers": {
                    "notes": {"command": "npx", "args": ["-y", "srv"], "env": {"T": "${X}"}},
                    "web": {"url": "https://mcp.example/mcp", "headers": {"A": "b"}, "timeout": 5},
                }
            }
        },
        "prose.toml",
    )
    assert servers["notes"] == McpServer(
        "notes", command="npx", args=("-y", "srv"), env={"T": "${X}"}
    )
    assert servers["web"].url == "https://mcp.example/mcp" and servers["web"].timeout == 5.0


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({}, "needs either `command`"),
        ({"command": "a", "url": "http://x"}, "needs either `command`"),
        ({"url": "ftp://x"}, "url must be an http:// or https:// URL"),
        ({"command": "a", "args": "-y"}, "args must be a list of strings"),
        ({"command": "a", "env": {"K": 1}}, "env must be a table of strings"),
        ({"command": "a", "timeout": 0}, "timeout must be a number of seconds above 0"),
        ({"command": "a", "cmd": "b"}, "unknown key 'cmd'"),
        ({"command": " "}, "command must be a program name or path"),
    ],
)
def test_a_bad_server_table_names_its_key(body: dict[str, object], says: str) -> None:
    with pytest.raises(McpConfigError) as raised:
        servers_from_settings({"mcp": {"servers": {"notes": body}}}, "prose.toml")
    assert str(raised.value).startswith("prose.toml [mcp.servers.notes]") and says in str(
        raised.value
    )


def test_a_bad_server_name_and_stray_tables_are_refused() -> None:
    with pytest.raises(McpConfigError, match="a server name is a letter"):
        servers_from_settings({"mcp": {"servers": {"no.dots": {"command": "a"}}}}, "prose.toml")
    with pytest.raises(McpConfigError, match=r"\[mcp\] holds one table"):
        servers_from_settings({"mcp": {"server": {}}}, "prose.toml")


def test_secret_references_resolve_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKEN_31", "s3")
    server = McpServer("web", url="http://x", headers={"Authorization": "Bearer ${TOKEN_31}"})
    assert server.resolved_headers() == {"Authorization": "Bearer s3"}
    monkeypatch.delenv("TOKEN_31")
    with pytest.raises(McpConfigError, match=r"headers.Authorization refers to \$\{TOKEN_31\}"):
        server.resolved_headers()


def test_grants_read_like_the_permission_table() -> None:
    rule = Permissions.from_mapping({"mcp": ["notes", "web.search", "db.get_*"]}).mcp
    assert rule.judge("notes", "anything") == "allow"
    assert rule.judge("web", "search") == "allow" and rule.judge("web", "post") == "deny"
    assert rule.judge("db", "get_row") == "allow" and rule.judge("db", "drop") == "deny"
    assert rule.judge("other", "x") == "deny"
    assert rule.servers(["notes", "web", "db", "other"]) == ["notes", "web", "db"]
    assert Permissions.from_mapping({"mcp": "prompt"}).mcp.judge("any", "tool") == "prompt"
    assert Permissions.from_mapping({}).mcp.never  # least privilege: no MCP tools
    assert Permissions.from_mapping({"mcp": 3}).mcp.never  # an unknown value denies
    assert Permissions.from_mapping({"mcp": "notes"}).mcp.grants == ("notes",)  # one grant


def test_an_imports_cap_bounds_mcp_grants() -> None:
    capped = Permissions.from_mapping({"mcp": "allow"}).within({"mcp": ["notes.add"]}).mcp
    assert capped.judge("notes", "add") == "allow" and capped.judge("notes", "rm") == "deny"
    assert capped.servers(["notes", "web"]) == ["notes"]
    prompted = Permissions.from_mapping({"mcp": ["notes"]}).within({"mcp": "prompt"}).mcp
    assert prompted.judge("notes", "add") == "prompt"
    assert McpRule("allow").within(McpRule("deny")).never


def test_the_project_default_may_grant_mcp() -> None:
    assert validate_default({"mcp": ["notes"]}, "prose.toml") == {"mcp": ["notes"]}
    with pytest.raises(PermissionError_, match="list of server grants"):
        validate_default({"mcp": "yes"}, "prose.toml")
    shown = Permissions.from_mapping({"mcp": ["notes"]}).to_dict()
    assert shown["mcp"] == ["notes"]


def test_tool_names_are_what_provider_apis_accept() -> None:
    assert tool_name("notes", "add") == "mcp__notes__add"
    assert tool_name("web", "get.page/v2") == "mcp__web__get_page_v2"
    assert len(tool_name("s", "x" * 100)) == 64


def _mcp_section_blocks(language: str) -> list[str]:
    """The ```language blocks of docs/tools.md's MCP section."""
    import re

    text = (Path(__file__).parents[4] / "docs" / "tools.md").read_text(encoding="utf-8")
    section = text.split("## MCP tool servers", 1)[1].split("\n## ", 1)[0]
    return re.findall(rf"```{language}\n(.*?)```", section, re.DOTALL)


def test_the_documented_server_tables_are_valid() -> None:
    import tomllib

    tables = _mcp_section_blocks("toml")
    assert len(tables) == 2
    for text in tables:
        servers = servers_from_settings(tomllib.loads(text), "prose.toml")
        assert servers and all(s.command or s.url for s in servers.values())


def test_the_documented_programs_check_clean_against_the_documented_tables(
    tmp_path: Path,
) -> None:
    from openprose.checker import check
    from openprose.parser import parse_text

    project = tmp_path
    tables, programs = _mcp_section_blocks("toml"), _mcp_section_blocks("prose")
    assert len(programs) == 2
    for table, source in zip(tables, programs, strict=True):
        (project / "prose.toml").write_text(table)
        parsed = parse_text(source, str(project / "main.prose"))
        found = [d for d in check(parsed, project_dir=project) if d.code != "I001"]
        assert found == [], [d.message for d in found]

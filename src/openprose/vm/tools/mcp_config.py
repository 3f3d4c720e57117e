"""MCP servers a project declares in prose.toml, `[mcp.servers.NAME]`.

    [mcp.servers.notes]                 # a stdio server, run inside the sandbox
    command = "npx"
    args = ["-y", "@modelcontextprotocol/server-filesystem", "."]
    env = { API_TOKEN = "${NOTES_TOKEN}" }
    readable = ["/usr/local/lib/node_modules"]   # what it needs outside the project
    tools = ["read_file", "list_directory"]      # optional: what the checker checks grants by

    [mcp.servers.search]                # a streamable HTTP server
    url = "https://mcp.example.com/mcp"
    headers = { Authorization = "Bearer ${SEARCH_TOKEN}" }

Secrets come from `${VAR}` references, resolved from the environment when the server is
started; the resolved values are never journaled (the journal holds only tool calls and
their results).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["McpConfigError", "McpServer", "servers_from_settings"]

NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,31}")
_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_KEYS = {
    "command", "args", "env", "readable", "url", "headers", "tools", "timeout",
    "startup_timeout",
}  # fmt: skip


class McpConfigError(ValueError):
    """A `[mcp.servers.NAME]` table that cannot be used; the message names the key."""


@dataclass(frozen=True, slots=True)
class McpServer:
    name: str
    command: str | None = None  # stdio
    args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None  # values may hold ${VAR} references
    readable: tuple[str, ...] = ()  # folders outside the project the server reads
    url: str | None = None  # streamable HTTP
    headers: Mapping[str, str] | None = None  # values may hold ${VAR} references
    tools: tuple[str, ...] | None = None  # the tools the project expects (for the checker)
    timeout: float = 60.0  # seconds one tool call may take
    startup_timeout: float = 20.0  # seconds to start, connect and list the tools

    @property
    def where(self) -> str:
        return f"prose.toml [mcp.servers.{self.name}]"

    def resolved_env(self) -> dict[str, str]:
        return {k: self._resolve(f"env.{k}", v) for k, v in (self.env or {}).items()}

    def resolved_headers(self) -> dict[str, str]:
        return {k: self._resolve(f"headers.{k}", v) for k, v in (self.headers or {}).items()}

    def _resolve(self, key: str, text: str) -> str:
        def value(match: re.Match[str]) -> str:
            found = os.environ.get(match.group(1))
            if found is None:
                raise McpConfigError(
                    f"{self.where} {key} refers to ${{{match.group(1)}}}, which is not set "
                    f"in the environment"
                )
            return found

        return _REFERENCE.sub(value, text)


def servers_from_settings(settings: Mapping[str, Any], source: str) -> dict[str, McpServer]:
    """The servers of a project's settings (`[mcp.servers]`), checked."""
    table = settings.get("mcp", {})
    if not isinstance(table, dict) or set(table) - {"servers"}:
        raise McpConfigError(f"{source}: [mcp] holds one table, [mcp.servers.NAME]")
    servers = table.get("servers", {})
    if not isinstance(servers, dict):
        raise McpConfigError(f"{source}: [mcp.servers] must be a table of servers")
    return {name: _server(name, body, source) for name, body in servers.items()}


def _server(name: str, body: Any, source: str) -> McpServer:
    where = f"{source} [mcp.servers.{name}]"
    if not NAME.fullmatch(name):
        raise McpConfigError(
            f"{where}: a server name is a letter, then letters, digits, _ or - (32 at most)"
        )
    if not isinstance(body, dict):
        raise McpConfigError(f"{where} must be a table")
    unknown = sorted(set(body) - _KEYS)
    if unknown:
        raise McpConfigError(
            f"{where}: unknown key {unknown[0]!r}; known: {', '.join(sorted(_KEYS))}"
        )
    if ("command" in body) == ("url" in body):
        raise McpConfigError(
            f"{where} needs either `command` (a stdio server) or `url` (a streamable HTTP one)"
        )
    url = body.get("url")
    if url is not None and not (isinstance(url, str) and re.match(r"https?://", url)):
        raise McpConfigError(f"{where} url must be an http:// or https:// URL")
    command = body.get("command")
    if command is not None and not (isinstance(command, str) and command.strip()):
        raise McpConfigError(f"{where} command must be a program name or path")
    tools = body.get("tools")
    return McpServer(
        name,
        command=command,
        args=_strings(body, "args", where),
        env=_table(body, "env", where),
        readable=_strings(body, "readable", where),
        url=url,
        headers=_table(body, "headers", where),
        tools=None if tools is None else _strings(body, "tools", where),
        timeout=_seconds(body, "timeout", 60.0, where),
        startup_timeout=_seconds(body, "startup_timeout", 20.0, where),
    )


def _strings(body: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = body.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise McpConfigError(f"{where} {key} must be a list of strings")
    return tuple(value)


def _table(body: Mapping[str, Any], key: str, where: str) -> dict[str, str] | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise McpConfigError(f'{where} {key} must be a table of strings (KEY = "value")')
    return dict(value)


def _seconds(body: Mapping[str, Any], key: str, default: float, where: str) -> float:
    value = body.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise McpConfigError(f"{where} {key} must be a number of seconds above 0")
    return float(value)

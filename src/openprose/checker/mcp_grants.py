"""W181: an agent's `mcp:` grant names a server prose.toml does not declare, or a tool the
server's declared `tools` list does not hold. Known only where the project is: without
one, or for a server that lists no `tools`, the run says so when the session starts."""

from __future__ import annotations

import tomllib
from functools import lru_cache
from pathlib import Path

from openprose import nodes as n
from openprose.checker.state import Checker, span_of
from openprose.suggest import did_you_mean

__all__ = ["check_mcp_grants"]

# server name -> its declared tools (None: not listed, so not known before it runs)
Declared = dict[str, tuple[str, ...] | None]


def check_mcp_grants(ck: Checker, value: n.ArrayLit) -> None:
    if ck.project_dir is None:
        return
    declared = _declared(ck.project_dir)
    if declared is None:
        return
    for element in value.elements:
        if not isinstance(element, n.StringLit):
            continue
        server, dot, tool = element.value.strip().partition(".")
        if server not in declared:
            known = ", ".join(sorted(declared)) or "none"
            ck.emit(
                "W181",
                span_of(element),
                f"MCP server '{server}' is not declared in prose.toml"
                f"{did_you_mean(server, declared) or f' (declared: {known})'}",
                help=f"declare it as [mcp.servers.{server}] in prose.toml",
            )
            continue
        tools = declared[server]
        if dot and tools is not None and not any(c in tool for c in "*?[") and tool not in tools:
            ck.emit(
                "W181",
                span_of(element),
                f"MCP server '{server}' has no tool '{tool}' in its `tools` list in prose.toml"
                f"{did_you_mean(tool, tools) or ' (its tools: ' + ', '.join(tools) + ')'}",
            )


def _declared(project: Path) -> Declared | None:
    """The servers of the project's settings, or None when they cannot be read (a broken
    file is the run's to report, with its line)."""
    for name in ("prose.toml", "pyproject.toml"):
        path = project / name
        try:
            stamp = path.stat().st_mtime_ns
        except OSError:
            continue
        return _read(path, stamp)
    return None


@lru_cache(maxsize=16)
def _read(path: Path, stamp: int) -> Declared | None:
    try:
        with path.open("rb") as handle:
            table = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError):
        return None
    if path.name == "pyproject.toml":
        tool = table.get("tool")
        prose = tool.get("prose") if isinstance(tool, dict) else None
        if not isinstance(prose, dict):
            return None
        table = prose
    mcp = table.get("mcp")
    servers = mcp.get("servers") if isinstance(mcp, dict) else {}
    if not isinstance(servers, dict):
        return None
    declared: Declared = {}
    for name, body in servers.items():
        tools = body.get("tools") if isinstance(body, dict) else None
        if isinstance(tools, list) and all(isinstance(t, str) for t in tools):
            declared[name] = tuple(tools)
        else:
            declared[name] = None
    return declared

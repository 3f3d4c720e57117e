"""An agent's MCP tools: the servers it is granted started for its session, their tools
listed and offered as rows of the tool registry, each call judged by the `mcp:` permission.

Built on the official `mcp` SDK's client. A stdio server runs inside the agent's sandbox
(`mcp_stdio`); a streamable HTTP server is reached at its URL with its headers. A server
that cannot be started, crashes or does not answer in time is an `McpFailure`: the session
fails with that message (catchable with `try:`), as it would for a model that cannot be
reached. A tool's own error (`isError`) is an error result the model sees.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator, Mapping
from typing import Any

import mcp_types
from mcp.client import Client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from openprose.providers.base import ToolCall, ToolSpec
from openprose.vm.tools.mcp_config import McpConfigError, McpServer
from openprose.vm.tools.mcp_grants import grant_parts
from openprose.vm.tools.mcp_stdio import StderrTail, sandboxed_stdio
from openprose.vm.tools.mounts import FolderRefused
from openprose.vm.tools.registry import ToolFailed, ToolRow
from openprose.vm.tools.sandbox import SandboxUnavailable
from openprose.vm.tools.toolbox import Toolbox

__all__ = ["TOOL_PREFIX", "McpFailure", "mcp_tool_rows", "tool_name"]

TOOL_PREFIX = "mcp__"  # mcp__SERVER__TOOL, the name the model calls
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_SERVER_GONE = {mcp_types.CONNECTION_CLOSED, mcp_types.REQUEST_TIMEOUT}


class McpFailure(Exception):
    """A server missing, crashed or timed out: the session cannot go on."""


def tool_name(server: str, tool: str) -> str:
    """The name the model calls a server's tool by (what provider APIs accept)."""
    return f"{TOOL_PREFIX}{server}__{_UNSAFE.sub('_', tool)}"[:64]


@contextlib.asynccontextmanager
async def mcp_tool_rows(
    servers: Mapping[str, McpServer], toolbox: Toolbox
) -> AsyncIterator[list[ToolRow]]:
    """The rows of every MCP tool the agent's `mcp:` permission grants, its servers running
    until the context ends. Raises McpFailure."""
    rule = toolbox.permissions.mcp
    if rule.mode is None:
        unknown = [g for g in rule.grants if grant_parts(g)[0] not in servers]
        if unknown:
            declared = ", ".join(sorted(servers)) or "none"
            raise McpFailure(
                f"agent {toolbox.agent!r} is granted MCP tools of {unknown[0]!r}, a server "
                f"prose.toml does not declare ([mcp.servers.NAME]; declared: {declared})"
            )
    try:
        async with contextlib.AsyncExitStack() as stack:
            rows: list[ToolRow] = []
            for name in rule.servers(list(servers)):
                server = servers[name]
                client, tail = await _connect(stack, server, toolbox)
                tools = await _listed(client, server, tail)
                grants = rule.grants if rule.mode is None else ()
                _check_granted(name, [t.name for t in tools], grants)
                granted = [tool for tool in tools if rule.judge(name, tool.name) != "deny"]
                rows += [_row(client, server, tool, tail, toolbox) for tool in granted]
            yield rows
    except BaseExceptionGroup as group:
        # The SDK's task groups wrap what the session raised (an approval to wait for, a
        # server gone): the one exception inside is what happened.
        raise _single(group) from None


def _single(group: BaseExceptionGroup[BaseException]) -> BaseException:
    inner: BaseException = group
    while isinstance(inner, BaseExceptionGroup) and len(inner.exceptions) == 1:
        inner = inner.exceptions[0]
    return inner


def _check_granted(server: str, tools: list[str], grants: tuple[str, ...]) -> None:
    for grant in grants:
        name, pattern = grant_parts(grant)
        if name == server and "*" not in pattern and pattern not in tools:
            raise McpFailure(
                f"the MCP server {server!r} has no tool {pattern!r} (granted as {grant!r}); "
                f"its tools: {', '.join(sorted(tools)) or 'none'}"
            )


async def _connect(
    stack: contextlib.AsyncExitStack, server: McpServer, toolbox: Toolbox
) -> tuple[Client, StderrTail]:
    tail = StderrTail()
    try:
        if server.url is not None:
            http = create_mcp_http_client(headers=server.resolved_headers())
            await stack.enter_async_context(http)
            transport: Any = _http_transport(server.url, http)
        else:
            transport = sandboxed_stdio(server, await toolbox.sandbox(), tail)
        client = Client(transport, read_timeout_seconds=server.startup_timeout, cache=None)
        await stack.enter_async_context(client)
    except (McpConfigError, SandboxUnavailable, FolderRefused) as exc:
        raise McpFailure(f"the MCP server {server.name!r} was not started: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - whatever the transport raised: said in one line
        raise McpFailure(_gone(server, "could not be reached", exc, tail)) from None
    return client, tail


def _http_transport(url: str, http: Any) -> Any:
    from mcp.client.streamable_http import streamable_http_client

    return streamable_http_client(url, http_client=http)


async def _listed(client: Client, server: McpServer, tail: StderrTail) -> list[mcp_types.Tool]:
    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    try:
        while True:
            page = await client.list_tools(cursor=cursor)
            tools += page.tools
            cursor = page.next_cursor
            if not cursor:
                return tools
    except Exception as exc:  # noqa: BLE001
        raise McpFailure(_gone(server, "did not list its tools", exc, tail)) from None


def _row(
    client: Client, server: McpServer, tool: mcp_types.Tool, tail: StderrTail, toolbox: Toolbox
) -> ToolRow:
    action = f"{server.name}.{tool.name}"
    read_only = bool(tool.annotations and tool.annotations.read_only_hint)

    async def handler(call: ToolCall, call_key: str) -> str:
        mode = toolbox.permissions.mcp.judge(server.name, tool.name)
        await toolbox.gate(call, call_key, "mcp", mode, action, changes=not read_only)
        try:
            result = await client.call_tool(
                tool.name, dict(call.arguments), read_timeout_seconds=server.timeout
            )
        except MCPError as exc:
            if exc.code in _SERVER_GONE:
                raise McpFailure(_gone(server, f"failed during {tool.name}", exc, tail)) from None
            raise ToolFailed(f"{action} failed: {exc.message}") from None
        except Exception as exc:  # noqa: BLE001 - a broken connection, a bad answer
            raise McpFailure(_gone(server, f"failed during {tool.name}", exc, tail)) from None
        text = _result_text(result)
        if result.is_error:
            raise ToolFailed(text or f"{action} failed")
        return text

    description = f"[MCP {action}]\n{tool.description or tool.title or tool.name}"
    schema = dict(tool.input_schema) if tool.input_schema else {"type": "object"}
    spec = ToolSpec(tool_name(server.name, tool.name), description, schema)
    return ToolRow(spec, "mcp", handler, mutating=not read_only)


def _result_text(result: mcp_types.CallToolResult) -> str:
    """What the model reads of a tool's result: its text, what else it holds named."""
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            parts.append(block.text)
        elif isinstance(block, mcp_types.EmbeddedResource):
            resource = block.resource
            text = getattr(resource, "text", None)
            parts.append(text if text is not None else f"[resource {resource.uri}]")
        elif isinstance(block, mcp_types.ResourceLink):
            parts.append(f"[resource link {block.uri}]")
        else:
            mime = getattr(block, "mime_type", "")
            parts.append(f"[{block.type} {mime}: not shown]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)


def _gone(server: McpServer, what: str, exc: BaseException, tail: StderrTail) -> str:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    reason = str(exc) or type(exc).__name__
    kind = f"stdio server `{server.command}`" if server.command else f"server at {server.url}"
    said = tail.text.strip().splitlines()[-3:]
    told = f"; it said: {' | '.join(said)}" if said else ""
    return f"the MCP server {server.name!r} ({kind}) {what}: {reason}{told}"
